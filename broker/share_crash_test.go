package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// TestKillBrokerShareGroupRedeliversAcquired: a member acquires 100
// records and accepts the first 40; the broker is killed with SIGKILL and
// restarted on the same data directory. A new member then gets exactly the
// 60 records that were acquired but not accepted, each with delivery count
// 2 (the count of the delivery before the crash survived), and none of
// the accepted ones.
func TestKillBrokerShareGroupRedeliversAcquired(t *testing.T) {
	t.Parallel()
	const total, accepted = 100, 40
	dir, listen := t.TempDir(), testutil.FreeAddr(t)
	first := startChildBroker(t, listen, dir)
	ctx := testContext(t, 60*time.Second)
	client, err := kgo.NewClient(kgo.SeedBrokers(first.addr), kgo.DefaultProduceTopic("share-kill"), kgo.RequestRetries(20))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	createTopic(t, client, "share-kill", 1, nil)
	topicID := topicIDOf(t, client, "share-kill")

	member := "member-before-the-crash"
	shareHeartbeat(t, ctx, client, "sg-kill", member, "share-kill")
	// Open the session first: the share-partition starts at the log end
	// (share.auto.offset.reset latest), before anything is produced.
	fetch := shareFetchRequest("sg-kill", member, 0, topicID)
	fetch.MaxWaitMillis = 0
	if _, err := fetch.RequestWith(ctx, client); err != nil {
		t.Fatal(err)
	}
	for i := range total {
		client.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), nil)
	}
	if err := client.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fetch = shareFetchRequest("sg-kill", member, 1, topicID)
	resp, err := fetch.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	got := acquiredOffsets(t, resp)
	if len(got) != total || got[0] != 1 || got[total-1] != 1 {
		t.Fatalf("acquired %d records (delivery counts %v…), want %d at count 1", len(got), got[0], total)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr("sg-kill"), kmsg.StringPtr(member), 2
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = topicID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	batch := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	batch.FirstOffset, batch.LastOffset, batch.AcknowledgeTypes = 0, accepted-1, []int8{1}
	ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, batch)
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	ackResp, err := ack.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(ackResp.ErrorCode); err != nil {
		t.Fatalf("acknowledge: %v", err)
	}
	if err := kerr.ErrorForCode(ackResp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("acknowledge partition: %v", err)
	}

	first.kill(t)
	second := startChildBroker(t, listen, dir)
	consumer, err := kgo.NewClient(kgo.SeedBrokers(second.addr), kgo.ShareGroup("sg-kill"), kgo.ConsumeTopics("share-kill"))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	counts := map[int64]int32{}
	deadline := time.Now().Add(30 * time.Second)
	for len(counts) < total-accepted && time.Now().Before(deadline) {
		pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fetches := consumer.PollFetches(pollCtx)
		cancel()
		for r := range fetches.RecordsAll() {
			if _, dup := counts[r.Offset]; dup {
				t.Errorf("offset %d delivered twice after the restart", r.Offset)
			}
			counts[r.Offset] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		}
	}
	if len(counts) != total-accepted {
		t.Fatalf("after the restart %d records came back, want the %d acquired and not accepted", len(counts), total-accepted)
	}
	for offset, count := range counts {
		if offset < accepted {
			t.Errorf("offset %d was accepted before the crash and came back", offset)
		}
		if count != 2 {
			t.Errorf("offset %d came back with delivery count %d, want 2", offset, count)
		}
	}
}

// shareHeartbeat joins member to a share group subscribed to topic.
func shareHeartbeat(t *testing.T, ctx context.Context, client *kgo.Client, groupID, member, topic string) {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = groupID, member, 0, []string{topic}
	resp, err := req.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("share heartbeat: %v", err)
	}
}

// shareFetchRequest is a ShareFetch of partition 0 of topicID.
func shareFetchRequest(groupID, member string, epoch int32, topicID [16]byte) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(groupID), kmsg.StringPtr(member), epoch
	req.MaxWaitMillis, req.MaxRecords, req.MaxBytes = 2000, 1000, 1<<20
	topic := kmsg.NewShareFetchRequestTopic()
	topic.TopicID = topicID
	topic.Partitions = append(topic.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	req.Topics = append(req.Topics, topic)
	return req
}

// acquiredOffsets lists the delivery count of every acquired offset, in
// offset order.
func acquiredOffsets(t *testing.T, resp *kmsg.ShareFetchResponse) []int16 {
	t.Helper()
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("share fetch: %v", err)
	}
	var counts []int16
	for _, topic := range resp.Topics {
		for _, p := range topic.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("share fetch partition %d: %v", p.Partition, err)
			}
			for _, a := range p.AcquiredRecords {
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					counts = append(counts, a.DeliveryCount)
				}
			}
		}
	}
	return counts
}
