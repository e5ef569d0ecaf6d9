package txn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// This file is the second phase: once PrepareCommit or PrepareAbort is
// durable the outcome is decided (unlike two-phase commit, the
// participants are not asked). What is left — the markers to every
// participant, the groups' offsets, then CompleteCommit or CompleteAbort —
// is a Completion, handed to the Driver, which calls Step until it is
// done. The coordinator runs no goroutine and sets no timer for it: the
// production driver ([GoroutineDriver]) steps each completion on its own
// goroutine with a pause between attempts; a test steps it by hand. A
// coordinator that loads a Prepare* state hands over the same Completion.

// Completion is the second phase of one transaction in PrepareCommit or
// PrepareAbort. It owns only its copy of the prepared state and the lists
// of parts still to do; Step takes the id's lock only to write Complete*.
// No request moves an id out of Prepare*, so nothing races it.
type Completion struct {
	c        *Coordinator
	e        *entry
	prepared Metadata
	commit   bool
	// done is closed when Complete* is durable; requests that wait for
	// the completion (Driver.Await) select on it.
	done chan struct{}

	// mu serializes Steps and guards the lists below.
	mu sync.Mutex
	// markers are the data partitions still missing their marker
	// (__consumer_offsets partitions get none: groups are completed by
	// the OffsetCommitter instead).
	markers []TopicPartition
	// groups are the groups whose offsets are still to be completed.
	groups []string
	// finished is set once Step reported done.
	finished bool
}

// startCompletion creates the Completion of e's Prepare* state and hands
// it to the driver; the caller holds e.mu (or owns e exclusively during
// load).
func (c *Coordinator) startCompletion(e *entry) {
	prepared := e.meta.clone()
	w := &Completion{c: c, e: e, prepared: prepared, commit: prepared.State == StatePrepareCommit, done: make(chan struct{})}
	for _, tp := range prepared.Partitions {
		if tp.Topic != offsetsTopic {
			w.markers = append(w.markers, tp)
		}
	}
	w.groups = slices.Clone(prepared.Groups)
	e.completion = w
	c.driver.Complete(w)
}

// completionDone is the channel closed when e's current completion is
// durable; nil (never closed) when there is none. The caller holds e.mu.
func (e *entry) completionDone() <-chan struct{} {
	if e.completion == nil {
		return nil
	}
	return e.completion.done
}

// TransactionalID is the id whose transaction this completes.
func (w *Completion) TransactionalID() string { return w.prepared.TransactionalID }

// Commit reports whether the transaction commits (false: it aborts).
func (w *Completion) Commit() bool { return w.commit }

// Step makes one attempt at what is left: the markers still missing, the
// groups still pending, then the Complete record. Parts that succeed are
// not redone. It reports done once Complete* is durable (and again on
// every later call); after a failure it reports the error, and the driver
// calls it again later. After Close it fails with ErrCoordinatorClosed.
// Calls are serialized; ctx bounds the marker writes and the log append.
func (w *Completion) Step(ctx context.Context) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return true, nil
	}
	if w.c.isClosed() {
		return false, fmt.Errorf("complete transactional id %q: %w", w.TransactionalID(), ErrCoordinatorClosed)
	}
	if len(w.markers) > 0 {
		err := w.c.markers.WriteMarkers(ctx, w.prepared.ProducerID, w.prepared.ProducerEpoch, w.c.cfg.CoordinatorEpoch, w.commit, slices.Clone(w.markers))
		var partial *MarkerError
		switch {
		case err == nil:
			w.markers = nil
		case errors.As(err, &partial):
			w.markers = slices.Clone(partial.Failed)
			return false, err
		default:
			return false, err
		}
	}
	for len(w.groups) > 0 {
		group := w.groups[0]
		if w.c.offsets != nil {
			if err := w.c.offsets.CompleteTxn(ctx, group, w.prepared.ProducerID, w.prepared.ProducerEpoch, w.commit); err != nil {
				return false, fmt.Errorf("complete offsets of group %q: %w", group, err)
			}
		}
		w.groups = w.groups[1:]
	}
	if err := w.c.writeComplete(ctx, w); err != nil {
		return false, err
	}
	w.finished = true
	return true, nil
}

// writeComplete writes Complete* for w's prepared state and wakes the
// waiters.
func (c *Coordinator) writeComplete(ctx context.Context, w *Completion) error {
	e, prepared := w.e, &w.prepared
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.completion != w || e.meta.State != prepared.State || e.meta.ProducerID != prepared.ProducerID || e.meta.ProducerEpoch != prepared.ProducerEpoch {
		// Nothing else leaves Prepare*; this would be a bug. Stop
		// rather than overwrite a newer state.
		return nil
	}
	to := StateCompleteAbort
	if prepared.State == StatePrepareCommit {
		to = StateCompleteCommit
	}
	next, err := e.meta.transition(to, c.cfg.Now(), nil)
	if err != nil {
		return err
	}
	if err := c.write(ctx, e, next); err != nil {
		return err
	}
	close(w.done)
	e.completion = nil
	return nil
}

// Pending reports how many transactions are in PrepareCommit or
// PrepareAbort (their markers not all written yet). For tests and metrics.
func (c *Coordinator) Pending() int {
	count := 0
	for _, m := range c.all() {
		if m.State.preparing() {
			count++
		}
	}
	return count
}

// WaitIdle waits until no transaction is in Prepare* or ctx ends. For
// tests, with a driver that steps completions by itself.
func (c *Coordinator) WaitIdle(ctx context.Context) error {
	for {
		var waits []<-chan struct{}
		c.mu.Lock()
		entries := make([]*entry, 0, len(c.entries))
		for _, e := range c.entries {
			entries = append(entries, e)
		}
		c.mu.Unlock()
		for _, e := range entries {
			e.mu.Lock()
			if done := e.completionDone(); done != nil {
				waits = append(waits, done)
			}
			e.mu.Unlock()
		}
		if len(waits) == 0 {
			return nil
		}
		for _, done := range waits {
			select {
			case <-done:
			case <-ctx.Done():
				return fmt.Errorf("wait for %d transactions to complete: %w", len(waits), ctx.Err())
			}
		}
	}
}

// all returns the published state of every transactional id.
func (c *Coordinator) all() []*Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Metadata, 0, len(c.entries))
	for _, e := range c.entries {
		if m := e.published.Load(); m != nil {
			out = append(out, m)
		}
	}
	return out
}
