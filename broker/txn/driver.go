package txn

import (
	"context"
	"sync"
	"time"
)

// Driver runs what the coordinator does not do by itself: it moves time
// (calls Tick), steps each Completion until it is done, and bounds how
// long a request waits for a completion. The coordinator's core starts no
// goroutine, sets no timer and reads the clock only through Config.Now;
// everything that needs one goes through its Driver, so a test can drive
// the coordinator step by step with a driver that does nothing by itself.
type Driver interface {
	// Start is called once by NewCoordinator, after the log is loaded
	// and before any completion is handed over.
	Start(c *Coordinator)
	// Complete hands over the completion of a transaction that entered
	// PrepareCommit or PrepareAbort (or was found there at load); the
	// driver calls w.Step until it reports done or the coordinator
	// closes. It is called with the transaction's lock held: it must not
	// block or call the coordinator.
	Complete(w *Completion)
	// Await waits, for a request, until done is closed (the completion
	// the request depends on is durable), ctx ends, or the driver gives
	// up; it reports whether done was closed. done may be nil (never
	// closed).
	Await(ctx context.Context, done <-chan struct{}) bool
	// Stop is called once by Close: the driver stops calling the
	// coordinator and returns when no call of its own is running.
	Stop()
}

// GoroutineDriver is the production Driver: one goroutine calls Tick every
// Config.CleanupInterval with Config.Now, one goroutine per completion
// calls Step with Config.MarkerRetryBackoff between failed attempts, and
// Await waits at most Config.CompletionWait (not at all when negative).
type GoroutineDriver struct {
	// ctx is canceled by Stop; every call the driver makes runs under it.
	ctx    context.Context
	cancel context.CancelFunc
	// mu guards c and stopped; wg counts the driver's goroutines.
	mu      sync.Mutex
	c       *Coordinator
	stopped bool
	wg      sync.WaitGroup
}

// NewGoroutineDriver returns a production driver for one coordinator
// (Config.Driver; NewCoordinator makes one when it is nil).
func NewGoroutineDriver() *GoroutineDriver {
	ctx, cancel := context.WithCancel(context.Background())
	return &GoroutineDriver{ctx: ctx, cancel: cancel}
}

// Start starts the ticker, unless Config.CleanupInterval is negative.
func (d *GoroutineDriver) Start(c *Coordinator) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.c = c
	if c.cfg.CleanupInterval > 0 && !d.stopped {
		d.wg.Add(1)
		go d.tick(c)
	}
}

// tick calls Tick every CleanupInterval until Stop.
func (d *GoroutineDriver) tick(c *Coordinator) {
	defer d.wg.Done()
	ticker := time.NewTicker(c.cfg.CleanupInterval)
	defer ticker.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-ticker.C:
			// Errors are retried at the next tick; the state is unchanged.
			_, _ = c.Tick(d.ctx, c.cfg.Now())
		}
	}
}

// Complete starts a goroutine stepping w.
func (d *GoroutineDriver) Complete(w *Completion) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return // the next coordinator to load the log completes it
	}
	d.wg.Add(1)
	go d.complete(w)
}

// complete steps w until it is done or the driver stops.
func (d *GoroutineDriver) complete(w *Completion) {
	defer d.wg.Done()
	for {
		if done, _ := w.Step(d.ctx); done {
			return
		}
		timer := time.NewTimer(w.c.cfg.MarkerRetryBackoff)
		select {
		case <-d.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// Await waits at most Config.CompletionWait.
func (d *GoroutineDriver) Await(ctx context.Context, done <-chan struct{}) bool {
	d.mu.Lock()
	c := d.c
	d.mu.Unlock()
	if c == nil || c.cfg.CompletionWait < 0 {
		return false
	}
	timer := time.NewTimer(c.cfg.CompletionWait)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-ctx.Done():
	case <-d.ctx.Done():
	case <-timer.C:
	}
	return false
}

// Stop cancels the running calls and waits for the driver's goroutines.
func (d *GoroutineDriver) Stop() {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}
