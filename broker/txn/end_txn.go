package txn

import (
	"context"
	"fmt"
	"time"
)

// EndTxn (key 26): commit or abort the open transaction. PrepareCommit or
// PrepareAbort is written first — from then on the outcome is decided,
// without asking the participants — then markers go to every participant
// and CompleteCommit/CompleteAbort is written, by the Driver stepping the
// [Completion] (Completion.Step). The reply is sent once Prepare* is durable
// and either the transaction completed or the Driver's Await gave up: it
// never claims success before the decision is durable, and normally the
// next transaction does not meet ErrConcurrentTransactions. A retry after
// success is idempotent (commit after CompleteCommit with the same epoch →
// success).
//
// EndRequest.TransactionVersion2 is KIP-890 part 2: Prepare* bumps the
// epoch (a new producer id when exhausted), so every marker fences the
// epoch that wrote the data, and the result is the producer id and epoch
// to use next; a retry with the previous epoch is recognized. An abort with
// no transaction open still bumps the epoch.

// endAction is what EndTxn does in the id's current state.
type endAction int

const (
	// endPrepare: write Prepare* (and complete in the background).
	endPrepare endAction = iota
	// endDone: a retry of an EndTxn that completed; answer success.
	endDone
	// endAbortEmpty: transaction version 2 abort with nothing open: bump
	// the epoch through PrepareAbort with no participants.
	endAbortEmpty
)

// EndTxn serves an EndTxn: the producer id and epoch the producer
// continues with (changed only under transaction version 2).
func (c *Coordinator) EndTxn(ctx context.Context, req EndRequest) (ProducerIDEpoch, error) {
	producerID, epoch, err := c.endTxn(ctx, req.TransactionalID, req.ProducerID, req.Epoch, req.Commit, req.TransactionVersion2)
	if err != nil {
		return ProducerIDEpoch{ProducerID: noProducerID, Epoch: noProducerEpoch}, err
	}
	return ProducerIDEpoch{ProducerID: producerID, Epoch: epoch}, nil
}

// endTxn ends the transaction and returns the producer id and epoch the
// producer continues with (changed only under transaction version 2).
func (c *Coordinator) endTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, commit, version2 bool) (int64, int16, error) {
	if transactionalID == "" {
		return 0, 0, fmt.Errorf("empty transactional id: %w", ErrInvalidRequest)
	}
	e, err := c.lockEntry(transactionalID, nil)
	if err != nil {
		return 0, 0, err
	}
	if e == nil {
		return 0, 0, fmt.Errorf("transactional id %q unknown: %w", transactionalID, ErrInvalidProducerIDMapping)
	}
	action, err := e.meta.endDecision(producerID, epoch, commit, version2)
	if err != nil {
		e.mu.Unlock()
		return 0, 0, err
	}
	if action == endDone {
		current, currentEpoch := e.meta.ProducerID, e.meta.ProducerEpoch
		e.mu.Unlock()
		return current, currentEpoch, nil
	}
	var nextProducerID int64 = noProducerID
	if version2 && epochExhausted(e.meta.ProducerEpoch) {
		if nextProducerID, err = c.ids.Next(); err != nil {
			e.mu.Unlock()
			return 0, 0, fmt.Errorf("allocate producer id: %w: %w", ErrCoordinatorNotAvailable, err)
		}
	}
	next, err := e.meta.prepareEnd(c.cfg.Now(), commit, version2, action == endAbortEmpty, nextProducerID)
	if err == nil {
		err = c.write(ctx, e, next)
	}
	if err != nil {
		e.mu.Unlock()
		return 0, 0, err
	}
	c.startCompletion(e)
	done := e.completionDone()
	e.mu.Unlock()
	c.driver.Await(ctx, done)
	if next.NextProducerID != noProducerID {
		return next.NextProducerID, 0, nil
	}
	return next.ProducerID, next.ProducerEpoch, nil
}

// endDecision decides EndTxn for m (pure). Under transaction version 2 a
// request from the epoch before the last bump (LastProducerEpoch) in a
// Prepare*/Complete* state is a retry.
func (m *Metadata) endDecision(producerID int64, epoch int16, commit, version2 bool) (endAction, error) {
	want, wantComplete := StatePrepareAbort, StateCompleteAbort
	if commit {
		want, wantComplete = StatePrepareCommit, StateCompleteCommit
	}
	retry := version2 && m.LastProducerEpoch != noProducerEpoch && epoch == m.LastProducerEpoch &&
		(m.State.preparing() || m.State.completed()) &&
		(producerID == m.ProducerID || (m.State.completed() && producerID == m.PreviousProducerID))
	if !retry {
		if err := m.checkProducer(producerID, epoch); err != nil {
			return 0, err
		}
	}
	invalid := fmt.Errorf("transactional id %q: %s while %s: %w", m.TransactionalID, endName(commit), m.State, ErrInvalidTxnState)
	switch m.State {
	case StateOngoing:
		if m.ProducerEpoch == maxProducerEpoch && version2 {
			return 0, invalid // no epoch left to bump to; InitProducerId rotates
		}
		return endPrepare, nil
	case StatePrepareCommit, StatePrepareAbort:
		// Under version 2 only a retry reaches here (the epoch was bumped).
		if m.State == want {
			return 0, fmt.Errorf("transactional id %q: %s still completing: %w", m.TransactionalID, m.State, ErrConcurrentTransactions)
		}
		return 0, invalid
	case StateCompleteCommit, StateCompleteAbort:
		if m.State == wantComplete && (!version2 || retry) {
			return endDone, nil
		}
		if version2 && !retry && !commit {
			return endAbortEmpty, nil
		}
		return 0, invalid
	case StateEmpty:
		if version2 && !commit {
			return endAbortEmpty, nil
		}
		return 0, invalid
	}
	return 0, fmt.Errorf("transactional id %q in state %s: %w", m.TransactionalID, m.State, ErrConcurrentTransactions)
}

func endName(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}

// prepareEnd returns m moved to PrepareCommit/PrepareAbort (pure). Under
// transaction version 2 the epoch is bumped (the old one is remembered for
// retries) and nextProducerID, if not -1, is where Complete* moves the id.
// abortEmpty first opens an empty transaction (in memory only).
func (m *Metadata) prepareEnd(now time.Time, commit, version2, abortEmpty bool, nextProducerID int64) (Metadata, error) {
	if version2 && m.ProducerEpoch == maxProducerEpoch {
		return Metadata{}, fmt.Errorf("transactional id %q: epoch %d cannot be bumped: %w", m.TransactionalID, m.ProducerEpoch, ErrInvalidTxnState)
	}
	from := *m
	if abortEmpty {
		opened, err := m.transition(StateOngoing, now, nil)
		if err != nil {
			return Metadata{}, err
		}
		from = opened
	}
	to := StatePrepareAbort
	if commit {
		to = StatePrepareCommit
	}
	return from.transition(to, now, func(next *Metadata) {
		if !version2 {
			return
		}
		next.TransactionVersion = 2
		next.LastProducerEpoch = m.ProducerEpoch
		next.ProducerEpoch = m.ProducerEpoch + 1
		next.NextProducerID = nextProducerID
	})
}
