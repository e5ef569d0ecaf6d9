package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/internal/testutil"
	"github.com/exactly-eos/exactly/wire"
)

// Scenario tests of replication on three in-process brokers with
// replication factor 3 and the fake controller (testCluster).

// checkHighWatermark fails the test when a leader's high watermark is
// ahead of the log end of a live ISR member. The high watermark is read
// first: it only rises while the broker leads, and members' log ends only
// rise below it, so the order makes the check sound without locks.
func (c *testCluster) checkHighWatermark(topic string, partition int32) {
	c.t.Helper()
	role := c.role(topic, partition)
	leader := c.broker(role.Leader)
	if leader == nil {
		return
	}
	lp := c.localPartition(role.Leader, topic, partition)
	if lp.Closed() {
		return
	}
	hw := lp.HighWatermark()
	for _, id := range lp.Role().ISR {
		if b := c.broker(id); b != nil {
			if end := c.localPartition(id, topic, partition).Log().LogEndOffset(); end < hw {
				c.t.Fatalf("%s-%d: leader %d's high watermark %d is ahead of ISR member %d's log end %d", topic, partition, role.Leader, hw, id, end)
			}
		}
	}
}

// TestReplicationLeaderKillIdempotent: an idempotent acks=all producer
// writes while the partition's leader is killed; the controller elects a
// follower from the ISR, the client moves to it (NOT_LEADER_OR_FOLLOWER or
// the dead connection), and every acknowledged record is present exactly
// once and in order.
func TestReplicationLeaderKillIdempotent(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	c.createTopic("orders", 1)
	producer := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.RecordRetries(1000),
		kgo.DefaultProduceTopic("orders"))
	ctx := testContext(t, 60*time.Second)
	const total = 600
	var mu sync.Mutex
	var acked []int
	var produceErrs []error
	var wg sync.WaitGroup
	for i := range total {
		wg.Add(1)
		producer.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				produceErrs = append(produceErrs, err)
				return
			}
			acked = append(acked, i)
		})
		if i == total/3 {
			testutil.Until(t, 20*time.Second, "a third acknowledged", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(acked) >= total/4
			})
			c.checkHighWatermark("orders", 0)
			c.kill(c.role("orders", 0).Leader)
		}
		if i%50 == 0 {
			c.checkHighWatermark("orders", 0)
		}
	}
	wg.Wait()
	if len(produceErrs) > 0 {
		t.Fatalf("%d produce errors, first: %v", len(produceErrs), produceErrs[0])
	}
	role := c.role("orders", 0)
	if role.LeaderEpoch != 1 || role.Leader < 0 {
		t.Fatalf("role after the kill: %+v", role)
	}
	c.waitCaughtUp("orders", 0)
	c.checkHighWatermark("orders", 0)
	consumer := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	var values []int
	for len(values) < total && ctx.Err() == nil {
		fetches := consumer.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			n, _ := strconv.Atoi(string(r.Value))
			values = append(values, n)
		})
	}
	// One producer, retries and order kept by idempotence: the log holds
	// 0..total-1, each once, in order; every acknowledged one among them.
	for i, v := range values {
		if v != i {
			t.Fatalf("record %d of the log is %d (log %v...)", i, v, values[:min(len(values), i+5)])
		}
	}
	if len(values) != total {
		t.Fatalf("log has %d records, want %d", len(values), total)
	}
	if len(acked) != total {
		t.Fatalf("%d acknowledged, want %d", len(acked), total)
	}
}

// TestReplicationRetryDeduplicatedByNewLeader: a batch acknowledged by
// the old leader and retried (its answer lost) at the new one is
// recognised as a duplicate: same offsets, nothing written.
func TestReplicationRetryDeduplicatedByNewLeader(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	c.createTopic("dedup", 1)
	old := c.role("dedup", 0).Leader
	raw := dialRaw(t, c.broker(old))
	producerID := raw.initProducerID(4)
	first := raw.produceAcks("dedup", 0, idempotentBatch(t, producerID, 0, 0, 5), -1)
	second := raw.produceAcks("dedup", 0, idempotentBatch(t, producerID, 0, 5, 5), -1)
	if first.ErrorCode != 0 || second.ErrorCode != 0 || second.BaseOffset != 5 {
		t.Fatalf("produce to the leader: %+v, %+v", first, second)
	}
	c.kill(old)
	leader := c.role("dedup", 0).Leader
	again := dialRaw(t, c.broker(leader))
	retried := again.produceAcks("dedup", 0, idempotentBatch(t, producerID, 0, 5, 5), -1)
	if retried.ErrorCode != 0 || retried.BaseOffset != 5 {
		t.Fatalf("retry at new leader %d: error %v, base offset %d, want the original 5", leader,
			kerr.ErrorForCode(retried.ErrorCode), retried.BaseOffset)
	}
	if end := c.localPartition(leader, "dedup", 0).Log().LogEndOffset(); end != 10 {
		t.Fatalf("new leader's log end %d after the retry, want 10 (no second copy)", end)
	}
	next := again.produceAcks("dedup", 0, idempotentBatch(t, producerID, 0, 10, 5), -1)
	if next.ErrorCode != 0 || next.BaseOffset != 10 {
		t.Fatalf("next batch at the new leader: error %v, base offset %d", kerr.ErrorForCode(next.ErrorCode), next.BaseOffset)
	}
	// The old leader's connection is gone; a follower refuses produce.
	follower := -1
	for _, id := range c.role("dedup", 0).ISR {
		if id != leader {
			follower = int(id)
		}
	}
	refused := dialRaw(t, c.broker(int32(follower))).produceAcks("dedup", 0, idempotentBatch(t, producerID, 0, 15, 1), -1)
	if !errors.Is(kerr.ErrorForCode(refused.ErrorCode), kerr.NotLeaderForPartition) {
		t.Fatalf("produce to follower %d: %v, want NOT_LEADER_OR_FOLLOWER", follower, kerr.ErrorForCode(refused.ErrorCode))
	}
}

// TestReplicationAbortedTransactionOnNewLeader: a transaction aborted on
// the old leader stays invisible to a read_committed consumer of the new
// one, which rebuilt the aborted index and transaction state from the
// replicated markers.
func TestReplicationAbortedTransactionOnNewLeader(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, txnTestProperties("2"))
	c.createTopic("ledger", 1)
	old := c.role("ledger", 0).Leader
	// The transaction coordinator is the leader of the transactional id's
	// __transaction_state partition, wherever that is; it sends the
	// markers to the partition's leader.
	producer := newTxnProducer(t, c.broker(old).Addr(), "ledger-txn", kgo.DefaultProduceTopic("ledger"))
	ctx := testContext(t, 60*time.Second)
	batch := func(prefix string) []*kgo.Record {
		var records []*kgo.Record
		for i := range 10 {
			records = append(records, &kgo.Record{Topic: "ledger", Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
		}
		return records
	}
	for _, step := range []struct {
		prefix string
		commit bool
	}{{"committed-1", true}, {"aborted", false}, {"committed-2", true}} {
		if err := runTransaction(ctx, producer, batch(step.prefix), step.commit); err != nil {
			t.Fatalf("transaction %s: %v", step.prefix, err)
		}
	}
	c.waitCaughtUp("ledger", 0)
	c.kill(old)
	leader := c.role("ledger", 0).Leader
	lp := c.localPartition(leader, "ledger", 0)
	testutil.Until(t, 20*time.Second, "the new leader's high watermark at its log end", func() bool {
		return lp.HighWatermark() == lp.Log().LogEndOffset()
	})
	if aborted := lp.Log().AbortedTxns(0, lp.Log().LogEndOffset()); len(aborted) != 1 {
		t.Fatalf("new leader's aborted index: %+v, want the one aborted transaction", aborted)
	}
	consumer := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"ledger": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	var values []string
	for len(values) < 20 && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	want := append(recordValues(batch("committed-1")), recordValues(batch("committed-2"))...)
	if !slices.Equal(values, want) {
		t.Fatalf("read_committed at the new leader: %v, want %v", values, want)
	}
}

func recordValues(records []*kgo.Record) []string {
	var out []string
	for _, r := range records {
		out = append(out, string(r.Value))
	}
	return out
}

// plainBatch builds a batch of count records without a producer id,
// valued prefix-0, prefix-1, ...
func plainBatch(t *testing.T, prefix string, count int) []byte {
	t.Helper()
	records := make([]wire.BuilderRecord, count)
	for i := range records {
		records[i] = wire.BuilderRecord{TimestampMillis: 1000 + int64(i), Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
	}
	batch, err := wire.BuildBatch(wire.PlainBatchOptions(), records)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return batch
}

// mustProduce fails the test unless the answer is a success at base.
func mustProduce(t *testing.T, what string, answer kmsg.ProduceResponseTopicPartition, base int64) {
	t.Helper()
	if err := kerr.ErrorForCode(answer.ErrorCode); err != nil || answer.BaseOffset != base {
		t.Fatalf("%s: error %v, base offset %d, want base %d", what, err, answer.BaseOffset, base)
	}
}

// TestReplicationDivergentTailTruncated: a leader cut off from the
// controller keeps taking writes nobody replicates while another replica
// is elected and writes in the next epoch; when the old leader learns it
// follows, it truncates its divergent tail (OffsetForLeaderEpoch), its
// producer state forgets the truncated batch's producer, and it catches
// up with the new leader byte for byte and rejoins the ISR.
func TestReplicationDivergentTailTruncated(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	c.createTopic("diverge", 1)
	old := c.role("diverge", 0).Leader
	raw := dialRaw(t, c.broker(old))
	mustProduce(t, "first batch", raw.produceAcks("diverge", 0, plainBatch(t, "common", 10), -1), 0)
	c.waitCaughtUp("diverge", 0)

	c.mu.Lock()
	c.exclude[old] = true
	role := &c.roles["diverge"][0]
	role.ISR = slices.DeleteFunc(slices.Clone(role.ISR), func(id int32) bool { return id == old })
	role.Leader = role.ISR[0]
	role.LeaderEpoch++
	role.PartitionEpoch++
	next := role.Leader
	c.mu.Unlock()
	c.publish()

	producerID := raw.initProducerID(4)
	mustProduce(t, "divergent batch at the cut-off leader", raw.produceAcks("diverge", 0, idempotentBatch(t, producerID, 0, 0, 3), 1), 10)
	stale := c.localPartition(old, "diverge", 0)
	if producers, _ := stale.DescribeProducers(); len(producers) != 1 {
		t.Fatalf("cut-off leader's producers: %+v", producers)
	}
	mustProduce(t, "new leader's batch", dialRaw(t, c.broker(next)).produceAcks("diverge", 0, plainBatch(t, "epoch-1", 4), -1), 10)

	c.mu.Lock()
	delete(c.exclude, old)
	c.mu.Unlock()
	c.publish()
	c.waitCaughtUp("diverge", 0)
	leaderPartition := c.localPartition(next, "diverge", 0)
	want, err := leaderPartition.Log().ReadBatches(0, 14, 1<<20)
	if err != nil {
		t.Fatalf("read the leader's log: %v", err)
	}
	got, err := stale.Log().ReadBatches(0, 14, 1<<20)
	if err != nil || string(got) != string(want) || stale.Log().LogEndOffset() != 14 {
		t.Fatalf("old leader's log (end %d, %v) differs from the new leader's", stale.Log().LogEndOffset(), err)
	}
	if producers, _ := stale.DescribeProducers(); len(producers) != 0 {
		t.Fatalf("old leader still knows the truncated batch's producer: %+v", producers)
	}
	if checkpoint, err := os.ReadFile(filepath.Join(stale.Log().Dir(), partition.LeaderEpochCheckpointFile)); err != nil || string(checkpoint) != "0\n2\n0 0\n1 10\n" {
		t.Fatalf("old leader's leader-epoch checkpoint: %q, %v; want epochs 0 at 0 and 1 at 10", checkpoint, err)
	}
	testutil.Until(t, 20*time.Second, "the old leader back in the ISR", func() bool {
		return slices.Contains(c.role("diverge", 0).ISR, old)
	})
}

// TestReplicationMinInsyncReplicas: with min.insync.replicas=2 and both
// followers down, acks=all is refused with NOT_ENOUGH_REPLICAS before
// anything is written, acks=1 still succeeds; once the followers are back
// (caught up and in the ISR again) acks=all succeeds, and after the leader
// is killed the new leader has every acknowledged record.
func TestReplicationMinInsyncReplicas(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, map[string]string{"min.insync.replicas": "2"})
	c.createTopic("guarded", 1)
	leader := c.role("guarded", 0).Leader
	mustProduce(t, "acks=all with the full ISR", dialRaw(t, c.broker(leader)).produceAcks("guarded", 0, plainBatch(t, "a", 5), -1), 0)
	var followers []int32
	for _, id := range c.role("guarded", 0).Replicas {
		if id != leader {
			followers = append(followers, id)
		}
	}
	for _, id := range followers {
		c.kill(id)
	}
	raw := dialRaw(t, c.broker(leader))
	refused := raw.produceAcks("guarded", 0, plainBatch(t, "refused", 1), -1)
	if !errors.Is(kerr.ErrorForCode(refused.ErrorCode), kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with ISR %v: %v, want NOT_ENOUGH_REPLICAS", c.role("guarded", 0).ISR, kerr.ErrorForCode(refused.ErrorCode))
	}
	lp := c.localPartition(leader, "guarded", 0)
	if end := lp.Log().LogEndOffset(); end != 5 {
		t.Fatalf("log end %d after the refused batch, want 5 (nothing appended)", end)
	}
	mustProduce(t, "acks=1 with ISR of one", raw.produceAcks("guarded", 0, plainBatch(t, "b", 3), 1), 5)
	for _, id := range followers {
		c.restart(id)
	}
	testutil.Until(t, 30*time.Second, "the followers back in the ISR", func() bool {
		return len(c.role("guarded", 0).ISR) == 3
	})
	mustProduce(t, "acks=all with the ISR back", dialRaw(t, c.broker(leader)).produceAcks("guarded", 0, plainBatch(t, "c", 2), -1), 8)
	c.checkHighWatermark("guarded", 0)
	c.kill(leader)
	next := c.role("guarded", 0).Leader
	np := c.localPartition(next, "guarded", 0)
	testutil.Until(t, 20*time.Second, "the new leader's high watermark at 10", func() bool { return np.HighWatermark() == 10 })
	consumer := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"guarded": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	ctx := testContext(t, 20*time.Second)
	var values []string
	for len(values) < 10 && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	want := []string{"a-0", "a-1", "a-2", "a-3", "a-4", "b-0", "b-1", "b-2", "c-0", "c-1"}
	if !slices.Equal(values, want) {
		t.Fatalf("new leader %d serves %v, want %v", next, values, want)
	}
}

// TestReplicationNotEnoughReplicasAfterAppend: an acks=all batch waits for
// followers that stopped fetching, and the high watermark stays below it
// (never ahead of the ISR); when the controller shrinks the ISR to
// the leader alone, the high watermark passes the batch, but the ISR is
// below min.insync.replicas: NOT_ENOUGH_REPLICAS_AFTER_APPEND.
func TestReplicationNotEnoughReplicasAfterAppend(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, map[string]string{"min.insync.replicas": "2"})
	c.createTopic("shrinking", 1)
	leader := c.role("shrinking", 0).Leader
	var followers []int32
	for _, id := range c.role("shrinking", 0).Replicas {
		if id != leader {
			followers = append(followers, id)
		}
	}
	// Stop the followers without telling the controller: the ISR still
	// names them, so the batch is taken and waits for them.
	for _, id := range followers {
		if err := c.broker(id).Close(); err != nil {
			t.Fatalf("close follower %d: %v", id, err)
		}
	}
	lp := c.localPartition(leader, "shrinking", 0)
	hwBeforeShrink := make(chan int64, 1)
	go func() {
		deadline := time.After(10 * time.Second)
		for waiting := true; waiting; {
			wake := lp.WaitChannel() // closed by the next append
			if lp.Log().LogEndOffset() > 0 {
				break
			}
			select {
			case <-wake:
			case <-deadline:
				waiting = false // the produce below fails the test then
			}
		}
		// Appended, not fetched by the ISR's followers: not committed.
		hwBeforeShrink <- lp.HighWatermark()
		c.mu.Lock()
		role := &c.roles["shrinking"][0]
		role.ISR = []int32{leader}
		role.PartitionEpoch++
		c.mu.Unlock()
		c.publish()
	}()
	answer := dialRaw(t, c.broker(leader)).produceAcks("shrinking", 0, plainBatch(t, "x", 2), -1)
	if !errors.Is(kerr.ErrorForCode(answer.ErrorCode), kerr.NotEnoughReplicasAfterAppend) {
		t.Fatalf("acks=all while the ISR shrank to the leader: %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", kerr.ErrorForCode(answer.ErrorCode))
	}
	if hw := <-hwBeforeShrink; hw != 0 {
		t.Fatalf("high watermark %d while the ISR's followers have nothing, want 0", hw)
	}
	if hw := lp.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d with the leader alone in the ISR, want 2", hw)
	}
}

// TestReplicationLeadersKilledInTurn: an idempotent acks=all producer
// writes to three partitions, led by the three brokers, while each
// partition's leader in turn is killed and restarted (it rejoins as a
// follower, truncates what the new leader lacks, catches up and re-enters
// the ISR). Every partition's log is then its records 0..n-1, each once,
// in order, all acknowledged.
func TestReplicationLeadersKilledInTurn(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	c.createTopic("turns", 3)
	// A killed broker may close a connection right after its first
	// request went out; franz-go reads that as likely SASL
	// misconfiguration and gives up unless told to retry (as franz-go's
	// own suite does).
	producer := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.AlwaysRetryEOF())
	ctx := testContext(t, 90*time.Second)
	const perPartition = 300
	var mu sync.Mutex
	acked := map[int32]int{}
	var produceErrs []error
	var wg sync.WaitGroup
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			for partition := range int32(3) {
				wg.Add(1)
				record := &kgo.Record{Topic: "turns", Partition: partition, Value: []byte(strconv.Itoa(i))}
				producer.Produce(ctx, record, func(r *kgo.Record, err error) {
					defer wg.Done()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						produceErrs = append(produceErrs, err)
						return
					}
					acked[r.Partition]++
				})
			}
		}
	}
	produce(0, perPartition/4)
	for turn := range int32(3) {
		victim := c.role("turns", turn).Leader
		c.kill(victim)
		produce(perPartition/4*(int(turn)+1), perPartition/4*(int(turn)+2))
		c.restart(victim)
		testutil.Until(t, 30*time.Second, fmt.Sprintf("broker %d back in every ISR", victim), func() bool {
			for partition := range int32(3) {
				if !slices.Contains(c.role("turns", partition).ISR, victim) {
					return false
				}
			}
			return true
		})
		for partition := range int32(3) {
			c.checkHighWatermark("turns", partition)
		}
	}
	wg.Wait()
	if len(produceErrs) > 0 {
		t.Fatalf("%d produce errors, first: %v", len(produceErrs), produceErrs[0])
	}
	consumer := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"turns": {
		0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	logs := map[int32][]int{}
	for count := 0; count < 3*perPartition && ctx.Err() == nil; {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			n, _ := strconv.Atoi(string(r.Value))
			logs[r.Partition] = append(logs[r.Partition], n)
			count++
		})
	}
	for partition := range int32(3) {
		values := logs[partition]
		for i, v := range values {
			if v != i {
				t.Fatalf("partition %d: record %d is %d", partition, i, v)
			}
		}
		if len(values) != perPartition || acked[partition] != perPartition {
			t.Fatalf("partition %d: %d records in the log, %d acknowledged, want %d", partition, len(values), acked[partition], perPartition)
		}
	}
}

// TestReplicationLaggingFollowerLeavesISR: a follower that stops fetching
// leaves the ISR after replica.lag.time.max.ms (the leader's
// AlterPartition), the high watermark then moves on without it, and once
// it is back and caught up the leader adds it again.
func TestReplicationLaggingFollowerLeavesISR(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "300"})
	c.createTopic("lagging", 1)
	role := c.role("lagging", 0)
	stopped := otherISRMember(role)
	if err := c.broker(stopped).Close(); err != nil { // the controller is not told
		t.Fatalf("close follower %d: %v", stopped, err)
	}
	testutil.Until(t, 10*time.Second, fmt.Sprintf("follower %d out of the ISR", stopped), func() bool {
		return !slices.Contains(c.role("lagging", 0).ISR, stopped)
	})
	mustProduce(t, "acks=all without the lagging follower", dialRaw(t, c.broker(role.Leader)).produceAcks("lagging", 0, plainBatch(t, "v", 3), -1), 0)
	c.mu.Lock()
	delete(c.brokers, stopped)
	c.mu.Unlock()
	c.restart(stopped)
	testutil.Until(t, 10*time.Second, fmt.Sprintf("follower %d back in the ISR", stopped), func() bool {
		return slices.Contains(c.role("lagging", 0).ISR, stopped)
	})
	if end := c.localPartition(stopped, "lagging", 0).Log().LogEndOffset(); end < 3 {
		t.Fatalf("follower %d rejoined the ISR with log end %d, below the high watermark 3", stopped, end)
	}
}

// TestReplicationMetadataWithoutLocalReplica: a broker that holds no
// replica of a topic still describes it from the controller's roles, by
// name and in the list of all topics, so a client bootstrapped from it
// finds the leader elsewhere.
func TestReplicationMetadataWithoutLocalReplica(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	c.mu.Lock()
	c.roles["solo"] = []PartitionRole{{Topic: "solo", TopicID: newRandomID(), Partition: 0,
		Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}
	c.mu.Unlock()
	c.publish()
	if c.broker(2).topicByName("solo") != nil {
		t.Fatal("broker 2 created a replica it was not assigned")
	}
	raw := dialRaw(t, c.broker(2))
	for _, topics := range [][]kmsg.MetadataRequestTopic{{{Topic: kmsg.StringPtr("solo")}}, nil} {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = topics
		raw.request(req, 12)
		resp := kmsg.NewPtrMetadataResponse()
		raw.response(resp, 12)
		found := false
		for _, mt := range resp.Topics {
			if mt.Topic != nil && *mt.Topic == "solo" {
				found = mt.ErrorCode == 0 && len(mt.Partitions) == 1 && mt.Partitions[0].Leader == 1
			}
		}
		if !found {
			t.Fatalf("broker 2's Metadata (topics %v) does not describe solo led by 1: %+v", topics, resp.Topics)
		}
	}
}
