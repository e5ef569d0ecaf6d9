package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/sharetest"
)

// TestShareFetchAfterSessionEndAcquiresNothing: a member's ShareFetch is
// waiting for records when its session is closed from another connection
// (ShareAcknowledge at epoch -1, as a client leaving does). Records then
// produced must not be acquired by that orphaned fetch: nobody reads its
// answer, and the records would stay locked (here for a minute) and have
// their delivery counted. Another member gets them at once, at delivery
// count 1.
func TestShareFetchAfterSessionEndAcquiresNothing(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"group.share.record.lock.duration.ms": "60000"})
	admin := newTestClient(t, b, kgo.DefaultProduceTopic("share-orphan"))
	closer := newTestClient(t, b)
	createTopic(t, admin, "share-orphan", 1, nil)
	ctx := testContext(t, 30*time.Second)
	topicID := topicIDOf(t, admin, "share-orphan")

	openShareSession(t, ctx, admin, "sg-orphan", "member-a", topicID)
	orphaned := make(chan *kmsg.ShareFetchResponse, 1)
	go func() {
		wait := sharetest.FetchRequest("sg-orphan", "member-a", 1, topicID)
		wait.MaxWaitMillis = 5000
		resp, err := wait.RequestWith(ctx, admin)
		if err != nil {
			t.Error(err)
		}
		orphaned <- resp
	}()
	// The waiting fetch moved the session to epoch 2: it is past its
	// session check and waiting (or about to).
	key := shareSessionKey{group: "sg-orphan", member: "member-a"}
	for {
		b.shares.mu.Lock()
		session := b.shares.sessions[key]
		advanced := session != nil && session.epoch == 2
		b.shares.mu.Unlock()
		if advanced {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the waiting fetch never reached the broker")
		}
		time.Sleep(time.Millisecond)
	}
	end := kmsg.NewPtrShareAcknowledgeRequest()
	end.Version = 2
	end.GroupID, end.MemberID, end.ShareSessionEpoch = kmsg.StringPtr("sg-orphan"), kmsg.StringPtr("member-a"), -1
	if _, err := end.RequestWith(ctx, closer); err != nil {
		t.Fatal(err)
	}
	produceCounting(t, ctx, admin, 10)
	var resp *kmsg.ShareFetchResponse
	select {
	case resp = <-orphaned:
	case <-ctx.Done():
		t.Fatal("the orphaned fetch never answered")
	}
	if resp != nil {
		var acquired int
		for _, topic := range resp.Topics {
			for _, p := range topic.Partitions {
				for _, a := range p.AcquiredRecords {
					acquired += int(a.LastOffset - a.FirstOffset + 1)
				}
			}
		}
		if acquired != 0 {
			t.Fatalf("the fetch of the closed session acquired %d records", acquired)
		}
	}
	other := sharetest.FetchRequest("sg-orphan", "member-b", 0, topicID)
	other.MaxWaitMillis = 3000
	got, err := other.RequestWith(ctx, closer)
	if err != nil {
		t.Fatal(err)
	}
	counts := sharetest.AcquiredCounts(t, got)
	if len(counts) != 10 || counts[0] != 1 || counts[9] != 1 {
		t.Fatalf("another member acquired %v, want the 10 records at delivery count 1", counts)
	}
}

// TestShareSessionEndGivesBackUncounted: a member acquires 10 records and
// its connection ends (a crashed consumer). As in Kafka, the records come
// back at the delivery count they had before that acquisition (the broker
// cannot know they reached the application), so a crash loop cannot
// archive them; the redelivered metric still counts them.
func TestShareSessionEndGivesBackUncounted(t *testing.T) {
	t.Parallel()
	b, m := startMetricsBroker(t, nil)
	admin := newTestClient(t, b, kgo.DefaultProduceTopic("share-end"))
	createTopic(t, admin, "share-end", 1, nil)
	ctx := testContext(t, 30*time.Second)
	topicID := topicIDOf(t, admin, "share-end")
	crashing := newTestClient(t, b)

	openShareSession(t, ctx, crashing, "sg-end", "member-a", topicID)
	produceCounting(t, ctx, admin, 10)
	resp, err := sharetest.FetchRequest("sg-end", "member-a", 1, topicID).RequestWith(ctx, crashing)
	if err != nil {
		t.Fatal(err)
	}
	if counts := sharetest.AcquiredCounts(t, resp); len(counts) != 10 || counts[0] != 1 {
		t.Fatalf("member-a acquired %v, want 10 records at count 1", counts)
	}
	crashing.Close() // its connections end: the session ends with them

	other := sharetest.FetchRequest("sg-end", "member-b", 0, topicID)
	other.MaxWaitMillis = 5000
	got, err := other.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if counts := sharetest.AcquiredCounts(t, got); len(counts) != 10 || counts[0] != 1 || counts[9] != 1 {
		t.Fatalf("after member-a's connection ended member-b acquired %v, want the 10 records at count 1", counts)
	}
	if got := mustMetric(t, m, "exactly_share_records_total", map[string]string{"event": "redelivered"}); got != 10 {
		t.Errorf("redelivered metric %v, want 10", got)
	}
}
