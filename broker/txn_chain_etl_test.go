package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// A chained exactly-once ETL under consumer-group churn, the scenario of
// franz-go's TestTxnEtl: a transactional producer writes keyed records
// (committing most transactions, aborting some), and three stages, each a
// consumer group of GroupTransactSession workers, copy topic N to topic
// N+1. Workers start in waves; some commit a few transactions, then end
// the next with an abort and leave the group, and the others take their
// partitions over. Every stage must commit each input record exactly once
// and never pass on an aborted one.

const (
	chainRecords        = 8000
	chainTxnRecords     = 1000 // records per input transaction
	chainAbortEvery     = 4    // every 4th input transaction aborts
	chainStages         = 3
	chainWorkerDeadline = 90 * time.Second
)

// chainStage is one consume-transform-produce stage: its group, its input
// and output topics, and what its workers committed.
type chainStage struct {
	group, from, to string
	balancer        kgo.GroupBalancer
	static          bool
	instances       atomic.Int32

	mu sync.Mutex
	// seen holds every committed input position, to catch an offset
	// consumed twice; consumed counts committed data records.
	seen     map[[2]int64]bool
	consumed int
	failure  error
	wg       sync.WaitGroup
}

func (s *chainStage) fail(err error) {
	s.mu.Lock()
	if s.failure == nil {
		s.failure = err
	}
	s.mu.Unlock()
}

func (s *chainStage) state() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.consumed, s.failure
}

// startWorker runs one GroupTransactSession worker. quitAfter < 0 runs
// until the stage has consumed everything; otherwise the worker commits
// quitAfter transactions, aborts the next and leaves the group.
func (s *chainStage) startWorker(t *testing.T, addr string, quitAfter int, expected int) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.runWorker(addr, quitAfter, expected); err != nil {
			s.fail(err)
		}
	}()
}

func (s *chainStage) runWorker(addr string, quitAfter, expected int) error {
	instance := s.instances.Add(1)
	options := []kgo.Opt{
		kgo.SeedBrokers(addr), kgo.TransactionalID(fmt.Sprintf("%s-%d", s.group, instance)),
		kgo.TransactionTimeout(30 * time.Second),
		kgo.ConsumerGroup(s.group), kgo.ConsumeTopics(s.from), kgo.Balancers(s.balancer),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.SessionTimeout(6 * time.Second), kgo.RebalanceTimeout(10 * time.Second),
		kgo.HeartbeatInterval(300 * time.Millisecond), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.MaxBufferedRecords(2000),
	}
	instanceID := ""
	if s.static {
		instanceID = fmt.Sprintf("%s-static-%d", s.group, instance)
		options = append(options, kgo.InstanceID(instanceID))
	}
	session, err := kgo.NewGroupTransactSession(options...)
	if err != nil {
		return err
	}
	defer func() {
		session.Close()
		if instanceID != "" {
			// A static member does not leave on close; leave by
			// instance id, as an operator's admin tool would.
			leaveStatic(addr, s.group, instanceID)
		}
	}()
	deadline := time.Now().Add(chainWorkerDeadline)
	committedTxns := 0
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		fetches := session.PollFetches(ctx)
		cancel()
		if consumed, failure := s.state(); failure != nil || consumed >= expected {
			return nil
		}
		if errs := fetches.Errors(); len(errs) > 0 && !errors.Is(errs[0].Err, context.DeadlineExceeded) {
			return fmt.Errorf("%s poll: %v", s.group, errs)
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		if err := session.Begin(); err != nil {
			return fmt.Errorf("%s begin: %w", s.group, err)
		}
		var positions [][2]int64
		data := 0
		fetches.EachRecord(func(r *kgo.Record) {
			positions = append(positions, [2]int64{int64(r.Partition), r.Offset})
			if r.Attrs.IsControl() {
				return
			}
			data++
			session.Produce(context.Background(), &kgo.Record{Topic: s.to, Key: r.Key, Value: r.Value}, nil)
		})
		wantCommit := quitAfter < 0 || committedTxns < quitAfter
		committed, err := session.End(context.Background(), kgo.TransactionEndTry(wantCommit))
		if err != nil {
			return fmt.Errorf("%s end: %w", s.group, err)
		}
		if !committed {
			if !wantCommit {
				return nil // aborted the last transaction: leave
			}
			continue
		}
		committedTxns++
		s.mu.Lock()
		for _, position := range positions {
			if s.seen[position] {
				s.mu.Unlock()
				return fmt.Errorf("%s committed input partition %d offset %d twice", s.group, position[0], position[1])
			}
			s.seen[position] = true
		}
		s.consumed += data
		if s.consumed > expected {
			s.mu.Unlock()
			return fmt.Errorf("%s committed %d records of %d: duplicates in its input", s.group, s.consumed, expected)
		}
		s.mu.Unlock()
	}
	return fmt.Errorf("%s worker still running at its deadline", s.group)
}

// leaveStatic removes a static member from its group by instance id.
func leaveStatic(addr, group, instanceID string) {
	client, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return
	}
	defer client.Close()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	member := kmsg.NewLeaveGroupRequestMember()
	member.InstanceID = kmsg.StringPtr(instanceID)
	req.Members = append(req.Members, member)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = req.RequestWith(ctx, client)
}

// produceChainInput writes chainRecords committed records (keys 0..n-1)
// and, in every chainAbortEvery-th transaction, aborted records whose keys
// start with "aborted-".
func produceChainInput(t *testing.T, addr, topic string) {
	producer := newTxnProducer(t, addr, "chain-input-"+topic, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	ctx := testContext(t, 60*time.Second)
	next := 0
	for txn := 0; next < chainRecords; txn++ {
		var records []*kgo.Record
		commit := txn%chainAbortEvery != chainAbortEvery-1
		for range chainTxnRecords {
			key := "aborted-" + strconv.Itoa(txn*chainTxnRecords+len(records))
			if commit {
				key = strconv.Itoa(next)
				next++
			}
			records = append(records, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte("v")})
		}
		if err := runTransaction(ctx, producer, records, commit); err != nil {
			t.Errorf("input transaction %d: %v", txn, err)
			return
		}
	}
}

// TestChainedTxnETLUnderGroupChurn runs the chain with range,
// cooperative-sticky and static cooperative-sticky members.
func TestChainedTxnETLUnderGroupChurn(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), txnTestProperties("2"))
	admin := newTestClient(t, b)
	variants := []struct {
		name     string
		balancer kgo.GroupBalancer
		static   bool
	}{
		{"range", kgo.RangeBalancer(), false},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer(), false},
		{"cooperative-sticky-static", kgo.CooperativeStickyBalancer(), true},
	}
	partitions := []int32{5, 7, 3, 4}
	for _, variant := range variants {
		topics := make([]string, chainStages+1)
		for i := range topics {
			topics[i] = fmt.Sprintf("chain-%s-%d", variant.name, i)
			createTopic(t, admin, topics[i], partitions[i], nil)
		}
		t.Run(variant.name, func(t *testing.T) {
			t.Parallel()
			runChain(t, b.Addr(), topics, partitions, variant.balancer, variant.static)
		})
	}
}

func runChain(t *testing.T, addr string, topics []string, partitions []int32, balancer kgo.GroupBalancer, static bool) {
	stages := make([]*chainStage, chainStages)
	for i := range stages {
		stages[i] = &chainStage{group: topics[i] + "-group", from: topics[i], to: topics[i+1],
			balancer: balancer, static: static, seen: map[[2]int64]bool{}}
	}
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		produceChainInput(t, addr, topics[0])
	}()
	defer func() { <-produced }() // the producer reports through t
	// First wave: three lasting workers per stage, and on the first two
	// stages workers that leave at once or after two transactions.
	for _, stage := range stages {
		for range 3 {
			stage.startWorker(t, addr, -1, chainRecords)
		}
	}
	stages[0].startWorker(t, addr, 0, chainRecords)
	stages[0].startWorker(t, addr, 2, chainRecords)
	stages[1].startWorker(t, addr, 2, chainRecords)
	// Second wave, once the first stage is a quarter through: more
	// lasting workers join every group, and two more leave soon after.
	ctx, cancel := context.WithTimeout(context.Background(), chainWorkerDeadline)
	defer cancel()
	// waitFor waits for cond within the workers' deadline, failing at
	// once on a stage's failure.
	waitFor := func(cond func() bool, what string) {
		t.Helper()
		testutil.UntilContext(t, ctx, what, func() bool {
			for _, stage := range stages {
				if _, failure := stage.state(); failure != nil {
					t.Fatal(failure)
				}
			}
			return cond()
		})
	}
	waitFor(func() bool { consumed, _ := stages[0].state(); return consumed >= chainRecords/4 }, "first stage a quarter through")
	for _, stage := range stages {
		for range 2 {
			stage.startWorker(t, addr, -1, chainRecords)
		}
	}
	stages[1].startWorker(t, addr, 0, chainRecords)
	stages[0].startWorker(t, addr, 1, chainRecords)
	stages[2].startWorker(t, addr, 1, chainRecords)

	waitFor(func() bool {
		for _, stage := range stages {
			if consumed, _ := stage.state(); consumed < chainRecords {
				return false
			}
		}
		return true
	}, "every stage through")
	for _, stage := range stages {
		stage.wg.Wait()
		if _, failure := stage.state(); failure != nil {
			t.Fatal(failure)
		}
	}
	// Read every stage's output back: each input key exactly once, no
	// aborted input key.
	for i, topic := range topics[1:] {
		keys := map[string]int{}
		for _, key := range consumeCommittedKeys(t, addr, topic, partitions[i+1]) {
			keys[key]++
		}
		for key, n := range keys {
			if n != 1 {
				t.Errorf("stage %d output %s: key %s committed %d times", i+1, topic, key, n)
			}
			if _, err := strconv.Atoi(key); err != nil {
				t.Errorf("stage %d output %s: key %q of an aborted input transaction", i+1, topic, key)
			}
		}
		if len(keys) != chainRecords {
			t.Errorf("stage %d output %s holds %d distinct keys, want %d", i+1, topic, len(keys), chainRecords)
		}
	}
}

// consumeCommittedKeys reads every partition of topic from the start with
// read_committed up to its end offset (every transaction has ended, so the
// last stable offset is the end) and returns the keys of the data records.
func consumeCommittedKeys(t *testing.T, addr, topic string, partitions int32) []string {
	t.Helper()
	lookup := newTxnProducer(t, addr, "lookup-"+topic)
	ends := map[int32]int64{}
	assignment := map[string]map[int32]kgo.Offset{topic: {}}
	for p := range partitions {
		if end := listOffsets(t, lookup, topic, p, 1); end > 0 {
			ends[p] = end
			assignment[topic][p] = kgo.NewOffset().AtStart()
		}
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(assignment),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := testContext(t, 30*time.Second)
	var keys []string
	for len(ends) > 0 {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: %d partitions not read to their end", topic, len(ends))
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			t.Fatalf("fetch %s-%d: %v", topic, partition, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				keys = append(keys, string(r.Key))
			}
			if end, ok := ends[r.Partition]; ok && r.Offset+1 >= end {
				delete(ends, r.Partition)
			}
		})
	}
	return keys
}
