package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// TestKillBrokerBetweenPrepareCommitAndMarkers: a transaction is committed;
// the broker writes PrepareCommit (the decision) and is killed with SIGKILL
// before any marker is written. Restarted on the same data directory
// without the hook, the coordinator finds the transaction in PrepareCommit
// at load and drives it to completion: a read_committed consumer sees
// every record of it, and the coordinator reports CompleteCommit.
func TestKillBrokerBetweenPrepareCommitAndMarkers(t *testing.T) {
	t.Parallel()
	const (
		partitions = 3
		records    = 30
	)
	dir := t.TempDir()
	properties := []string{"transaction.state.log.num.partitions=5", "offsets.topic.num.partitions=5"}
	first := startChildBrokerEnv(t, []string{childHangMarkersEnv + "=1"}, "127.0.0.1:0", dir, properties...)
	admin := newCrashProducer(t, first.addr)
	createTopic(t, admin, "decided", partitions, nil)
	producer := newTxnProducer(t, first.addr, "decided", kgo.TransactionTimeout(time.Minute))
	ctx := testContext(t, 60*time.Second)
	if err := producer.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var want []string
	var batch []*kgo.Record
	for i := range records {
		value := fmt.Sprintf("decided-%d", i)
		want = append(want, value)
		batch = append(batch, &kgo.Record{Topic: "decided", Partition: int32(i % partitions), Value: []byte(value)})
	}
	if err := producer.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- producer.EndTransaction(ctx, kgo.TryCommit) }()
	select {
	case line := <-first.lines:
		if line != "markers-pending" {
			t.Fatalf("child broker said %q, want markers-pending", line)
		}
	case err := <-ended:
		t.Fatalf("EndTxn answered (%v) before the coordinator reached the markers", err)
	case <-ctx.Done():
		t.Fatal("the coordinator never reached the markers")
	}
	first.kill(t)
	producer.Close()
	admin.Close()

	second := startChildBroker(t, first.addr, dir, properties...)
	writeSentinels(t, second.addr, []string{"decided"}, partitions)
	got := consumeToSentinels(t, second.addr, []string{"decided"}, partitions, kgo.ReadCommitted())["decided"]
	if !sameSet(got, want) {
		t.Fatalf("read_committed after the restart: %d records, want the %d of the committed transaction", len(got), len(want))
	}
	client := newCrashProducer(t, second.addr)
	testutil.Eventually(t, 10*time.Second, "the coordinator completes the commit", func() (bool, string) {
		state := describeTransaction(t, client, "decided")
		return state.State == "CompleteCommit", "state " + state.State
	})
}
