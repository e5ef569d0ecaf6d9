package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// TestReplicationCompactedReplicas: in a replicated compacted topic each
// replica cleans its own log (up to its last stable offset, never past
// the high watermark) and ends with the same records at the same offsets
// as the leader.
func TestReplicationCompactedReplicas(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 2, map[string]string{"log.cleanup.policy": "compact", "log.segment.bytes": "1024",
		"log.cleaner.backoff.ms": "20", "log.cleaner.delete.retention.ms": "0", "log.cleaner.min.cleanable.ratio": "0.01"})
	c.createTopic("compacted-replicas", 1)
	role := c.role("compacted-replicas", 0)
	r := dialRaw(t, c.broker(role.Leader))
	for i := range 100 {
		batch := keyedIdempotentBatch(t, -1, 0, fmt.Sprintf("k%d", i%5), fmt.Sprint("v", i))
		mustProduce(t, "keyed write", r.produceAcks("compacted-replicas", 0, batch, -1), int64(i))
	}
	c.waitCaughtUp("compacted-replicas", 0)
	var logs [][]logRecord
	for _, id := range role.Replicas {
		p := c.localPartition(id, "compacted-replicas", 0)
		testutil.Until(t, 10*time.Second, fmt.Sprintf("replica %d to learn the high watermark", id), func() bool {
			return p.LastStableOffset() == p.Log().LogEndOffset()
		})
		sealAndWaitCleaned(t, c.broker(id), p.Log(), p.LastStableOffset)
		records, _ := logRecords(t, p.Log())
		logs = append(logs, records)
	}
	var want []logRecord
	for i := 95; i < 100; i++ {
		value := fmt.Sprint("v", i)
		want = append(want, logRecord{offset: int64(i), key: fmt.Sprintf("k%d", i%5), value: &value})
	}
	for i, records := range logs {
		if !sameRecords(records, want) {
			t.Fatalf("replica %d after cleaning: %+v, want the latest of each key %+v", role.Replicas[i], records, want)
		}
	}
}

// TestReplicationFollowerCatchesUpOverGaps: a follower that was down
// while the leader cleaned away offsets it never had fetches from its log
// end, inside a gap; it takes the leader's next batch at the leader's
// offsets and rejoins the ISR with the leader's records.
func TestReplicationFollowerCatchesUpOverGaps(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 2, map[string]string{"log.cleanup.policy": "compact", "log.segment.bytes": "1024",
		"log.cleaner.backoff.ms": "20", "log.cleaner.delete.retention.ms": "0", "log.cleaner.min.cleanable.ratio": "0.01",
		"replica.lag.time.max.ms": "300"})
	c.createTopic("compacted-gaps", 1)
	role := c.role("compacted-gaps", 0)
	follower := otherISRMember(role)
	r := dialRaw(t, c.broker(role.Leader))
	write := func(i int) {
		batch := keyedIdempotentBatch(t, -1, 0, fmt.Sprintf("k%d", i%5), fmt.Sprint("v", i))
		mustProduce(t, "keyed write", r.produceAcks("compacted-gaps", 0, batch, -1), int64(i))
	}
	for i := range 10 {
		write(i)
	}
	c.waitCaughtUp("compacted-gaps", 0)
	if err := c.broker(follower).Close(); err != nil { // the controller is not told
		t.Fatal(err)
	}
	testutil.Until(t, 10*time.Second, "the follower out of the ISR", func() bool {
		return !slices.Contains(c.role("compacted-gaps", 0).ISR, follower)
	})
	for i := 10; i < 100; i++ {
		write(i)
	}
	leader := c.localPartition(role.Leader, "compacted-gaps", 0)
	sealAndWaitCleaned(t, c.broker(role.Leader), leader.Log(), leader.LastStableOffset)
	c.mu.Lock()
	delete(c.brokers, follower)
	c.mu.Unlock()
	c.restart(follower)
	testutil.Until(t, 20*time.Second, "the follower back in the ISR", func() bool {
		return slices.Contains(c.role("compacted-gaps", 0).ISR, follower)
	})
	c.waitCaughtUp("compacted-gaps", 0)
	leaderRecords, _ := logRecords(t, leader.Log())
	replica := c.localPartition(follower, "compacted-gaps", 0)
	followerRecords, _ := logRecords(t, replica.Log())
	fetched := slices.DeleteFunc(slices.Clone(followerRecords), func(r logRecord) bool { return r.offset < 10 })
	if !sameRecords(fetched, leaderRecords) {
		t.Fatalf("follower's records fetched over the gaps %+v, the leader's %+v", fetched, leaderRecords)
	}
	// The follower cleans its own older records too, and a restart
	// (recovery over the gaps) keeps its log as it is.
	testutil.Until(t, 10*time.Second, "the follower to learn the high watermark", func() bool {
		return replica.LastStableOffset() == replica.Log().LogEndOffset()
	})
	sealAndWaitCleaned(t, c.broker(follower), replica.Log(), replica.LastStableOffset)
	c.kill(follower)
	c.restart(follower)
	replica = c.localPartition(follower, "compacted-gaps", 0)
	if followerRecords, _ = logRecords(t, replica.Log()); !sameRecords(followerRecords, leaderRecords) {
		t.Fatalf("follower after its own clean and a restart %+v, the leader's %+v", followerRecords, leaderRecords)
	}
}

// sameRecords compares records by offset, key and value.
func sameRecords(a, b []logRecord) bool {
	return slices.EqualFunc(a, b, func(x, y logRecord) bool {
		return x.offset == y.offset && x.key == y.key && (x.value == nil) == (y.value == nil) && (x.value == nil || *x.value == *y.value)
	})
}
