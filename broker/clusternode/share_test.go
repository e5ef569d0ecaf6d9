package clusternode

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/internal/sharetest"
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
	answer, err = cl.Broker(int(leader)).Request(ctx, sharetest.FetchRequest("sg-move", member, 0, topicID))
	if err != nil {
		t.Fatal(err)
	}
	if got := sharetest.AcquiredCounts(t, answer.(*kmsg.ShareFetchResponse)); len(got) != total {
		t.Fatalf("acquired %d records, want %d", len(got), total)
	}
	answer, err = cl.Broker(int(leader)).Request(ctx, sharetest.AcceptRequest("sg-move", member, 1, topicID, 0, accepted-1))
	if err != nil {
		t.Fatal(err)
	}
	sharetest.CheckAcknowledged(t, answer.(*kmsg.ShareAcknowledgeResponse))

	c.stop(leader)
	c.waitImage("sq led by another broker", func(img *quorum.Image) bool {
		p, ok := partitionOf(img, "sq")
		return ok && p.Leader > 0 && p.Leader != leader
	})
	consumer, _ := c.client(kgo.ShareGroup("sg-move"), kgo.ConsumeTopics("sq"))
	sharetest.CheckRedelivered(ctx, t, consumer, total, accepted, "move")
}
