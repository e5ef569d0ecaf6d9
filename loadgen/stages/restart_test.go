package stages

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// testMetrics counts errors; the rest is discarded.
type testMetrics struct {
	mu     sync.Mutex
	errors []error
}

func (m *testMetrics) RecordError(err error) {
	m.mu.Lock()
	m.errors = append(m.errors, err)
	m.mu.Unlock()
}
func (m *testMetrics) RecordEndToEnd(time.Time, time.Time)            {}
func (m *testMetrics) RecordTransactionEnd(bool, bool, time.Duration) {}
func (m *testMetrics) UnsupportedMode() string                        { return "" }
func (m *testMetrics) Logger() kgo.Logger                             { return kgo.BasicLogger(nil, kgo.LogLevelNone, nil) }

// A transact worker whose EndTxn the cluster never answers (every request
// on the connection is cut, as when the coordinator's broker dies and the
// client's retries run out before a new coordinator is found) replaces its
// session and carries every input record to its output exactly once.
func TestTransactRestartingOutlivesUnansweredEnd(t *testing.T) {
	const records = 300
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	fast := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.RequestRetries(3),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }), kgo.MetadataMinAge(50 * time.Millisecond)}

	producer, err := kgo.NewClient(append(fast, kgo.DefaultProduceTopic("in"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produce := func(from, to int) {
		for seq := from; seq < to; seq++ {
			value := verify.NewValue(verify.Header{RunID: 1, Sequence: uint64(seq)}, 64)
			producer.Produce(context.Background(), &kgo.Record{Partition: int32(seq % 3), Value: value}, nil)
		}
		if err := producer.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, records/2)

	// After the first EndTxn, cut every EndTxn connection until the
	// worker's first session gave up on it (more than its 3 retries).
	var endTxns, cut atomic.Int32
	cluster.ControlKey(int16(kmsg.EndTxn), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if endTxns.Add(1) < 2 || cut.Load() >= 5 {
			return nil, nil, false
		}
		cut.Add(1)
		return nil, errors.New("connection cut"), true
	})

	metrics := &testMetrics{}
	spec := SessionSpec{Options: fast, ClientID: "restart-test", TransactionalID: "restart-test-w0",
		TransactionTimeout: 2 * time.Second, Group: "restart-test", Input: "in"}
	var sessions atomic.Int32
	newSession := func() (*kgo.GroupTransactSession, error) {
		sessions.Add(1)
		return NewSession(spec, metrics)
	}
	first, err := newSession()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Group{Committed: NewCounter()}
	done := make(chan error, 1)
	go func() { done <- p.TransactRestarting(ctx, first, newSession, Output{Topic: "out", Stage: 1}, metrics) }()
	// The second half arrives after the first transactions committed,
	// so EndTxns that the cluster cuts off carry records.
	if !p.Committed.WaitFor(records/2, time.Now().Add(30*time.Second)) {
		t.Fatalf("committed %d of the first %d records", p.Committed.Load(), records/2)
	}
	produce(records/2, records)
	caughtUp := p.Committed.WaitFor(records, time.Now().Add(30*time.Second))
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("worker: %v", err)
	}
	if !caughtUp {
		t.Fatalf("committed %d of %d records", p.Committed.Load(), records)
	}
	if cut.Load() < 4 || sessions.Load() < 2 {
		t.Fatalf("%d EndTxn connections cut, %d sessions: the fault did not act", cut.Load(), sessions.Load())
	}

	// Every input record is in the output once, read committed.
	reader, err := kgo.NewClient(append(fast, kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	seen := map[verify.RecordID]int{}
	readCtx, cancelRead := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelRead()
	for total := 0; total < records && readCtx.Err() == nil; {
		fetches := reader.PollFetches(readCtx)
		fetches.EachRecord(func(record *kgo.Record) {
			seen[verify.IdentifyValue(record.Value)]++
			total++
		})
	}
	for seq := range records {
		if n := seen[verify.NewRecordID(0, uint64(seq))]; n != 1 {
			t.Errorf("input record %d is in the output %d times", seq, n)
		}
	}
	if len(seen) != records {
		t.Errorf("%d distinct records in the output, want %d", len(seen), records)
	}
}
