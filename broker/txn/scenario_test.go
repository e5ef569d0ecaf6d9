package txn

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// states returns the states written to the log for id, in order.
func (h *harness) states(id string) []State {
	h.t.Helper()
	records, err := h.log.Records(id)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []State
	for _, m := range records {
		out = append(out, m.State)
	}
	return out
}

// A producer writes to two partitions and commits a consumer
// group's offsets in one transaction; the coordinator writes PrepareCommit,
// then COMMIT markers to exactly those partitions with its coordinator
// epoch, completes the group's offsets, then CompleteCommit. A retried
// commit is answered with success and writes nothing.
func TestCommitWritesMarkersToExactlyTheParticipants(t *testing.T) {
	h := newHarness(t)
	p := h.init("app-1", 60000)
	if p.epoch != 0 {
		t.Fatalf("first epoch %d, want 0", p.epoch)
	}
	h.add(p, tp("out", 1), tp("out", 0))
	h.add(p, tp("other", 3), tp("out", 0)) // re-adding is harmless
	wantErr(t, "AddOffsetsToTxn", h.addOffsets(p, "group-a"), nil)
	if err := h.c.VerifyPartition(p.typed(), tp("out", 1)); err != nil {
		t.Fatalf("VerifyPartition of an added partition: %v", err)
	}
	wantErr(t, "EndTxn commit", h.endTxn(p, true), nil)
	h.waitIdle()

	calls := h.markers.succeeded()
	if len(calls) != 1 {
		t.Fatalf("%d marker calls, want 1: %+v", len(calls), calls)
	}
	want := markerCall{ProducerID: p.pid, ProducerEpoch: p.epoch, CoordinatorEpoch: 7, Commit: true,
		Partitions: []TopicPartition{tp("other", 3), tp("out", 0), tp("out", 1)}}
	got := calls[0]
	if got.ProducerID != want.ProducerID || got.ProducerEpoch != want.ProducerEpoch || got.CoordinatorEpoch != 7 || !got.Commit ||
		!slices.Equal(got.Partitions, want.Partitions) {
		t.Fatalf("markers %+v, want %+v", got, want)
	}
	if len(h.offsets.calls) != 1 || h.offsets.calls[0] != (offsetCall{"group-a", p.pid, p.epoch, true}) {
		t.Fatalf("offset completion %+v", h.offsets.calls)
	}
	wantStates := []State{StateEmpty, StateOngoing, StateOngoing, StateOngoing, StatePrepareCommit, StateCompleteCommit}
	if got := h.states(p.id); !slices.Equal(got, wantStates) {
		t.Fatalf("log states %v, want %v", got, wantStates)
	}
	records, _ := h.log.Records(p.id)
	prepare := records[4]
	if !prepare.hasPartition(h.c.OffsetsPartition("group-a")) || !slices.Equal(prepare.Groups, []string{"group-a"}) {
		t.Fatalf("PrepareCommit record lacks the group: %+v", prepare)
	}

	// The retry after success is idempotent.
	wantErr(t, "EndTxn commit retry", h.endTxn(p, true), nil)
	wantErr(t, "EndTxn abort after commit", h.endTxn(p, false), ErrInvalidTxnState)
	if n := len(h.states(p.id)); n != len(wantStates) {
		t.Fatalf("retry wrote %d records", n-len(wantStates))
	}
	if err := h.c.VerifyPartition(p.typed(), tp("out", 1)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("VerifyPartition after commit: %v", err)
	}
	// The next transaction starts clean.
	h.add(p, tp("out", 2))
	if d := h.describe(p.id); d.State != StateOngoing || !slices.Equal(d.Partitions, []TopicPartition{tp("out", 2)}) {
		t.Fatalf("next transaction: %+v", d)
	}
}

// An abort writes ABORT markers and CompleteAbort; a retried abort succeeds.
func TestAbort(t *testing.T) {
	h := newHarness(t)
	p := h.init("app-1", 60000)
	h.add(p, tp("out", 0))
	wantErr(t, "EndTxn abort", h.endTxn(p, false), nil)
	h.waitIdle()
	calls := h.markers.succeeded()
	if len(calls) != 1 || calls[0].Commit || !slices.Equal(calls[0].Partitions, []TopicPartition{tp("out", 0)}) {
		t.Fatalf("markers %+v", calls)
	}
	wantErr(t, "EndTxn abort retry", h.endTxn(p, false), nil)
	wantErr(t, "EndTxn commit after abort", h.endTxn(p, true), ErrInvalidTxnState)
	if got := h.describe(p.id).State; got != StateCompleteAbort {
		t.Fatalf("state %s", got)
	}
}

// A second instance with the same transactional id fences the
// first. Its open transaction is aborted (markers at the fencing epoch)
// before the new instance gets its epoch, and every later request of the
// old instance is refused as fenced (the broker's tests check the code per
// request version).
func TestSecondInstanceFencesTheFirst(t *testing.T) {
	h := newHarness(t)
	zombie := h.init("app-1", 60000)
	h.add(zombie, tp("out", 0), tp("out", 1))
	fresh := h.init("app-1", 60000)
	if fresh.pid != zombie.pid || fresh.epoch != zombie.epoch+2 {
		t.Fatalf("new instance %+v, zombie %+v: want the same id, epoch +2 (fence, then bump)", fresh, zombie)
	}
	calls := h.markers.succeeded()
	if len(calls) != 1 || calls[0].Commit || calls[0].ProducerEpoch != zombie.epoch+1 ||
		!slices.Equal(calls[0].Partitions, []TopicPartition{tp("out", 0), tp("out", 1)}) {
		t.Fatalf("the zombie's transaction was not aborted with fencing markers: %+v", calls)
	}
	wantStates := []State{StateEmpty, StateOngoing, StatePrepareAbort, StateCompleteAbort, StateEmpty}
	if got := h.states("app-1"); !slices.Equal(got, wantStates) {
		t.Fatalf("log %v, want %v", got, wantStates)
	}
	wantErr(t, "zombie AddPartitions", h.addPartitions(zombie, tp("out", 2))[0], ErrProducerFenced)
	wantErr(t, "zombie AddOffsets", h.addOffsets(zombie, "g"), ErrProducerFenced)
	wantErr(t, "zombie EndTxn commit", h.endTxn(zombie, true), ErrProducerFenced)
	wantErr(t, "zombie EndTxn abort", h.endTxn(zombie, false), ErrProducerFenced)
	_, err := h.tryInit("app-1", 60000, &zombie)
	wantErr(t, "zombie KIP-360 InitProducerId", err, ErrProducerFenced)
	if err := h.c.VerifyPartition(zombie.typed(), tp("out", 0)); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("zombie produce verification: %v", err)
	}
	// The new instance works.
	h.add(fresh, tp("out", 0))
	wantErr(t, "fresh commit", h.endTxn(fresh, true), nil)
}

// Once PrepareCommit is durable the outcome is decided. The
// coordinator crashes while its markers fail; a new coordinator loading the
// log re-sends the COMMIT markers and writes CompleteCommit.
func TestCrashAfterPrepareCommitCompletesOnRestart(t *testing.T) {
	h := newHarness(t)
	h.cfg.CompletionWait = -1 // answer right after PrepareCommit, as Kafka does
	h.c.Close()
	h.start()
	p := h.init("app-1", 60000)
	h.add(p, tp("out", 0), tp("out", 5))
	h.markers.failures = 1 << 30 // every marker write fails
	wantErr(t, "EndTxn commit", h.endTxn(p, true), nil)
	testutil.Until(t, 10*time.Second, "a failed marker attempt", func() bool { return h.markers.attempts() > 0 })
	if got := h.describe(p.id).State; got != StatePrepareCommit {
		t.Fatalf("before the crash: %s", got)
	}
	wantErr(t, "AddPartitionsToTxn while completing", h.addPartitions(p, tp("out", 9))[0], ErrConcurrentTransactions)
	h.c.Close() // the crash: the completion goroutine stops

	h.markers.mu.Lock()
	h.markers.failures = 0
	h.markers.calls = nil
	h.markers.mu.Unlock()
	h.start()
	h.waitIdle()
	calls := h.markers.succeeded()
	if len(calls) != 1 || !calls[0].Commit || calls[0].ProducerEpoch != p.epoch ||
		!slices.Equal(calls[0].Partitions, []TopicPartition{tp("out", 0), tp("out", 5)}) {
		t.Fatalf("markers after restart: %+v", calls)
	}
	states := h.states(p.id)
	if states[len(states)-1] != StateCompleteCommit {
		t.Fatalf("log after restart: %v", states)
	}
	wantErr(t, "commit retry after restart", h.endTxn(p, true), nil)
}

// A marker writer that fails N times is retried until it succeeds; only
// then is CompleteCommit written. A partial failure retries only the
// partitions still missing their marker.
func TestMarkerFailuresAreRetried(t *testing.T) {
	h := newHarness(t)
	p := h.init("app-1", 60000)
	h.add(p, tp("out", 0))
	h.markers.failures = 3
	wantErr(t, "EndTxn commit", h.endTxn(p, true), nil)
	h.waitIdle()
	if got := h.markers.attempts(); got != 4 {
		t.Fatalf("%d marker attempts, want 4", got)
	}
	if got := h.describe(p.id).State; got != StateCompleteCommit {
		t.Fatalf("state %s", got)
	}

	partial := &partialMarkers{}
	h.c.Close()
	h.markers = nil
	c, err := NewCoordinator(h.cfg, h.log, h.ids, partial, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	t.Cleanup(func() { c.Close() })
	h.add(p, tp("a", 0), tp("b", 0))
	wantErr(t, "EndTxn abort", h.endTxn(p, false), nil)
	h.waitIdle()
	if len(partial.calls) != 2 || !slices.Equal(partial.calls[1], []TopicPartition{tp("b", 0)}) {
		t.Fatalf("partial retry calls %v", partial.calls)
	}
}

// partialMarkers fails partition b-0 on its first call.
type partialMarkers struct{ calls [][]TopicPartition }

func (f *partialMarkers) WriteMarkers(_ context.Context, _ int64, _ int16, _ int32, _ bool, partitions []TopicPartition) error {
	f.calls = append(f.calls, partitions)
	if len(f.calls) == 1 {
		return &MarkerError{Failed: []TopicPartition{tp("b", 0)}, Err: errMarkerWrite}
	}
	return nil
}

// A transaction open longer than its timeout is aborted by the coordinator
// with an epoch bump, so the producer that opened it is fenced.
func TestTimeoutAbortBumpsEpoch(t *testing.T) {
	h := newHarness(t)
	p := h.init("app-1", 1000)
	h.add(p, tp("out", 0))
	h.clock.Advance(1000 * time.Millisecond)
	if result, err := h.c.Tick(context.Background(), h.clock.Now()); err != nil || len(result.Aborted) != 0 {
		t.Fatalf("at the timeout exactly: %+v %v", result, err)
	}
	h.clock.Advance(time.Millisecond)
	result, err := h.c.Tick(context.Background(), h.clock.Now())
	if err != nil || !slices.Equal(result.Aborted, []string{"app-1"}) {
		t.Fatalf("past the timeout: %+v %v", result, err)
	}
	h.waitIdle()
	calls := h.markers.succeeded()
	if len(calls) != 1 || calls[0].Commit || calls[0].ProducerEpoch != p.epoch+1 {
		t.Fatalf("timeout markers %+v", calls)
	}
	d := h.describe(p.id)
	if d.State != StateCompleteAbort || d.ProducerEpoch != p.epoch+1 {
		t.Fatalf("after timeout: %+v", d)
	}
	wantErr(t, "EndTxn commit after timeout", h.endTxn(p, true), ErrProducerFenced)
	wantErr(t, "AddPartitions after timeout", h.addPartitions(p, tp("out", 0))[0], ErrProducerFenced)
	// A new session continues.
	next := h.init("app-1", 1000)
	if next.epoch != p.epoch+2 {
		t.Fatalf("epoch after timeout abort %d", next.epoch)
	}
}

// While a transaction completes, requests get CONCURRENT_TRANSACTIONS (or
// INVALID_TXN_STATE for the opposite decision); InitProducerId waits for
// the completion and answers CONCURRENT_TRANSACTIONS when it takes too long.
func TestConcurrentTransactionsWhileCompleting(t *testing.T) {
	h := newHarness(t)
	h.cfg.CompletionWait = -1
	h.c.Close()
	h.start()
	p := h.init("app-1", 60000)
	h.add(p, tp("out", 0))
	block := make(chan struct{})
	h.markers.mu.Lock()
	h.markers.block = block
	h.markers.mu.Unlock()
	wantErr(t, "EndTxn commit", h.endTxn(p, true), nil)
	wantErr(t, "EndTxn commit again", h.endTxn(p, true), ErrConcurrentTransactions)
	wantErr(t, "EndTxn abort", h.endTxn(p, false), ErrInvalidTxnState)
	wantErr(t, "AddPartitions", h.addPartitions(p, tp("out", 1))[0], ErrConcurrentTransactions)
	wantErr(t, "AddOffsets", h.addOffsets(p, "g"), ErrConcurrentTransactions)
	_, err := h.tryInit("app-1", 60000, nil)
	wantErr(t, "InitProducerId while completing", err, ErrConcurrentTransactions)
	close(block)
	h.waitIdle()
	next := h.init("app-1", 60000)
	if next.epoch != p.epoch+1 {
		t.Fatalf("epoch %d after completion", next.epoch)
	}
}

// Request validation: timeouts, unknown ids, KIP-360 bumps and their
// retries, unknown partitions, failed log appends.
func TestRequestErrors(t *testing.T) {
	h := newHarness(t)
	_, err := h.tryInit("x", 900001, nil)
	wantErr(t, "timeout above max", err, ErrInvalidTransactionTimeout)
	_, err = h.tryInit("x", 0, nil)
	wantErr(t, "zero timeout", err, ErrInvalidTransactionTimeout)
	_, err = h.tryInit("", 1000, nil)
	wantErr(t, "empty id", err, ErrInvalidRequest)
	unknown := producer{id: "nobody", pid: 5, epoch: 0}
	wantErr(t, "AddPartitions unknown id", h.addPartitions(unknown, tp("a", 0))[0], ErrInvalidProducerIDMapping)
	wantErr(t, "EndTxn unknown id", h.endTxn(unknown, true), ErrInvalidProducerIDMapping)
	_, err = h.c.DescribeTransaction("nobody")
	wantErr(t, "Describe unknown id", err, ErrTransactionalIDNotFound)
	wantErr(t, "AddOffsets empty group", h.addOffsets(unknown, ""), ErrInvalidRequest)

	// KIP-360: the producer bumps its own epoch; a retry of that bump
	// returns the same id and epoch.
	p := h.init("app", 1000)
	wantErr(t, "EndTxn with nothing open", h.endTxn(p, true), ErrInvalidTxnState)
	bumped, err := h.tryInit("app", 1000, &p)
	if err != nil || bumped.epoch != p.epoch+1 || bumped.pid != p.pid {
		t.Fatalf("KIP-360 bump: %+v %v", bumped, err)
	}
	retried, err := h.tryInit("app", 1000, &p)
	if err != nil || retried != bumped {
		t.Fatalf("KIP-360 retry: %+v %v, want %+v", retried, err, bumped)
	}
	wrongID := producer{id: "app", pid: p.pid + 100, epoch: bumped.epoch}
	_, err = h.tryInit("app", 1000, &wrongID)
	wantErr(t, "KIP-360 with another producer id", err, ErrProducerFenced)
	halfSet := producer{id: "app", pid: -1, epoch: bumped.epoch}
	_, err = h.tryInit("app", 1000, &halfSet)
	wantErr(t, "KIP-360 with only an epoch", err, ErrInvalidRequest)

	// A failed log append changes nothing and is retriable.
	h.log.FailAppends(1, nil)
	wantErr(t, "AddPartitions with a failing log", h.addPartitions(bumped, tp("a", 0))[0], ErrCoordinatorNotAvailable)
	if d := h.describe("app"); d.State != StateEmpty {
		t.Fatalf("state after failed append: %s", d.State)
	}
	h.add(bumped, tp("a", 0))

	// Unknown partitions.
	h.cfg.PartitionExists = func(topic string, _ int32) bool { return topic != "missing" }
	h.c.Close()
	h.start()
	errs := h.addPartitions(bumped, tp("a", 1), tp("missing", 0))
	wantErr(t, "known partition beside an unknown one", errs[0], ErrOperationNotAttempted)
	wantErr(t, "unknown partition", errs[1], ErrUnknownPartition)
	if d := h.describe("app"); !slices.Equal(d.Partitions, []TopicPartition{tp("a", 0)}) {
		t.Fatalf("a refused add changed the participants: %+v", d.Partitions)
	}
}

// The timer loop aborts a timed-out transaction by itself, offsets
// included (the group's offsets are dropped: commit=false).
func TestTimerLoopAbortsTimedOutTransactions(t *testing.T) {
	h := newHarness(t)
	h.cfg.CleanupInterval = time.Millisecond
	h.c.Close()
	h.start()
	p := h.init("app-1", 1000)
	h.add(p, tp("out", 0))
	wantErr(t, "AddOffsetsToTxn", h.addOffsets(p, "g"), nil)
	h.clock.Advance(2 * time.Second)
	testutil.Until(t, 10*time.Second, "the timer to abort the transaction", func() bool {
		m := h.c.snapshot("app-1")
		return m != nil && m.State == StateCompleteAbort
	})
	h.offsets.mu.Lock()
	defer h.offsets.mu.Unlock()
	if len(h.offsets.calls) != 1 || h.offsets.calls[0] != (offsetCall{"g", p.pid, p.epoch + 1, false}) {
		t.Fatalf("offsets completion %+v", h.offsets.calls)
	}
}
