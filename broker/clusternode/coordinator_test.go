package clusternode

import (
	"context"
	"fmt"
	"maps"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/quorum"
)

// coordinatorProps are clusterProps with a small __consumer_offsets and
// __transaction_state (5 partitions each, so loads are quick) and no
// initial rebalance delay.
func coordinatorProps() map[string]string {
	props := maps.Clone(clusterProps)
	props["offsets.topic.num.partitions"] = "5"
	props["transaction.state.log.num.partitions"] = "5"
	props["group.initial.rebalance.delay.ms"] = "0"
	return props
}

// findCoordinator asks the broker at addr for the coordinator of key
// (keyType 0: group, 1: transactional id) until it answers one, bounded.
func findCoordinator(t *testing.T, addr string, keyType int8, key string) int32 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey = keyType, key
		req.CoordinatorKeys = []string{key} // v4+ (kgo sends the newest version)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32))
		cancel()
		if err == nil && len(resp.Coordinators) == 1 {
			resp.ErrorCode, resp.NodeID = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		if err == nil && resp.ErrorCode == 0 {
			return resp.NodeID
		}
		if time.Now().After(deadline) {
			code := int16(-1)
			if resp != nil {
				code = resp.ErrorCode
			}
			t.Fatalf("FindCoordinator %q at %s: %v %v", key, addr, err, kerr.ErrorForCode(code))
		}
		time.Sleep(100 * time.Millisecond) // retry interval of a bounded wait
	}
}

// waitCoordinatorMoved waits until the broker at addr names a coordinator
// of key other than old (whose member was closed), bounded.
func waitCoordinatorMoved(t *testing.T, addr string, keyType int8, key string, old int32) int32 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if id := findCoordinator(t, addr, keyType, key); id != old {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still names the closed member %d the coordinator of %q", addr, old, key)
		}
		time.Sleep(100 * time.Millisecond) // poll interval of a bounded condition wait
	}
}

// committedOffsets returns the group's committed offsets of topic by
// partition, asking the group's coordinator through a new client (a
// client's cached coordinator may be a closed member: kgo keeps dialing
// it).
func committedOffsets(t *testing.T, seeds []string, groupID, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = groupID // Topics nil: every committed offset of the group
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode == 0 && (len(resp.Groups) == 0 || resp.Groups[0].ErrorCode == 0) {
			out := map[int32]int64{}
			add := func(name string, partition int32, code int16, offset int64) {
				if name == topic && code == 0 && offset >= 0 {
					out[partition] = offset
				}
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					add(t.Topic, p.Partition, p.ErrorCode, p.Offset)
				}
			}
			for _, g := range resp.Groups { // v8+: kgo batches groups
				for _, t := range g.Topics {
					for _, p := range t.Partitions {
						add(t.Topic, p.Partition, p.ErrorCode, p.Offset)
					}
				}
			}
			return out
		}
		if ctx.Err() != nil {
			t.Fatalf("OffsetFetch %s: %v %+v", groupID, err, resp)
		}
		time.Sleep(100 * time.Millisecond) // retry interval of a bounded wait
	}
}

// offsetFetchCode sends OffsetFetch of the group to the broker at addr
// itself and returns the group's error code.
func offsetFetchCode(t *testing.T, addr, groupID string) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = groupID
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = groupID
	req.Groups = append(req.Groups, g)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32))
	if err != nil {
		t.Fatalf("OffsetFetch at %s: %v", addr, err)
	}
	if len(resp.Groups) == 1 {
		return resp.Groups[0].ErrorCode
	}
	return resp.ErrorCode
}

// groupConsumer is one member of a test group: it polls, records every
// value, commits what it processed before the next poll and allows a
// rebalance only between polls (BlockRebalanceOnPoll), so each record is
// processed once across the group as long as commits succeed.
type groupConsumer struct {
	cl   *kgo.Client
	done chan struct{}
}

func startGroupConsumer(t *testing.T, ctx context.Context, seeds []string, groupID, topic string, record func(string)) *groupConsumer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryTimeout(40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	gc := &groupConsumer{cl: cl, done: make(chan struct{})}
	go func() {
		defer close(gc.done)
		for ctx.Err() == nil {
			fetches := cl.PollFetches(ctx)
			fetches.EachRecord(func(r *kgo.Record) { record(string(r.Value)) })
			// A commit that fails while the coordinator moves (kgo answers
			// a dial error for the closed one) is retried, bounded, before
			// a rebalance may move the partitions.
			deadline := time.Now().Add(30 * time.Second)
			for {
				err := cl.CommitUncommittedOffsets(ctx)
				if err == nil || ctx.Err() != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("commit: %v", err)
					break
				}
				t.Logf("commit failed, retrying: %v", err)
				time.Sleep(100 * time.Millisecond) // retry interval of a bounded wait
			}
			cl.AllowRebalance()
		}
	}()
	return gc
}

func (gc *groupConsumer) close() {
	<-gc.done
	gc.cl.Close()
}

// TestConsumerGroupSurvivesCoordinatorMove: two group members consume an
// RF-3 topic of 6 partitions on 3 brokers, committing after every poll.
// Once the first half of the records is consumed and committed, the member
// leading the group's __consumer_offsets partition is closed: that
// partition's leadership moves, the new leader loads the group's offsets
// from the replicated log, the consumers find it and go on. Every record
// is consumed exactly once and the offsets committed before the move are
// still there after it.
func TestConsumerGroupSurvivesCoordinatorMove(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, coordinatorProps())
	c.waitMetadata(3, "", 0)
	seeds := c.bootstrap()
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("in"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(40*time.Second), kgo.RetryTimeout(40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	createTopic(t, producer, "in", 6, 3)
	c.waitImage("in with full ISRs", func(img *quorum.Image) bool { return fullISR(img, "in") })
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r := &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%06d", i))}
			if err := producer.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	const half = 300
	produce(0, half)

	var mu sync.Mutex
	seen := map[string]int{}
	consumed := make(chan struct{}, 4*half)
	record := func(v string) {
		mu.Lock()
		seen[v]++
		mu.Unlock()
		consumed <- struct{}{}
	}
	waitConsumed := func(n int) {
		t.Helper()
		timeout := time.After(60 * time.Second)
		for range n {
			select {
			case <-consumed:
			case <-timeout:
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("consumed %d distinct records, waiting for %d more", len(seen), n)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	members := []*groupConsumer{
		startGroupConsumer(t, ctx, seeds, "g", "in", record),
		startGroupConsumer(t, ctx, seeds, "g", "in", record),
	}
	defer func() {
		cancel()
		for _, m := range members {
			m.close()
		}
	}()
	waitConsumed(half)

	// Every poll's records are committed before the next poll; wait until
	// the committed offsets cover the first half.
	var before map[int32]int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		before = committedOffsets(t, seeds, "g", "in")
		total := int64(0)
		for _, offset := range before {
			total += offset
		}
		if total == half {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets %v sum to %d, want %d", before, total, half)
		}
		time.Sleep(100 * time.Millisecond) // poll interval of a bounded condition wait
	}
	coordinator := findCoordinator(t, seeds[0], 0, "g")
	for id, m := range c.members {
		if code := offsetFetchCode(t, m.Addr(), "g"); (id == coordinator) != (code == 0) || id != coordinator && code != kerr.NotCoordinator.Code {
			t.Errorf("OffsetFetch of g at member %d (coordinator %d): %v", id, coordinator, kerr.ErrorForCode(code))
		}
	}
	t.Logf("closing member %d, the coordinator of group g; committed %v", coordinator, before)
	c.stop(coordinator)
	var alive string
	for id, m := range c.members {
		if id != coordinator {
			alive = m.Addr()
		}
	}
	moved := waitCoordinatorMoved(t, alive, 0, "g", coordinator)
	t.Logf("group g moved to member %d", moved)
	after := committedOffsets(t, seeds, "g", "in")
	if !maps.Equal(before, after) {
		t.Errorf("committed offsets before the move %v, after %v", before, after)
	}
	produce(half, 2*half)
	waitConsumed(half)
	mu.Lock()
	defer mu.Unlock()
	for i := range 2 * half {
		if n := seen[fmt.Sprintf("%06d", i)]; n != 1 {
			t.Errorf("record %d consumed %d times", i, n)
		}
	}
	if len(seen) != 2*half {
		t.Errorf("consumed %d distinct records, want %d", len(seen), 2*half)
	}
}
