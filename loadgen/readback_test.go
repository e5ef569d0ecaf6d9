package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAwaitStableWaitsForOpenTransactions: a transaction left open holds
// the last stable offset back (by its own record and every record after
// it), so awaitStable reports it when its wait runs out; once the
// transaction ends, it returns at once with nothing held back.
func TestAwaitStableWaitsForOpenTransactions(t *testing.T) {
	target := newQuickGroupsEmbedded(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic = "await-stable"
	if err := createTopic(ctx, admin, topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	open, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...), kgo.TransactionalID("await-stable-open"),
		kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for range 5 {
		if err := plain.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	started := time.Now()
	heldBack, err := awaitStable(ctx, admin, topic, 1, 600*time.Millisecond)
	if err != nil || heldBack != 6 {
		t.Fatalf("with a transaction open: held back %d, err %v; want the open record and the 5 after it", heldBack, err)
	}
	if waited := time.Since(started); waited < 600*time.Millisecond {
		t.Errorf("gave up after %s, before its wait of 600ms", waited)
	}
	if err := open.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	if heldBack, err := awaitStable(ctx, admin, topic, 1, 10*time.Second); err != nil || heldBack != 0 {
		t.Fatalf("after the abort: held back %d, err %v", heldBack, err)
	}
}
