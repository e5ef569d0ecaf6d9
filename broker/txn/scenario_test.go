package txn

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// Seed §3.2.2: a producer writes to two partitions and commits a consumer
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
	expectCode(t, "AddOffsetsToTxn", h.addOffsets(p, 3, "group-a"), nil)
	if err := h.c.VerifyPartition(p.id, p.pid, p.epoch, "out", 1); err != nil {
		t.Fatalf("VerifyPartition of an added partition: %v", err)
	}
	expectCode(t, "EndTxn commit", h.endTxn(p, 3, true).ErrorCode, nil)
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
	expectCode(t, "EndTxn commit retry", h.endTxn(p, 3, true).ErrorCode, nil)
	expectCode(t, "EndTxn abort after commit", h.endTxn(p, 3, false).ErrorCode, kerr.InvalidTxnState)
	if n := len(h.states(p.id)); n != len(wantStates) {
		t.Fatalf("retry wrote %d records", n-len(wantStates))
	}
	if err := h.c.VerifyPartition(p.id, p.pid, p.epoch, "out", 1); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("VerifyPartition after commit: %v", err)
	}
	// The next transaction starts clean.
	h.add(p, tp("out", 2))
	if d := h.describe(p.id); d.State != "Ongoing" || len(d.Topics) != 1 || !slices.Equal(d.Topics[0].Partitions, []int32{2}) {
		t.Fatalf("next transaction: %+v", d)
	}
}

// An abort writes ABORT markers and CompleteAbort; a retried abort succeeds.
func TestAbort(t *testing.T) {
	h := newHarness(t)
	p := h.init("app-1", 60000)
	h.add(p, tp("out", 0))
	expectCode(t, "EndTxn abort", h.endTxn(p, 1, false).ErrorCode, nil)
	h.waitIdle()
	calls := h.markers.succeeded()
	if len(calls) != 1 || calls[0].Commit || !slices.Equal(calls[0].Partitions, []TopicPartition{tp("out", 0)}) {
		t.Fatalf("markers %+v", calls)
	}
	expectCode(t, "EndTxn abort retry", h.endTxn(p, 1, false).ErrorCode, nil)
	expectCode(t, "EndTxn commit after abort", h.endTxn(p, 1, true).ErrorCode, kerr.InvalidTxnState)
	if got := h.describe(p.id).State; got != "CompleteAbort" {
		t.Fatalf("state %s", got)
	}
}

// Seed §3.2.2: a second instance with the same transactional id fences the
// first. Its open transaction is aborted (markers at the fencing epoch)
// before the new instance gets its epoch, and every later request of the
// old instance is refused with PRODUCER_FENCED (INVALID_PRODUCER_EPOCH on
// versions before KIP-588).
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
	expectCode(t, "zombie AddPartitionsToTxn v3", h.addPartitions(zombie, 3, tp("out", 2))[0], kerr.ProducerFenced)
	expectCode(t, "zombie AddPartitionsToTxn v1", h.addPartitions(zombie, 1, tp("out", 2))[0], kerr.InvalidProducerEpoch)
	expectCode(t, "zombie AddOffsetsToTxn v3", h.addOffsets(zombie, 3, "g"), kerr.ProducerFenced)
	expectCode(t, "zombie AddOffsetsToTxn v1", h.addOffsets(zombie, 1, "g"), kerr.InvalidProducerEpoch)
	expectCode(t, "zombie EndTxn commit v3", h.endTxn(zombie, 3, true).ErrorCode, kerr.ProducerFenced)
	expectCode(t, "zombie EndTxn abort v1", h.endTxn(zombie, 1, false).ErrorCode, kerr.InvalidProducerEpoch)
	if _, code := h.tryInit("app-1", 60000, 4, &zombie); code != kerr.ProducerFenced.Code {
		t.Fatalf("zombie KIP-360 InitProducerId: %v", kerr.ErrorForCode(code))
	}
	if err := h.c.VerifyPartition(zombie.id, zombie.pid, zombie.epoch, "out", 0); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("zombie produce verification: %v", err)
	}
	// The new instance works.
	h.add(fresh, tp("out", 0))
	expectCode(t, "fresh commit", h.endTxn(fresh, 3, true).ErrorCode, nil)
}

// Seed §5.1: once PrepareCommit is durable the outcome is decided. The
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
	expectCode(t, "EndTxn commit", h.endTxn(p, 3, true).ErrorCode, nil)
	waitFor(t, "a failed marker attempt", func() bool { return h.markers.attempts() > 0 })
	if got := h.describe(p.id).State; got != "PrepareCommit" {
		t.Fatalf("before the crash: %s", got)
	}
	expectCode(t, "AddPartitionsToTxn while completing", h.addPartitions(p, 3, tp("out", 9))[0], kerr.ConcurrentTransactions)
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
	expectCode(t, "commit retry after restart", h.endTxn(p, 3, true).ErrorCode, nil)
}

// A marker writer that fails N times is retried until it succeeds; only
// then is CompleteCommit written. A partial failure retries only the
// partitions still missing their marker.
func TestMarkerFailuresAreRetried(t *testing.T) {
	h := newHarness(t)
	p := h.init("app-1", 60000)
	h.add(p, tp("out", 0))
	h.markers.failures = 3
	expectCode(t, "EndTxn commit", h.endTxn(p, 3, true).ErrorCode, nil)
	h.waitIdle()
	if got := h.markers.attempts(); got != 4 {
		t.Fatalf("%d marker attempts, want 4", got)
	}
	if got := h.describe(p.id).State; got != "CompleteCommit" {
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
	expectCode(t, "EndTxn abort", h.endTxn(p, 3, false).ErrorCode, nil)
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
	if result, err := h.c.Tick(context.Background()); err != nil || len(result.Aborted) != 0 {
		t.Fatalf("at the timeout exactly: %+v %v", result, err)
	}
	h.clock.Advance(time.Millisecond)
	result, err := h.c.Tick(context.Background())
	if err != nil || !slices.Equal(result.Aborted, []string{"app-1"}) {
		t.Fatalf("past the timeout: %+v %v", result, err)
	}
	h.waitIdle()
	calls := h.markers.succeeded()
	if len(calls) != 1 || calls[0].Commit || calls[0].ProducerEpoch != p.epoch+1 {
		t.Fatalf("timeout markers %+v", calls)
	}
	d := h.describe(p.id)
	if d.State != "CompleteAbort" || d.ProducerEpoch != p.epoch+1 {
		t.Fatalf("after timeout: %+v", d)
	}
	expectCode(t, "EndTxn commit after timeout", h.endTxn(p, 3, true).ErrorCode, kerr.ProducerFenced)
	expectCode(t, "AddPartitions after timeout", h.addPartitions(p, 3, tp("out", 0))[0], kerr.ProducerFenced)
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
	expectCode(t, "EndTxn commit", h.endTxn(p, 3, true).ErrorCode, nil)
	expectCode(t, "EndTxn commit again", h.endTxn(p, 3, true).ErrorCode, kerr.ConcurrentTransactions)
	expectCode(t, "EndTxn abort", h.endTxn(p, 3, false).ErrorCode, kerr.InvalidTxnState)
	expectCode(t, "AddPartitions", h.addPartitions(p, 3, tp("out", 1))[0], kerr.ConcurrentTransactions)
	expectCode(t, "AddOffsets", h.addOffsets(p, 3, "g"), kerr.ConcurrentTransactions)
	if _, code := h.tryInit("app-1", 60000, 4, nil); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("InitProducerId while completing: %v", kerr.ErrorForCode(code))
	}
	close(block)
	h.waitIdle()
	next := h.init("app-1", 60000)
	if next.epoch != p.epoch+1 {
		t.Fatalf("epoch %d after completion", next.epoch)
	}
}

// Request validation: timeouts, unknown ids, the idempotent path, KIP-360
// bumps and their retries, unknown partitions, failed log appends.
func TestRequestErrors(t *testing.T) {
	h := newHarness(t)
	if _, code := h.tryInit("x", 900001, 4, nil); code != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout above max: %v", kerr.ErrorForCode(code))
	}
	if _, code := h.tryInit("x", 0, 4, nil); code != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("zero timeout: %v", kerr.ErrorForCode(code))
	}
	if _, code := h.tryInit("", 1000, 4, nil); code != kerr.InvalidRequest.Code {
		t.Fatalf("empty id: %v", kerr.ErrorForCode(code))
	}
	unknown := producer{id: "nobody", pid: 5, epoch: 0}
	expectCode(t, "AddPartitions unknown id", h.addPartitions(unknown, 3, tp("a", 0))[0], kerr.InvalidProducerIDMapping)
	expectCode(t, "EndTxn unknown id", h.endTxn(unknown, 3, true).ErrorCode, kerr.InvalidProducerIDMapping)
	expectCode(t, "Describe unknown id", h.describe("nobody").ErrorCode, kerr.TransactionalIDNotFound)

	// Idempotent producers: a new id at epoch 0 each time.
	idem := kmsg.NewPtrInitProducerIDRequest()
	first, second := h.c.InitProducerID(context.Background(), idem), h.c.InitProducerID(context.Background(), idem)
	if first.ErrorCode != 0 || first.ProducerEpoch != 0 || second.ProducerID == first.ProducerID {
		t.Fatalf("idempotent init: %+v %+v", first, second)
	}

	// KIP-360: the producer bumps its own epoch; a retry of that bump
	// returns the same id and epoch.
	p := h.init("app", 1000)
	expectCode(t, "EndTxn with nothing open", h.endTxn(p, 3, true).ErrorCode, kerr.InvalidTxnState)
	bumped, code := h.tryInit("app", 1000, 4, &p)
	if code != 0 || bumped.epoch != p.epoch+1 || bumped.pid != p.pid {
		t.Fatalf("KIP-360 bump: %+v %v", bumped, kerr.ErrorForCode(code))
	}
	retried, code := h.tryInit("app", 1000, 4, &p)
	if code != 0 || retried != bumped {
		t.Fatalf("KIP-360 retry: %+v %v, want %+v", retried, kerr.ErrorForCode(code), bumped)
	}
	wrongID := producer{id: "app", pid: p.pid + 100, epoch: bumped.epoch}
	if _, code := h.tryInit("app", 1000, 4, &wrongID); code != kerr.ProducerFenced.Code {
		t.Fatalf("KIP-360 with another producer id: %v", kerr.ErrorForCode(code))
	}
	if _, code := h.tryInit("app", 1000, 3, &wrongID); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("KIP-360 v3 with another producer id: %v", kerr.ErrorForCode(code))
	}

	// A failed log append changes nothing and is retriable.
	h.log.FailAppends(1, nil)
	expectCode(t, "AddPartitions with a failing log", h.addPartitions(bumped, 3, tp("a", 0))[0], kerr.CoordinatorNotAvailable)
	if d := h.describe("app"); d.State != "Empty" {
		t.Fatalf("state after failed append: %s", d.State)
	}
	h.add(bumped, tp("a", 0))

	// Unknown partitions.
	h.cfg.PartitionExists = func(topic string, _ int32) bool { return topic != "missing" }
	h.c.Close()
	h.start()
	codes := h.addPartitions(bumped, 3, tp("a", 1), tp("missing", 0))
	if codes[0] != kerr.OperationNotAttempted.Code || codes[1] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition codes %v", codes)
	}
	if d := h.describe("app"); len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 1 {
		t.Fatalf("a refused add changed the participants: %+v", d.Topics)
	}
}

// waitFor polls cond until it holds, failing after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
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
	expectCode(t, "AddOffsetsToTxn", h.addOffsets(p, 3, "g"), nil)
	h.clock.Advance(2 * time.Second)
	waitFor(t, "the timer to abort the transaction", func() bool {
		m := h.c.snapshot("app-1")
		return m != nil && m.State == StateCompleteAbort
	})
	h.offsets.mu.Lock()
	defer h.offsets.mu.Unlock()
	if len(h.offsets.calls) != 1 || h.offsets.calls[0] != (offsetCall{"g", p.pid, p.epoch + 1, false}) {
		t.Fatalf("offsets completion %+v", h.offsets.calls)
	}
}
