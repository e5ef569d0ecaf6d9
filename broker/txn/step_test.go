package txn

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// stepDriver is a Driver that does nothing by itself: completions queue up
// until the test steps them, Await never waits, and time moves only when
// the test calls Tick.
type stepDriver struct {
	mu          sync.Mutex
	completions []*Completion
}

func (d *stepDriver) Start(*Coordinator) {}

func (d *stepDriver) Complete(w *Completion) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.completions = append(d.completions, w)
}

func (d *stepDriver) Await(_ context.Context, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func (d *stepDriver) Stop() {}

// take returns the completions handed over since the last take.
func (d *stepDriver) take() []*Completion {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.completions
	d.completions = nil
	return out
}

// newStepHarness is a harness whose coordinator runs on a stepDriver.
func newStepHarness(t *testing.T) (*harness, *stepDriver) {
	t.Helper()
	clk := newClock()
	d := &stepDriver{}
	cfg := testConfig(clk)
	cfg.Driver = d
	h := &harness{t: t, clock: clk, log: NewMemoryLog(), ids: &sequentialIDs{}, markers: &fakeMarkers{}, offsets: &fakeOffsets{}, cfg: cfg}
	h.start()
	return h, d
}

// step makes one Completion step and checks its outcome.
func step(t *testing.T, what string, w *Completion, wantDone bool, wantErrIs error) {
	t.Helper()
	done, err := w.Step(context.Background())
	if done != wantDone {
		t.Fatalf("%s: done %v (error %v), want %v", what, done, err, wantDone)
	}
	wantErr(t, what, err, wantErrIs)
}

// The core is driven step by step, as etcd raft's is: requests are calls,
// time moves only by Tick(now), and the second phase of a transaction
// moves only when its Completion is stepped — no goroutines, no sleeps.
// A transaction times out exactly past its deadline, and its abort is
// completed with the marker writes failing twice, then succeeding.
func TestStepByStepTimeoutAndCompletion(t *testing.T) {
	h, d := newStepHarness(t)
	ctx := context.Background()
	p := h.init("app", 1000)
	h.add(p, tp("out", 0), tp("out", 1))
	start := h.clock.Now()
	tick := func(at time.Duration) TickResult {
		t.Helper()
		result, err := h.c.Tick(ctx, start.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		return result
	}

	// Step 0: the 1 s timeout. Not before it, not at it (Kafka aborts a
	// transaction open longer than its timeout), but 1 ms after.
	if result := tick(999 * time.Millisecond); len(result.Aborted) != 0 {
		t.Fatalf("aborted before the timeout: %+v", result)
	}
	if result := tick(time.Second); len(result.Aborted) != 0 {
		t.Fatalf("aborted at the timeout exactly: %+v", result)
	}
	if got := h.describe("app").State; got != StateOngoing {
		t.Fatalf("state before the deadline passed: %s", got)
	}
	if result := tick(time.Second + time.Millisecond); !slices.Equal(result.Aborted, []string{"app"}) {
		t.Fatalf("not aborted past the timeout: %+v", result)
	}
	// The abort is decided (PrepareAbort, epoch bumped to fence p) and
	// handed to the driver; nothing has happened to the participants.
	completions := d.take()
	if len(completions) != 1 || completions[0].TransactionalID() != "app" || completions[0].Commit() {
		t.Fatalf("completions handed over: %+v", completions)
	}
	w := completions[0]
	if m := h.describe("app"); m.State != StatePrepareAbort || m.ProducerEpoch != p.epoch+1 {
		t.Fatalf("after the timeout: %+v", m)
	}
	if n := h.markers.attempts(); n != 0 {
		t.Fatalf("%d marker writes before the first step", n)
	}
	// Meanwhile the old producer is fenced, and a new instance must wait.
	wantErr(t, "EndTxn of the timed-out producer", h.endTxn(p, true), ErrProducerFenced)
	_, err := h.tryInit("app", 1000, nil)
	wantErr(t, "InitProducerId while the abort completes", err, ErrConcurrentTransactions)

	// Steps 1–3: the markers fail twice; each failed step leaves the
	// state in PrepareAbort; the third writes them and CompleteAbort.
	h.markers.failures = 2
	step(t, "first step", w, false, errMarkerWrite)
	step(t, "second step", w, false, errMarkerWrite)
	if got := h.describe("app").State; got != StatePrepareAbort {
		t.Fatalf("state after failed steps: %s", got)
	}
	step(t, "third step", w, true, nil)
	calls := h.markers.succeeded()
	if h.markers.attempts() != 3 || len(calls) != 1 || calls[0].Commit || calls[0].ProducerEpoch != p.epoch+1 ||
		!slices.Equal(calls[0].Partitions, []TopicPartition{tp("out", 0), tp("out", 1)}) {
		t.Fatalf("marker writes: %d attempts, succeeded %+v", h.markers.attempts(), calls)
	}
	if got := h.describe("app").State; got != StateCompleteAbort {
		t.Fatalf("state after the completing step: %s", got)
	}
	step(t, "step after done", w, true, nil)
	if h.markers.attempts() != 3 {
		t.Fatal("a step after done wrote markers again")
	}
	// The new instance gets the epoch after the fencing one.
	if next := h.init("app", 1000); next.epoch != p.epoch+2 {
		t.Fatalf("new instance at epoch %d, want %d", next.epoch, p.epoch+2)
	}
}

// A commit's completion step by step: markers fail, then the Complete
// record's append fails after markers and offsets succeeded (neither is
// redone), and a coordinator restarted in PrepareCommit hands the
// completion over again at load.
func TestStepByStepCommitCompletion(t *testing.T) {
	h, d := newStepHarness(t)
	p := h.init("app", 60000)
	h.add(p, tp("out", 0))
	wantErr(t, "AddOffsets", h.addOffsets(p, "g"), nil)
	// EndTxn answers once PrepareCommit is durable; the driver's Await
	// does not wait for the completion.
	wantErr(t, "EndTxn commit", h.endTxn(p, true), nil)
	w := d.take()[0]

	// Step 1 fails at the markers: the group is not completed yet.
	h.markers.failures = 1
	step(t, "markers failing", w, false, errMarkerWrite)
	if len(h.offsets.calls) != 0 {
		t.Fatalf("offsets completed before the markers: %+v", h.offsets.calls)
	}
	// Step 2: markers and offsets succeed, the CompleteCommit append fails.
	h.log.FailAppends(1, nil)
	step(t, "complete record failing", w, false, ErrCoordinatorNotAvailable)
	if len(h.markers.succeeded()) != 1 || len(h.offsets.calls) != 1 || h.offsets.calls[0] != (offsetCall{"g", p.pid, p.epoch, true}) {
		t.Fatalf("after step 2: markers %+v, offsets %+v", h.markers.succeeded(), h.offsets.calls)
	}
	if got := h.describe("app").State; got != StatePrepareCommit {
		t.Fatalf("state after a failed Complete append: %s", got)
	}
	// Step 3 fails at the Complete append again, without redoing the
	// markers or the offsets.
	h.log.FailAppends(1, nil)
	step(t, "complete record failing again", w, false, ErrCoordinatorNotAvailable)
	if h.markers.attempts() != 2 || len(h.offsets.calls) != 1 {
		t.Fatalf("step 3 redid work: %d marker attempts, offsets %+v", h.markers.attempts(), h.offsets.calls)
	}

	// A crash before step 4: the old completion refuses to step, and the
	// restarted coordinator hands over a new one, which re-sends the
	// markers (idempotent for the partitions) and completes the group again.
	h.c.Close()
	step(t, "step after Close", w, false, ErrCoordinatorClosed)
	h.start()
	restarted := d.take()
	if len(restarted) != 1 || !restarted[0].Commit() {
		t.Fatalf("completions at load: %+v", restarted)
	}
	step(t, "step after restart", restarted[0], true, nil)
	if got := h.describe("app").State; got != StateCompleteCommit {
		t.Fatalf("state after the restart's step: %s", got)
	}
	if n := len(h.markers.succeeded()); n != 2 {
		t.Fatalf("%d successful marker writes, want 2 (before and after the restart)", n)
	}
	if wantStates := []State{StateEmpty, StateOngoing, StateOngoing, StatePrepareCommit, StateCompleteCommit}; !slices.Equal(h.states("app"), wantStates) {
		t.Fatalf("log states %v, want %v", h.states("app"), wantStates)
	}
}
