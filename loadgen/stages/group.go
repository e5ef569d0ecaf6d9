package stages

import (
	"time"

	"context"
	"errors"
	"fmt"
)

// Group runs the workers of one consume stage, in one consumer group.
// Committed counts the stage's progress: output records of committed
// transactions or database commits (shared, atomic), or, under
// group-churn, the distinct input records the last stage committed (see
// IdentityCounter); each worker goroutine owns its client.
type Group struct {
	// Committed is the stage's progress, which the drain waits for.
	Committed Counter
	cancel    context.CancelFunc
	done      chan struct{}
	// errs receives at most one error per worker; read after done closes.
	errs chan error
	// OnBegin and OnEnd, when set (in a worker subprocess), are called by
	// a transact worker's goroutine when a transaction with records
	// begins and when it ends, with the records it committed (0 if it
	// did not).
	OnBegin func()
	OnEnd   func(committed int64, outcome TransactionEnd)
	// Watch follows the workers' partition assignments (the load waits
	// for it to settle); Schedule, when set, runs the client fault's
	// schedule (consumer-crash, group-churn) once the load's clock has
	// started.
	Watch    *AssignmentWatch
	Schedule func()
	// Identities, when set (group-churn), counts the distinct records the
	// last stage committed into Committed, instead of output records.
	Identities *IdentityCounter
}

// TransactionEnd is how a transact worker's transaction ended, for
// Group.OnEnd: whether it committed, was aborted on purpose, and how long
// ending it took.
type TransactionEnd struct {
	Committed, Aborted bool
	Took               time.Duration
}

// NewGroup returns a group of workers goroutines, not yet started, and
// the context its workers run in (Cancel and Stop end it).
func NewGroup(ctx context.Context, workers int) (*Group, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	return &Group{Committed: NewCounter(), cancel: cancel, done: make(chan struct{}), errs: make(chan error, workers),
		Watch: NewAssignmentWatch(workers)}, ctx
}

// NewChurningGroup returns a group whose workers start and end on the
// caller's schedule (group-churn's waves) instead of RunWorkers': its
// watch follows slots workers, and up to maxWorkers of them may fail. The
// caller reports a worker's error with Fail and calls Finish once every
// worker returned.
func NewChurningGroup(ctx context.Context, slots, maxWorkers int) (*Group, context.Context) {
	p, ctx := NewGroup(ctx, slots)
	p.errs = make(chan error, maxWorkers)
	return p, ctx
}

// Fail reports a worker's error (NewChurningGroup).
func (p *Group) Fail(err error) { p.errs <- err }

// Finish ends a churning group once every worker returned: Stop returns.
func (p *Group) Finish() {
	close(p.done)
	close(p.errs)
}

// RunWorkers runs work once per worker index on its own goroutine and
// closes done and errs when all have returned.
func (p *Group) RunWorkers(workers int, work func(index int) error) {
	finished := make(chan struct{}, workers)
	for index := range workers {
		go func() {
			defer func() { finished <- struct{}{} }()
			if err := work(index); err != nil {
				p.errs <- fmt.Errorf("pipeline worker %d: %w", index, err)
			}
		}()
	}
	go func() {
		for range workers {
			<-finished
		}
		close(p.done)
		close(p.errs)
	}()
}

// Cancel ends the workers' context (a group whose workers failed to
// start).
func (p *Group) Cancel() { p.cancel() }

// Stop stops the workers and returns their errors.
func (p *Group) Stop() error {
	p.cancel()
	<-p.done
	var errs []error
	for err := range p.errs {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
