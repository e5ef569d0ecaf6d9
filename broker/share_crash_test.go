package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/sharetest"
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
	openShareSession(t, ctx, client, "sg-kill", member, topicID)
	produceCounting(t, ctx, client, total)
	fetch := sharetest.FetchRequest("sg-kill", member, 1, topicID)
	resp, err := fetch.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	got := sharetest.AcquiredCounts(t, resp)
	if len(got) != total || got[0] != 1 || got[total-1] != 1 {
		t.Fatalf("acquired %d records (delivery counts %v…), want %d at count 1", len(got), got[0], total)
	}
	ackResp, err := sharetest.AcceptRequest("sg-kill", member, 2, topicID, 0, accepted-1).RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	sharetest.CheckAcknowledged(t, ackResp)

	first.kill(t)
	second := startChildBroker(t, listen, dir)
	consumer, err := kgo.NewClient(kgo.SeedBrokers(second.addr), kgo.ShareGroup("sg-kill"), kgo.ConsumeTopics("share-kill"))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	sharetest.CheckRedelivered(ctx, t, consumer, total, accepted, "restart")
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

// openShareSession opens member's share session on partition 0 of topicID
// with a ShareFetch at epoch 0 that does not wait (nothing is produced
// yet, so it acquires nothing; the share-partition starts at the log end).
func openShareSession(t *testing.T, ctx context.Context, client *kgo.Client, group, member string, topicID [16]byte) {
	t.Helper()
	open := sharetest.FetchRequest(group, member, 0, topicID)
	open.MaxWaitMillis = 0
	if _, err := open.RequestWith(ctx, client); err != nil {
		t.Fatal(err)
	}
}

// produceCounting produces the records "0".."n-1" to client's default
// topic and waits for them.
func produceCounting(t *testing.T, ctx context.Context, client *kgo.Client, n int) {
	t.Helper()
	for i := range n {
		client.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), nil)
	}
	if err := client.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}
