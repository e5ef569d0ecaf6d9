package txn

import (
	"context"
	"slices"
	"testing"
	"time"
)

// DescribeTransactions and ListTransactions report what the coordinator
// holds, with ListTransactions' filters.
func TestDescribeAndListTransactions(t *testing.T) {
	h := newHarness(t)
	open := h.init("open", 60000)
	h.add(open, tp("b", 1), tp("a", 0), tp("b", 0))
	start := h.clock.Now().UnixMilli()
	idle := h.init("idle", 30000)
	done := h.init("done", 30000)
	h.add(done, tp("a", 0))
	wantErr(t, "commit", h.endTxn(done, true), nil)
	h.waitIdle()

	d := h.describe("open")
	if d.State != StateOngoing || d.TimeoutMs != 60000 || d.StartTime != start ||
		d.ProducerID != open.pid || d.ProducerEpoch != open.epoch ||
		!slices.Equal(d.Partitions, []TopicPartition{tp("a", 0), tp("b", 0), tp("b", 1)}) {
		t.Fatalf("describe open: %+v", d)
	}
	if d := h.describe("done"); d.State != StateCompleteCommit || d.StartTime != -1 || len(d.Partitions) != 0 {
		t.Fatalf("describe done: %+v", d)
	}

	list := func(filter ListFilter) ([]string, []string) {
		result, err := h.c.ListTransactions(filter)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		var ids []string
		for _, listing := range result.Transactions {
			ids = append(ids, listing.TransactionalID+"/"+listing.State.String())
		}
		return ids, result.UnknownStates
	}
	if ids, _ := list(ListFilter{}); !slices.Equal(ids, []string{"done/CompleteCommit", "idle/Empty", "open/Ongoing"}) {
		t.Fatalf("list all: %v", ids)
	}
	ids, unknown := list(ListFilter{States: []string{"Empty", "Bogus"}})
	if !slices.Equal(ids, []string{"idle/Empty"}) || !slices.Equal(unknown, []string{"Bogus"}) {
		t.Fatalf("state filter: %v %v", ids, unknown)
	}
	if ids, unknown := list(ListFilter{States: []string{"Bogus"}}); len(ids) != 0 || !slices.Equal(unknown, []string{"Bogus"}) {
		t.Fatalf("only unknown states: %v %v", ids, unknown)
	}
	if ids, _ := list(ListFilter{ProducerIDs: []int64{done.pid}}); !slices.Equal(ids, []string{"done/CompleteCommit"}) {
		t.Fatalf("producer filter: %v", ids)
	}
	h.clock.Advance(5 * time.Second)
	duration := func(ms int64) *int64 { return &ms }
	if ids, _ := list(ListFilter{MinDurationMs: duration(4000)}); !slices.Equal(ids, []string{"open/Ongoing"}) {
		t.Fatalf("duration filter 4 s: %v", ids)
	}
	if ids, _ := list(ListFilter{MinDurationMs: duration(5000)}); len(ids) != 0 {
		t.Fatalf("duration filter 5 s (open exactly that long): %v", ids)
	}
	if ids, _ := list(ListFilter{Pattern: "^(i|d)"}); !slices.Equal(ids, []string{"done/CompleteCommit", "idle/Empty"}) {
		t.Fatalf("pattern filter: %v", ids)
	}
	_, err := h.c.ListTransactions(ListFilter{Pattern: "("})
	wantErr(t, "bad pattern", err, ErrInvalidRegularExpression)
	_ = idle
}

// Restarting on the log keeps the latest value of each id, tombstones
// included: everything Describe reported before is reported after.
func TestReloadKeepsLatestValuePerID(t *testing.T) {
	h := newHarness(t)
	a := h.init("a", 60000)
	h.add(a, tp("x", 0))
	a = h.init("a", 60000) // fences and aborts, then bumps
	h.add(a, tp("y", 1))
	wantErr(t, "AddOffsets", h.addOffsets(a, "g"), nil)
	b := h.init("b", 60000)
	h.add(b, tp("x", 0))
	wantErr(t, "commit b", h.endTxn(b, true), nil)
	c := h.init("c", 60000)
	h.waitIdle()
	h.clock.Advance(8 * 24 * time.Hour) // past transactional.id.expiration.ms for the idle ones
	h.add(a, tp("y", 2))                // keeps a fresh, open
	result, err := h.c.Tick(context.Background(), h.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	// a's transaction is 8 days old: past its 60 s timeout it is aborted.
	slices.Sort(result.Expired)
	if !slices.Equal(result.Expired, []string{"b", "c"}) || !slices.Equal(result.Aborted, []string{"a"}) {
		t.Fatalf("tick: %+v", result)
	}
	h.waitIdle()
	before := h.describe("a")
	h.c.Close()
	h.start()
	after := h.describe("a")
	if before.State != after.State || before.ProducerEpoch != after.ProducerEpoch || before.ProducerID != after.ProducerID ||
		before.State != StateCompleteAbort {
		t.Fatalf("a before %+v after %+v", before, after)
	}
	for _, id := range []string{"b", "c"} {
		_, err := h.c.DescribeTransaction(id)
		wantErr(t, "expired "+id, err, ErrTransactionalIDNotFound)
	}
	// An expired id starts again with a new producer id.
	again := h.init("c", 60000)
	if again.pid == c.pid || again.epoch != 0 {
		t.Fatalf("expired id restarted as %+v (was %+v)", again, c)
	}
}

// KIP-890 part 1: VerifyPartition and the brokers' VerifyOnly form of
// AddPartitionsToTxn accept only partitions of the open transaction of the
// current producer; the implicit add of part 2 adds.
func TestVerifyPartitions(t *testing.T) {
	h := newHarness(t)
	p := h.init("app", 60000)
	if err := h.c.VerifyPartition(p.typed(), tp("a", 0)); err == nil {
		t.Fatal("verified a partition with no transaction open")
	}
	h.add(p, tp("a", 0))
	errs := h.c.VerifyPartitions(p.typed(), []TopicPartition{tp("a", 0), tp("a", 1)})
	wantErr(t, "added partition", errs[0], nil)
	wantErr(t, "partition not added", errs[1], ErrInvalidTxnState)
	stale := producer{id: "app", pid: p.pid, epoch: p.epoch - 1}
	wantErr(t, "older epoch", h.c.VerifyPartitions(stale.typed(), []TopicPartition{tp("a", 0)})[0], ErrProducerFenced)
	nobody := producer{id: "nobody", pid: 1, epoch: 0}
	wantErr(t, "unknown id", h.c.VerifyPartitions(nobody.typed(), []TopicPartition{tp("a", 0)})[0], ErrInvalidProducerIDMapping)
	if got := len(h.states("app")); got != 2 {
		t.Fatalf("verification wrote to the log: %d records", got)
	}
	// The implicit add (a partition leader adding for a Produce v12+).
	wantErr(t, "implicit add", h.c.AddProducedPartition(context.Background(), p.typed(), tp("b", 3)), nil)
	wantErr(t, "verify after implicit add", h.c.VerifyPartition(p.typed(), tp("b", 3)), nil)
	wantErr(t, "implicit add by a fenced producer", h.c.AddProducedPartition(context.Background(), stale.typed(), tp("b", 4)), ErrProducerFenced)
}

// KIP-890 part 2 (transaction version 2): every EndTxn bumps the epoch,
// markers carry the bumped epoch, the result hands it to the producer, and
// a retry with the old epoch is answered with the same.
func TestTransactionVersion2BumpsEpochAtEveryEnd(t *testing.T) {
	h := newHarness(t)
	p := h.init("app", 60000)
	h.add(p, tp("a", 0))
	next, err := h.endTxnV2(p, true)
	wantErr(t, "EndTxn v2", err, nil)
	if next.pid != p.pid || next.epoch != p.epoch+1 {
		t.Fatalf("EndTxn v2 returned %d/%d", next.pid, next.epoch)
	}
	h.waitIdle()
	if calls := h.markers.succeeded(); len(calls) != 1 || calls[0].ProducerEpoch != p.epoch+1 {
		t.Fatalf("markers %+v", calls)
	}
	retry, err := h.endTxnV2(p, true)
	if err != nil || retry != next {
		t.Fatalf("retry: %+v %v", retry, err)
	}
	wantErr(t, "old epoch add", h.addPartitions(p, tp("a", 0))[0], ErrProducerFenced)
	h.add(next, tp("a", 0))
	// An abort with nothing open still bumps.
	aborted, err := h.endTxnV2(next, false)
	wantErr(t, "abort", err, nil)
	empty, err := h.endTxnV2(aborted, false)
	if err != nil || empty.epoch != next.epoch+2 {
		t.Fatalf("empty abort: %+v %v", empty, err)
	}
	// A classic EndTxn keeps the classic behaviour.
	h.waitIdle()
	h.add(empty, tp("a", 0))
	wantErr(t, "classic EndTxn", h.endTxn(empty, true), nil)
	h.waitIdle()
	if d := h.describe("app"); d.ProducerEpoch != empty.epoch || d.State != StateCompleteCommit {
		t.Fatalf("classic EndTxn bumped or did not commit: %+v", d)
	}
}

// Transaction version 2 at the last epoch: EndTxn moves to a new producer
// id at epoch 0, and a retry from the old id is still recognized.
func TestTransactionVersion2RotatesProducerID(t *testing.T) {
	h := newHarness(t)
	p := h.init("app", 60000)
	// Fast-forward the epoch by writing a state, as a long-lived producer
	// would reach it.
	e, _ := h.c.lockEntry("app", nil)
	m := e.meta.clone()
	m.ProducerEpoch = maxProducerEpoch - 1
	if err := h.c.write(context.Background(), e, m); err != nil {
		t.Fatal(err)
	}
	e.mu.Unlock()
	p.epoch = maxProducerEpoch - 1
	h.add(p, tp("a", 0))
	next, err := h.endTxnV2(p, true)
	if err != nil || next.pid == p.pid || next.epoch != 0 {
		t.Fatalf("rotation: %+v %v", next, err)
	}
	h.waitIdle()
	if calls := h.markers.succeeded(); len(calls) != 1 || calls[0].ProducerID != p.pid || calls[0].ProducerEpoch != maxProducerEpoch {
		t.Fatalf("markers %+v", calls)
	}
	retry, err := h.endTxnV2(p, true)
	if err != nil || retry != next {
		t.Fatalf("retry after rotation: %+v %v", retry, err)
	}
}
