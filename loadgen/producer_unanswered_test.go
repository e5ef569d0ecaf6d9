package loadgen

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// A transactional producer whose EndTxn the cluster does not answer until
// the client's retries ran out (the coordinator's broker killed, a new
// coordinator not found yet) aborts it the way kgo documents, logs the
// transaction's outcome as unknown, and goes on producing its budget.
func TestTransactionalProducerOutlivesUnansweredEnd(t *testing.T) {
	const budget = 600
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	// From the third EndTxn on, cut the connection of the next five.
	var endTxns, cut atomic.Int32
	cluster.ControlKey(int16(kmsg.EndTxn), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if endTxns.Add(1) < 3 || cut.Load() >= 5 {
			return nil, nil, false
		}
		cut.Add(1)
		return nil, errors.New("connection cut"), true
	})
	ledger := verify.NewLedger(7, 1)
	start := time.Now()
	p, err := buildProducer(producerSpec{
		options: []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.RequestRetries(3),
			kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }), kgo.MetadataMinAge(50 * time.Millisecond)},
		clientID: "unanswered-test", mode: ModeTransactional, transactionalID: "unanswered-test-p0", transactionTimeout: 5 * time.Second,
		runID: 7, topic: "t", recordSize: 64, keys: KeySpec{Distribution: "uniform", Space: 100}, rate: 2000,
		budget: budget, deadline: start.Add(20 * time.Second), start: start, commitInterval: 20 * time.Millisecond,
	}, verify.NewTrackedLog(ledger.Producer(0)), newRunMetrics(start))
	if err != nil {
		t.Fatal(err)
	}
	defer p.client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.runTransactional(ctx); err != nil {
		t.Fatalf("producer: %v", err)
	}
	totals := ledger.Totals()
	if cut.Load() < 4 {
		t.Fatalf("%d EndTxn connections cut: the fault did not act", cut.Load())
	}
	if totals.Sent != budget || totals.Uncertain == 0 {
		t.Fatalf("totals %+v: want the whole budget of %d sent and an unanswered transaction's records uncertain", totals, budget)
	}
}
