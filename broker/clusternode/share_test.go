package clusternode

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/quorum"
)

// TestShareGroupStateMovesWithLeadership: on a 3-broker cluster a member
// acquires 100 records from the partition's leader and accepts the first
// 40; the leader is stopped. The new leader reads the share-partition's
// state from the group's coordinator (wherever it is now): a new member
// gets exactly the other 60 records, each with delivery count 2, and none
// of the accepted ones.
func TestShareGroupStateMovesWithLeadership(t *testing.T) {
	t.Parallel()
	const total, accepted = 100, 40
	c := newTestCluster(t, 3, clusterProps)
	c.waitMetadata(3, "", 0)
	cl, _ := c.client(kgo.DefaultProduceTopic("sq"), kgo.RequestRetries(30), kgo.RequiredAcks(kgo.AllISRAcks()))
	createTopic(t, cl, "sq", 1, 3)
	c.waitMetadata(3, "sq", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	img := c.waitImage("sq led", func(img *quorum.Image) bool { p, ok := partitionOf(img, "sq"); return ok && p.Leader > 0 })
	p, _ := partitionOf(img, "sq")
	leader := p.Leader
	topic, _ := img.Topic("sq")
	topicID := topic.ID

	set := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg-move"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	set.Resources = append(set.Resources, res)
	if resp, err := set.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("set share.auto.offset.reset: %v %+v", err, resp)
	}
	for i := range total {
		cl.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	member := "member-before-the-move"
	heartbeat := kmsg.NewPtrShareGroupHeartbeatRequest()
	heartbeat.GroupID, heartbeat.MemberID, heartbeat.SubscribedTopicNames = "sg-move", member, []string{"sq"}
	// Join at the group's coordinator, looked up again while it is
	// loading or moving (NOT_COORDINATOR), as a client does.
	var answer kmsg.Response
	var err error
	for {
		find := kmsg.NewPtrFindCoordinatorRequest()
		find.CoordinatorKeys = []string{"sg-move"}
		found, ferr := find.RequestWith(ctx, cl)
		if ferr == nil && len(found.Coordinators) == 1 && found.Coordinators[0].ErrorCode == 0 {
			answer, err = cl.Broker(int(found.Coordinators[0].NodeID)).Request(ctx, heartbeat)
			if err == nil && answer.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode == 0 {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("share heartbeat: %v %v %+v", ferr, err, answer)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fetch := kmsg.NewPtrShareFetchRequest()
	fetch.Version = 2
	fetch.GroupID, fetch.MemberID = kmsg.StringPtr("sg-move"), kmsg.StringPtr(member)
	fetch.MaxWaitMillis, fetch.MaxRecords, fetch.MaxBytes = 2000, 1000, 1<<20
	ft := kmsg.NewShareFetchRequestTopic()
	ft.TopicID = topicID
	ft.Partitions = append(ft.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	answer, err = cl.Broker(int(leader)).Request(ctx, fetch)
	if err != nil {
		t.Fatal(err)
	}
	resp := answer.(*kmsg.ShareFetchResponse)
	got := 0
	for _, topic := range resp.Topics {
		for _, rp := range topic.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("share fetch: %v", kerr.ErrorForCode(rp.ErrorCode))
			}
			for _, a := range rp.AcquiredRecords {
				got += int(a.LastOffset - a.FirstOffset + 1)
			}
		}
	}
	if resp.ErrorCode != 0 || got != total {
		t.Fatalf("acquired %d records (error %v), want %d", got, kerr.ErrorForCode(resp.ErrorCode), total)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 2
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr("sg-move"), kmsg.StringPtr(member), 1
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = topicID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	batch := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	batch.FirstOffset, batch.LastOffset, batch.AcknowledgeTypes = 0, accepted-1, []int8{1}
	ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, batch)
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	answer, err = cl.Broker(int(leader)).Request(ctx, ack)
	if err != nil {
		t.Fatal(err)
	}
	if ackResp := answer.(*kmsg.ShareAcknowledgeResponse); ackResp.ErrorCode != 0 || ackResp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %+v", ackResp)
	}

	c.stop(leader)
	c.waitImage("sq led by another broker", func(img *quorum.Image) bool {
		p, ok := partitionOf(img, "sq")
		return ok && p.Leader > 0 && p.Leader != leader
	})
	consumer, _ := c.client(kgo.ShareGroup("sg-move"), kgo.ConsumeTopics("sq"))
	counts := map[int64]int32{}
	for len(counts) < total-accepted && ctx.Err() == nil {
		pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fetches := consumer.PollFetches(pollCtx)
		cancel()
		for r := range fetches.RecordsAll() {
			if _, dup := counts[r.Offset]; dup {
				t.Errorf("offset %d delivered twice after the move", r.Offset)
			}
			counts[r.Offset] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		}
	}
	if len(counts) != total-accepted {
		t.Fatalf("after the move %d records came back, want the %d acquired and not accepted", len(counts), total-accepted)
	}
	for offset, count := range counts {
		if offset < accepted {
			t.Errorf("offset %d was accepted before the move and came back", offset)
		}
		if count != 2 {
			t.Errorf("offset %d came back with delivery count %d, want 2", offset, count)
		}
	}
}
