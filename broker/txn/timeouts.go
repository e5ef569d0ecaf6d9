package txn

import (
	"context"
	"fmt"
	"time"
)

// This file is the timer work: transactions open longer than their
// timeout are aborted with an epoch bump (so the producer that opened them
// is fenced), and transactional ids idle longer than Config.IDExpiration
// are removed (a tombstone is written). Time moves only through Tick's
// now: the production driver ([GoroutineDriver]) calls Tick every
// Config.CleanupInterval with Config.Now, tests call it with a fake clock.
// Tick takes each id's lock like a request does, so the work runs under
// the same rules as requests.

// TickResult says what one Tick did.
type TickResult struct {
	// Aborted are the transactional ids whose transactions timed out
	// and are being aborted.
	Aborted []string
	// Expired are the transactional ids removed.
	Expired []string
}

// Tick aborts the transactions timed out at now and expires the
// transactional ids idle at now. An id whose lock is held (a request in
// progress) is skipped until the next tick. The error is the first failure
// to write; the other ids are still processed.
func (c *Coordinator) Tick(ctx context.Context, now time.Time) (TickResult, error) {
	var result TickResult
	var firstErr error
	c.mu.Lock()
	entries := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	for _, e := range entries {
		if !e.mu.TryLock() {
			continue
		}
		id := e.meta.TransactionalID
		aborted, expired, err := c.tickEntry(ctx, e, now)
		e.mu.Unlock()
		if aborted {
			result.Aborted = append(result.Aborted, id)
		}
		if expired {
			result.Expired = append(result.Expired, id)
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return result, firstErr
}

// tickEntry does the timer work for one id; the caller holds e.mu.
func (c *Coordinator) tickEntry(ctx context.Context, e *entry, now time.Time) (aborted, expired bool, err error) {
	m := &e.meta
	if e.removed || !e.written {
		return false, false, nil
	}
	nowMs := now.UnixMilli()
	switch {
	case m.timedOut(nowMs):
		if err := c.fence(ctx, e, false); err != nil {
			return false, false, fmt.Errorf("abort timed-out transaction: %w", err)
		}
		if o := c.cfg.Observer; o != nil {
			o.TransactionTimedOut()
		}
		return true, false, nil
	case m.expired(nowMs, c.cfg.IDExpiration):
		if _, err := m.transition(StateDead, now, nil); err != nil {
			return false, false, err
		}
		if err := c.log.Append(ctx, encodeKey(m.TransactionalID), nil); err != nil {
			return false, false, fmt.Errorf("expire transactional id %q: %w", m.TransactionalID, err)
		}
		e.removed = true
		e.published.Store(nil)
		c.mu.Lock()
		if c.entries[m.TransactionalID] == e {
			delete(c.entries, m.TransactionalID)
		}
		c.mu.Unlock()
		return false, true, nil
	}
	return false, false, nil
}

// timedOut reports whether m's transaction is open past its timeout.
func (m *Metadata) timedOut(nowMs int64) bool {
	return m.State == StateOngoing && m.StartTime != noTimestamp && nowMs-m.StartTime > int64(m.TimeoutMs)
}

// expired reports whether m has no transaction open and was last updated
// more than expiration ago.
func (m *Metadata) expired(nowMs int64, expiration time.Duration) bool {
	idle := m.State == StateEmpty || m.State.completed()
	return idle && nowMs-m.LastUpdate > expiration.Milliseconds()
}
