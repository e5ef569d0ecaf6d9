package txn

import (
	"context"
	"fmt"
	"time"
)

// InitProducerId (key 22) with a transactional id fences every older
// instance of the id: the epoch is bumped (a new producer id when the
// epoch is exhausted) and an open transaction is aborted first — fence
// epoch, PrepareAbort, markers, CompleteAbort — and the reply waits for
// that (as long as the Driver's Await allows; past it the answer is
// ErrConcurrentTransactions and the client retries). A producer that
// names its current id and epoch (KIP-360) bumps its own epoch to recover,
// and a retry of a bump that succeeded returns the same id and epoch.
// Without a transactional id the broker hands out producer ids itself.

// InitProducerID serves an InitProducerId with a transactional id: the
// producer id and epoch the new instance uses.
func (c *Coordinator) InitProducerID(ctx context.Context, req InitRequest) (ProducerIDEpoch, error) {
	if c.isClosed() { // before the timeout check: a refusing coordinator has no settings
		return ProducerIDEpoch{ProducerID: noProducerID, Epoch: noProducerEpoch}, fmt.Errorf("init producer id of %q: %w", req.TransactionalID, c.refuse)
	}
	producerID, epoch, err := c.initTransactional(ctx, req.TransactionalID, req.TimeoutMs, req.Current)
	if err != nil {
		return ProducerIDEpoch{ProducerID: noProducerID, Epoch: noProducerEpoch}, err
	}
	return ProducerIDEpoch{ProducerID: producerID, Epoch: epoch}, nil
}

// initAction is what InitProducerId does in the id's current state.
type initAction int

const (
	// initBump: no transaction is open; bump the epoch (or rotate the id).
	initBump initAction = iota
	// initRetry: a retry of a KIP-360 bump that was written; answer the
	// current id and epoch.
	initRetry
	// initFence: a transaction is open; fence it and abort it first.
	initFence
	// initWait: the previous transaction is completing; wait for it.
	initWait
)

// initDecision decides InitProducerId for m (pure; see initAction).
func (m *Metadata) initDecision(expected *ProducerIDEpoch) (initAction, error) {
	if expected != nil {
		if (expected.ProducerID == noProducerID) != (expected.Epoch == noProducerEpoch) {
			return 0, fmt.Errorf("producer id %d with epoch %d: %w", expected.ProducerID, expected.Epoch, ErrInvalidRequest)
		}
		valid := m.ProducerEpoch == noProducerEpoch || expected.ProducerID == m.ProducerID ||
			(expected.ProducerID == m.PreviousProducerID && epochExhausted(expected.Epoch))
		if !valid {
			return 0, fmt.Errorf("transactional id %q: producer id %d is not %d: %w", m.TransactionalID, expected.ProducerID, m.ProducerID, ErrProducerFenced)
		}
	}
	switch m.State {
	case StatePrepareCommit, StatePrepareAbort:
		return initWait, nil
	case StateOngoing:
		return initFence, nil
	case StateEmpty, StateCompleteCommit, StateCompleteAbort:
		if expected == nil || m.ProducerEpoch == noProducerEpoch ||
			(expected.ProducerID == m.ProducerID && expected.Epoch == m.ProducerEpoch) {
			return initBump, nil
		}
		retry := m.LastProducerEpoch != noProducerEpoch && expected.Epoch == m.LastProducerEpoch &&
			(expected.ProducerID == m.ProducerID || (expected.ProducerID == m.PreviousProducerID && m.ProducerEpoch == 0))
		if retry {
			return initRetry, nil
		}
		return 0, fmt.Errorf("transactional id %q: epoch %d is not the current %d: %w", m.TransactionalID, expected.Epoch, m.ProducerEpoch, ErrProducerFenced)
	}
	return 0, fmt.Errorf("transactional id %q in state %s: %w", m.TransactionalID, m.State, ErrConcurrentTransactions)
}

// bumpForInit returns m moved to Empty with a new epoch, or with
// newProducerID at epoch 0 when the epoch is exhausted (newProducerID is
// only called then). A bump the same producer asked for (expected matches)
// remembers the old epoch so a retry is recognized.
func (m *Metadata) bumpForInit(now time.Time, timeoutMs int32, expected *ProducerIDEpoch, newProducerID func() (int64, error)) (Metadata, error) {
	var rotateTo int64 = noProducerID
	if m.ProducerEpoch != noProducerEpoch && epochExhausted(m.ProducerEpoch) {
		id, err := newProducerID()
		if err != nil {
			return Metadata{}, fmt.Errorf("allocate producer id: %w: %w", ErrCoordinatorNotAvailable, err)
		}
		rotateTo = id
	}
	return m.transition(StateEmpty, now, func(next *Metadata) {
		next.TimeoutMs = timeoutMs
		next.TransactionVersion = 0
		next.LastProducerEpoch = noProducerEpoch
		if expected != nil && m.ProducerEpoch != noProducerEpoch {
			next.LastProducerEpoch = m.ProducerEpoch
		}
		if rotateTo != noProducerID {
			next.PreviousProducerID = m.ProducerID
			next.ProducerID = rotateTo
			next.ProducerEpoch = 0
			return
		}
		next.ProducerEpoch = m.ProducerEpoch + 1
	})
}

// fenceAndPrepareAbort returns m (Ongoing) with the epoch bumped to fence
// the producer (PrepareEpochFence, kept in memory only) and then moved to
// PrepareAbort, the state that is written. ownBump is set when the
// producer itself asked (KIP-360 with its current epoch), so its retry
// after the abort is recognized.
func (m *Metadata) fenceAndPrepareAbort(now time.Time, ownBump bool) (Metadata, error) {
	fenced, err := m.transition(StatePrepareEpochFence, now, func(next *Metadata) {
		next.LastProducerEpoch = noProducerEpoch
		if ownBump {
			next.LastProducerEpoch = m.ProducerEpoch
		}
		// At the largest epoch there is nothing left to bump to; the
		// abort still runs (Kafka refuses only past it).
		if m.ProducerEpoch < maxProducerEpoch {
			next.ProducerEpoch = m.ProducerEpoch + 1
		}
	})
	if err != nil {
		return Metadata{}, err
	}
	return fenced.transition(StatePrepareAbort, now, nil)
}

// initTransactional is InitProducerId with a transactional id.
func (c *Coordinator) initTransactional(ctx context.Context, transactionalID string, timeoutMs int32, expected *ProducerIDEpoch) (int64, int16, error) {
	if transactionalID == "" {
		return 0, 0, fmt.Errorf("empty transactional id: %w", ErrInvalidRequest)
	}
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		return 0, 0, fmt.Errorf("timeout %d ms, maximum %v: %w", timeoutMs, c.cfg.MaxTimeout, ErrInvalidTransactionTimeout)
	}
	create := func() (Metadata, error) {
		id, err := c.ids.Next()
		if err != nil {
			return Metadata{}, fmt.Errorf("allocate producer id: %w: %w", ErrCoordinatorNotAvailable, err)
		}
		return newMetadata(transactionalID, id, timeoutMs, c.cfg.Now()), nil
	}
	for {
		e, err := c.lockEntry(transactionalID, create)
		if err != nil {
			return 0, 0, err
		}
		action, err := e.meta.initDecision(expected)
		if err != nil {
			e.mu.Unlock()
			return 0, 0, err
		}
		switch action {
		case initRetry:
			producerID, epoch := e.meta.ProducerID, e.meta.ProducerEpoch
			e.mu.Unlock()
			return producerID, epoch, nil
		case initBump:
			next, err := e.meta.bumpForInit(c.cfg.Now(), timeoutMs, expected, c.ids.Next)
			if err == nil {
				err = c.write(ctx, e, next)
			}
			if err != nil {
				c.forgetUnwritten(e)
				e.mu.Unlock()
				return 0, 0, err
			}
			e.mu.Unlock()
			return next.ProducerID, next.ProducerEpoch, nil
		case initFence:
			ownBump := expected != nil && expected.ProducerID == e.meta.ProducerID && expected.Epoch == e.meta.ProducerEpoch
			if err := c.fence(ctx, e, ownBump); err != nil {
				e.mu.Unlock()
				return 0, 0, err
			}
		}
		// initWait, or the fence just started the abort: wait for it
		// to complete, then decide again.
		done := e.completionDone()
		e.mu.Unlock()
		if !c.driver.Await(ctx, done) {
			return 0, 0, fmt.Errorf("transactional id %q: previous transaction still completing: %w", transactionalID, ErrConcurrentTransactions)
		}
	}
}

// fence bumps the epoch of e's open transaction and aborts it: PrepareAbort
// is written and completion starts. The caller holds e.mu.
func (c *Coordinator) fence(ctx context.Context, e *entry, ownBump bool) error {
	next, err := e.meta.fenceAndPrepareAbort(c.cfg.Now(), ownBump)
	if err != nil {
		return err
	}
	if err := c.write(ctx, e, next); err != nil {
		return err
	}
	c.startCompletion(e)
	return nil
}
