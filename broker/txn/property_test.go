package txn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// model is what a correct coordinator does for one transactional id shared
// by two producer instances (the newest instance wins).
type model struct {
	// current is the producer id and epoch the coordinator holds.
	current producer
	// state is Empty, Ongoing, CompleteCommit or CompleteAbort (every
	// EndTxn and fence completes before the reply in this test).
	state State
	// partitions are the open transaction's data partitions.
	partitions []TopicPartition
	// start is when the open transaction started.
	start time.Time
}

// Random requests from two instances sharing a transactional id, checked
// against the model after each step: no fenced instance ever gets a
// success, the current one gets exactly the answer the model predicts,
// and every commit's markers carry the current epoch and exactly the
// participants.
func TestPropertyFencedProducerNeverSucceeds(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { runFencingProperty(t, uint64(seed)) })
	}
}

// propertyRun is one random run: the harness, the model, the two
// instances and the trace of operations for failure messages.
type propertyRun struct {
	t           *testing.T
	seed        uint64
	rng         *rand.Rand
	h           *harness
	m           model
	instances   [2]producer
	initialized [2]bool
	trace       []string
}

const sharedID = "shared"

func runFencingProperty(t *testing.T, seed uint64) {
	r := &propertyRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 99)), h: newHarness(t)}
	for range 40 {
		i := r.rng.IntN(2)
		op := r.rng.IntN(7)
		if !r.initialized[i] {
			op = 0
		}
		r.trace = append(r.trace, fmt.Sprintf("%d:op%d", i, op))
		switch op {
		case 0:
			r.initProducerID(i)
		case 1, 2:
			r.addPartition(i)
		case 3, 4:
			r.endTxn(i, op == 3)
		case 5:
			r.verify(i)
		case 6:
			r.tick()
		}
		d, err := r.h.c.DescribeTransaction(sharedID)
		if err == nil && (d.State != r.m.state || d.ProducerEpoch != r.m.current.epoch) {
			r.fail("coordinator %s epoch %d, model %s epoch %d", d.State, d.ProducerEpoch, r.m.state, r.m.current.epoch)
		}
	}
}

func (r *propertyRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d after %v: %s", r.seed, r.trace, fmt.Sprintf(format, args...))
}

// fenced reports whether instance i no longer holds the current epoch.
func (r *propertyRun) fenced(i int) bool { return r.instances[i] != r.m.current }

// initProducerID: always succeeds and makes i current; an open transaction
// is aborted first (markers), costing one more epoch.
func (r *propertyRun) initProducerID(i int) {
	open := r.m.state == StateOngoing
	markersBefore := len(r.h.markers.succeeded())
	p, err := r.h.tryInit(sharedID, 1000, nil)
	if err != nil {
		r.fail("InitProducerId: %v", err)
	}
	wantEpoch := r.m.current.epoch + 1
	if open {
		wantEpoch++
		calls := r.h.markers.succeeded()[markersBefore:]
		if len(calls) != 1 || calls[0].Commit || !slices.Equal(calls[0].Partitions, r.m.partitions) {
			r.fail("fencing abort markers %+v, want abort of %v", calls, r.m.partitions)
		}
	}
	if (r.initialized[0] || r.initialized[1]) && (p.pid != r.m.current.pid || p.epoch != wantEpoch) {
		r.fail("InitProducerId gave %+v, want epoch %d", p, wantEpoch)
	}
	r.instances[i], r.initialized[i] = p, true
	r.m.current, r.m.state, r.m.partitions = p, StateEmpty, nil
}

// addPartition: the current instance always succeeds; a fenced one never.
func (r *propertyRun) addPartition(i int) {
	partition := tp("t", int32(r.rng.IntN(3)))
	err := r.h.addPartitions(r.instances[i], partition)[0]
	if r.fenced(i) {
		r.checkFenced("AddPartitions", err)
		return
	}
	if err != nil {
		r.fail("AddPartitions by the current producer: %v", err)
	}
	if r.m.state != StateOngoing {
		r.m.partitions, r.m.start = nil, r.h.clock.Now()
	}
	if !slices.Contains(r.m.partitions, partition) {
		r.m.partitions = append(r.m.partitions, partition)
		slices.SortFunc(r.m.partitions, compareTopicPartitions)
	}
	r.m.state = StateOngoing
}

// endTxn: with markers failing up to twice, the current instance's EndTxn
// completes with markers on exactly the participants at its epoch; a
// repeat of a completed decision succeeds; the opposite decision or no
// open transaction is INVALID_TXN_STATE; a fenced instance is refused.
func (r *propertyRun) endTxn(i int, commit bool) {
	r.h.markers.mu.Lock()
	r.h.markers.failures = r.rng.IntN(3)
	r.h.markers.mu.Unlock()
	markersBefore := len(r.h.markers.succeeded())
	err := r.h.endTxn(r.instances[i], commit)
	if r.fenced(i) {
		r.checkFenced("EndTxn", err)
		return
	}
	var want error
	switch {
	case r.m.state == StateOngoing:
		calls := r.h.markers.succeeded()[markersBefore:]
		if len(calls) != 1 || calls[0].Commit != commit || calls[0].ProducerEpoch != r.m.current.epoch ||
			!slices.Equal(calls[0].Partitions, r.m.partitions) {
			r.fail("EndTxn markers %+v, want commit=%v epoch %d on %v", calls, commit, r.m.current.epoch, r.m.partitions)
		}
		r.m.state, r.m.partitions = StateCompleteAbort, nil
		if commit {
			r.m.state = StateCompleteCommit
		}
	case r.m.state == StateCompleteCommit && commit, r.m.state == StateCompleteAbort && !commit:
	default:
		want = ErrInvalidTxnState
	}
	if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
		r.fail("EndTxn(commit=%v) in %s: %v, want %v", commit, r.m.state, err, want)
	}
}

// verify: produce verification passes only for the current instance on a
// partition of its open transaction.
func (r *propertyRun) verify(i int) {
	partition := tp("t", int32(r.rng.IntN(3)))
	err := r.h.c.VerifyPartition(r.instances[i].typed(), partition)
	wantOK := !r.fenced(i) && r.m.state == StateOngoing && slices.Contains(r.m.partitions, partition)
	if (err == nil) != wantOK {
		r.fail("VerifyPartition %s: %v, want ok=%v", partition, err, wantOK)
	}
}

// tick: time passes; a transaction open past its 1 s timeout is aborted
// with an epoch bump, which fences both instances.
func (r *propertyRun) tick() {
	r.h.clock.Advance(time.Duration(r.rng.IntN(1500)) * time.Millisecond)
	result, err := r.h.c.Tick(context.Background(), r.h.clock.Now())
	if err != nil {
		r.fail("Tick: %v", err)
	}
	wantAbort := r.m.state == StateOngoing && r.h.clock.Now().Sub(r.m.start) > time.Second
	if (len(result.Aborted) > 0) != wantAbort {
		r.fail("Tick aborted %v; model: state %s open for %v", result.Aborted, r.m.state, r.h.clock.Now().Sub(r.m.start))
	}
	if wantAbort {
		r.h.waitIdle()
		r.m.current.epoch++
		r.m.state, r.m.partitions = StateCompleteAbort, nil
	}
}

// checkFenced fails unless err is the fencing error.
func (r *propertyRun) checkFenced(api string, err error) {
	if !errors.Is(err, ErrProducerFenced) {
		r.fail("%s from a fenced producer: %v, want %v", api, err, ErrProducerFenced)
	}
}
