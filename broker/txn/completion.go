package txn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// This file is the second phase: once PrepareCommit or PrepareAbort is
// durable the outcome is decided (seed §5.1: unlike two-phase commit, the
// participants are not asked); a background goroutine writes the markers
// to every participant, completes the groups' offsets, and writes
// CompleteCommit or CompleteAbort, retrying each step until it succeeds or
// the coordinator closes. A coordinator that loads a Prepare* state starts
// the same goroutine.

// startCompletion launches the completion of e's Prepare* state; the
// caller holds e.mu (or owns e exclusively during load).
func (c *Coordinator) startCompletion(e *entry) {
	e.completion = make(chan struct{})
	prepared := e.meta.clone()
	c.background.Add(1)
	go c.complete(e, prepared)
}

// complete drives prepared (a Prepare* state) to Complete*. It owns no
// state: it reads only its copy, and takes e.mu to write Complete*.
func (c *Coordinator) complete(e *entry, prepared Metadata) {
	defer c.background.Done()
	commit := prepared.State == StatePrepareCommit
	var dataPartitions []TopicPartition
	for _, tp := range prepared.Partitions {
		if tp.Topic != offsetsTopic {
			dataPartitions = append(dataPartitions, tp)
		}
	}
	pendingGroups := slices.Clone(prepared.Groups)
	for {
		err := c.completeStep(e, &prepared, commit, &dataPartitions, &pendingGroups)
		if err == nil {
			return
		}
		timer := time.NewTimer(c.cfg.MarkerRetryBackoff)
		select {
		case <-c.stop.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// completeStep makes one attempt: the markers still missing, the groups
// still pending, then the Complete record. It shrinks the pending lists
// as parts succeed.
func (c *Coordinator) completeStep(e *entry, prepared *Metadata, commit bool, dataPartitions *[]TopicPartition, pendingGroups *[]string) error {
	ctx := c.stop
	if len(*dataPartitions) > 0 {
		err := c.markers.WriteMarkers(ctx, prepared.ProducerID, prepared.ProducerEpoch, c.cfg.CoordinatorEpoch, commit, slices.Clone(*dataPartitions))
		var partial *MarkerError
		switch {
		case err == nil:
			*dataPartitions = nil
		case errors.As(err, &partial):
			*dataPartitions = slices.Clone(partial.Failed)
			return err
		default:
			return err
		}
	}
	for len(*pendingGroups) > 0 {
		group := (*pendingGroups)[0]
		if c.offsets != nil {
			if err := c.offsets.CompleteTxn(ctx, group, prepared.ProducerID, prepared.ProducerEpoch, commit); err != nil {
				return fmt.Errorf("complete offsets of group %q: %w", group, err)
			}
		}
		*pendingGroups = (*pendingGroups)[1:]
	}
	return c.writeComplete(ctx, e, prepared)
}

// writeComplete writes Complete* for prepared and wakes the waiters.
func (c *Coordinator) writeComplete(ctx context.Context, e *entry, prepared *Metadata) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.meta.State != prepared.State || e.meta.ProducerID != prepared.ProducerID || e.meta.ProducerEpoch != prepared.ProducerEpoch {
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
	close(e.completion)
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

// WaitIdle waits until no transaction is in Prepare* or ctx ends. For tests.
func (c *Coordinator) WaitIdle(ctx context.Context) error {
	for {
		var waits []chan struct{}
		c.mu.Lock()
		entries := make([]*entry, 0, len(c.entries))
		for _, e := range c.entries {
			entries = append(entries, e)
		}
		c.mu.Unlock()
		for _, e := range entries {
			e.mu.Lock()
			if e.completion != nil {
				waits = append(waits, e.completion)
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
