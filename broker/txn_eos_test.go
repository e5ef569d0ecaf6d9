package broker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// Consume-transform-produce with kgo.GroupTransactSession (seed failure
// class 4): workers consume an input topic in a group, write each record to
// an output topic and commit the input offsets in the same transaction.
// Workers are killed mid-transaction (their connections cut after they
// wrote output, before they commit) and replaced by a new instance with
// the same transactional id, which fences the dead one and aborts its open
// transaction. The output, read with read_committed, holds every input
// record exactly once.

const (
	eosPartitions = 6
	eosGroup      = "eos"
)

// eosWorker is one GroupTransactSession instance.
type eosWorker struct {
	name string
	// output is the topic the worker writes to.
	output string
	// killNext asks the worker to die in the middle of its next transaction.
	killNext atomic.Bool
	dialer   *killableDialer
	session  *kgo.GroupTransactSession
	done     chan struct{}
	err      atomic.Value // error: a failure other than the staged death
	// stage says where the worker's loop is, for failure messages.
	stage atomic.Value // string
}

func startEOSWorker(t *testing.T, addr, name string) *eosWorker {
	t.Helper()
	return startEOSWorkerIn(t, addr, name, eosGroup, "eos-in", "eos-out")
}

// startEOSWorkerIn starts a worker of group moving input to output; extra
// options come last (kgo.ServerSideBalancer for the KIP-848 protocol).
func startEOSWorkerIn(t *testing.T, addr, name, groupID, input, output string, extra ...kgo.Opt) *eosWorker {
	t.Helper()
	w := &eosWorker{name: name, output: output, dialer: &killableDialer{}, done: make(chan struct{})}
	options := []kgo.Opt{
		kgo.SeedBrokers(addr), kgo.Dialer(w.dialer.dial), kgo.ClientID(name),
		kgo.TransactionalID(name), kgo.TransactionTimeout(10 * time.Second),
		kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(input),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.SessionTimeout(1500 * time.Millisecond), kgo.HeartbeatInterval(200 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RetryTimeout(5 * time.Second),
	}
	session, err := kgo.NewGroupTransactSession(append(options, extra...)...)
	if err != nil {
		t.Fatalf("worker %s: %v", name, err)
	}
	w.session = session
	go w.run()
	return w
}

// run is the worker's loop: poll, transform into the output, commit.
func (w *eosWorker) run() {
	defer close(w.done)
	ctx := context.Background()
	for {
		w.stage.Store("polling")
		fetches := w.session.PollFetches(ctx)
		if fetches.IsClientClosed() {
			return
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		if err := w.session.Begin(); err != nil {
			w.err.Store(fmt.Errorf("%s begin: %w", w.name, err))
			return
		}
		var out []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			out = append(out, &kgo.Record{Topic: w.output, Partition: r.Partition, Key: r.Key, Value: r.Value})
		})
		// Errors here (a rebalance revoked the partitions, a fence) make
		// End abort; the records come again to whoever owns them.
		w.stage.Store("producing")
		w.session.ProduceSync(ctx, out...)
		if w.killNext.Load() {
			w.stage.Store("dying")
			// Die mid-transaction: the output is in the log, the commit
			// never comes. Closing after the cut cannot end the
			// transaction either.
			w.dialer.kill()
			w.session.Close()
			return
		}
		w.stage.Store("ending")
		if _, err := w.session.End(ctx, kgo.TryCommit); err != nil && !isRetriableEnd(err) {
			w.err.Store(fmt.Errorf("%s end: %w", w.name, err))
			return
		}
	}
}

// isRetriableEnd: End errors after which a GroupTransactSession goes on.
func isRetriableEnd(err error) bool {
	return kerr.IsRetriable(err) || isFencingError(err) || err == context.Canceled
}

func (w *eosWorker) stop(t *testing.T) {
	t.Helper()
	w.session.Close()
	select {
	case <-w.done:
	case <-time.After(15 * time.Second):
		t.Errorf("worker %s did not stop", w.name)
	}
}

// TestEOSPipelineWithKilledWorkers: 3 workers move 200k records; a worker
// is killed mid-transaction and replaced three times.
func TestEOSPipelineWithKilledWorkers(t *testing.T) {
	t.Parallel()
	for _, tv := range transactionVersions {
		t.Run(tv.name, func(t *testing.T) {
			runEOSPipeline(t, tv.version, 200_000)
		})
	}
}

func runEOSPipeline(t *testing.T, transactionVersion string, total int) {
	b := startTestBroker(t, t.TempDir(), txnTestProperties(transactionVersion))
	admin := newTestClient(t, b, kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, admin, "eos-in", eosPartitions, nil)
	createTopic(t, admin, "eos-out", eosPartitions, nil)
	ctx := testContext(t, 60*time.Second)
	var mu sync.Mutex
	workers := make([]*eosWorker, 3)
	for i := range workers {
		workers[i] = startEOSWorker(t, b.Addr(), fmt.Sprintf("worker-%d", i))
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range workers {
			w.stop(t)
		}
	})
	// The input arrives in 4 chunks. Before chunks 2–4 a worker is told to
	// die in its next transaction, which then holds records of that chunk.
	const chunks = 4
	padding := make([]byte, 80)
	for chunk := range chunks {
		var victim *eosWorker
		if chunk > 0 {
			victim = workers[(chunk-1)%len(workers)]
			victim.killNext.Store(true)
		}
		for i := chunk * total / chunks; i < (chunk+1)*total/chunks; i++ {
			value := append([]byte(strconv.Itoa(i)+":"), padding...)
			admin.Produce(ctx, &kgo.Record{Topic: "eos-in", Partition: int32(i % eosPartitions), Value: value}, nil)
		}
		if err := admin.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if victim != nil {
			select {
			case <-victim.done:
			case <-time.After(15 * time.Second):
				t.Fatalf("%s did not reach its next transaction (stage %v)", victim.name, victim.stage.Load())
			}
			if err, _ := victim.err.Load().(error); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			workers[(chunk-1)%len(workers)] = startEOSWorker(t, b.Addr(), victim.name)
			mu.Unlock()
		}
		threshold := int64((chunk + 1) * total / chunks)
		testutil.Eventually(t, 30*time.Second, fmt.Sprintf("%d input records committed", threshold), func() (bool, string) {
			committed := committedInput(t, admin)
			return committed >= threshold, fmt.Sprintf("%d committed", committed)
		})
	}
	testutil.Eventually(t, 40*time.Second, "every input record committed", func() (bool, string) {
		committed := committedInput(t, admin)
		return committed == int64(total), fmt.Sprintf("%d of %d committed", committed, total)
	})
	mu.Lock()
	for _, w := range workers {
		if err, _ := w.err.Load().(error); err != nil {
			t.Fatal(err)
		}
	}
	mu.Unlock()
	writeSentinels(t, b.Addr(), []string{"eos-out"}, eosPartitions)
	output := consumeToSentinels(t, b.Addr(), []string{"eos-out"}, eosPartitions, kgo.ReadCommitted())["eos-out"]
	seen := make([]int, total)
	for _, value := range output {
		number, _, _ := strings.Cut(value, ":")
		i, err := strconv.Atoi(number)
		if err != nil || i < 0 || i >= total {
			t.Fatalf("output record %q is no input record", value)
		}
		seen[i]++
	}
	missing, duplicated := 0, 0
	for _, count := range seen {
		if count == 0 {
			missing++
		}
		if count > 1 {
			duplicated++
		}
	}
	uncommitted := consumeToSentinels(t, b.Addr(), []string{"eos-out"}, eosPartitions, kgo.ReadUncommitted())["eos-out"]
	t.Logf("%d input records → %d committed output records (%d missing, %d duplicated); %d output records including aborted ones",
		total, len(output), missing, duplicated, len(uncommitted))
	if missing > 0 || duplicated > 0 || len(output) != total {
		t.Fatalf("output is not every input record exactly once: %d missing, %d duplicated, %d records", missing, duplicated, len(output))
	}
	if len(uncommitted) <= total {
		t.Fatalf("no aborted output at all (%d records read uncommitted): the kills did not land mid-transaction", len(uncommitted))
	}
}

// committedInput sums the group's committed (stable) offsets on eos-in.
func committedInput(t *testing.T, client *kgo.Client) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	group := kmsg.NewOffsetFetchRequestGroup()
	group.Group = eosGroup
	topic := kmsg.NewOffsetFetchRequestGroupTopic()
	topic.Topic = "eos-in"
	for p := range int32(eosPartitions) {
		topic.Partitions = append(topic.Partitions, p)
	}
	group.Topics = append(group.Topics, topic)
	req.Groups = append(req.Groups, group)
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	var sum int64
	for _, g := range resp.Groups {
		for _, rt := range g.Topics {
			for _, rp := range rt.Partitions {
				if rp.Offset > 0 {
					sum += rp.Offset
				}
			}
		}
	}
	return sum
}
