package stages

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A transact worker outlives a transaction end the cluster did not answer
// definitively. kgo's End gives up on a request once its retries run out,
// and sooner when the coordinator cannot even be found: a FindCoordinator
// that fails to dial (a killed broker still listed in Metadata until the
// quorum fences it) is not retried with a backoff, only once on another
// broker, so a second failure there (a stale connection to a broker that
// restarted answers EOF) ends the EndTxn within a few hundred
// milliseconds while the coordinator's partition is still moving. The
// transaction's outcome is then unknown to the client, which kgo says not
// to continue from: the worker closes the session and opens a new one with
// the same transactional id. Its InitProducerID bumps the epoch, which
// fences the old one and completes or aborts the open transaction on the
// coordinator; its group join fetches the committed offsets from the
// cluster (RequireStableFetchOffsets waits for that transaction), so the
// records of a transaction that did not commit are consumed again and
// those of one that did are not. This is what an application on a real
// cluster must do too.

// maxSessionRestarts bounds how many sessions one worker replaces in a
// run; sessionRestartPause is the pause before each new session, so the
// cluster has time to fence the broker and move the coordinator.
const (
	maxSessionRestarts  = 10
	sessionRestartPause = 500 * time.Millisecond
)

// errUnconfirmedEnd marks a transaction end without a definitive answer
// from the cluster (see above).
var errUnconfirmedEnd = errors.New("no definitive answer from the cluster: a new session takes over")

// Unanswered reports whether a transaction end's error (kgo's
// EndTransaction or a session's End) leaves the transaction's outcome
// unknown to the client: a transport error, or a retriable error code
// that outlived the client's retries. A non-retriable error code (fenced,
// invalid producer epoch, …) is the cluster's definitive answer, which
// neither a retry nor a new session can cure; a cancelled context is the
// caller's own end. An end that ran out of its own time (its context's
// deadline) is unanswered too: the caller checks its own context.
func Unanswered(err error) bool {
	var kafkaErr *kerr.Error
	if errors.As(err, &kafkaErr) && !kafkaErr.Retriable {
		return false
	}
	return err != nil && !errors.Is(err, context.Canceled)
}

// unconfirmedEnd wraps a transaction end's error: errUnconfirmedEnd too
// when it is Unanswered.
func unconfirmedEnd(err error) error {
	if !Unanswered(err) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, errUnconfirmedEnd)
}

// TransactRestarting runs Transact on session and, each time a
// transaction end is unconfirmed, on a new session from newSession (after
// a pause, at most maxSessionRestarts times). It returns when ctx ends, a
// session fails otherwise, or the restarts are used up.
func (p *Group) TransactRestarting(ctx context.Context, session *kgo.GroupTransactSession,
	newSession func() (*kgo.GroupTransactSession, error), output Output, metrics Metrics) error {
	var err error
	for restarts := 0; ; restarts++ {
		if restarts > 0 {
			if restarts > maxSessionRestarts {
				return fmt.Errorf("%w; gave up after %d new sessions", err, maxSessionRestarts)
			}
			if !pause(ctx, sessionRestartPause) {
				return nil
			}
			if session, err = renewSession(ctx, newSession); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if Unanswered(err) {
					metrics.RecordError(err)
					err = fmt.Errorf("%w (%w)", err, errUnconfirmedEnd)
					continue // the cluster may not be ready yet: try again
				}
				return fmt.Errorf("new session after an unconfirmed transaction end: %w", err)
			}
		}
		err = p.Transact(ctx, session, output, metrics, nil)
		if err == nil || ctx.Err() != nil || !errors.Is(err, errUnconfirmedEnd) {
			return err
		}
	}
}

// renewSession opens a new session and initialises its producer id at
// once. Only that InitProducerID ends the old session's open transaction
// (the epoch bump aborts it, or completes its commit), and until it ends
// the group's offset fetch for its partitions answers
// UNSTABLE_OFFSET_COMMIT (RequireStableFetchOffsets): waiting for the
// first transaction to initialise it lazily would leave the new session
// unable to consume until the old transaction timed out.
func renewSession(ctx context.Context, newSession func() (*kgo.GroupTransactSession, error)) (*kgo.GroupTransactSession, error) {
	session, err := newSession()
	if err != nil {
		return nil, err
	}
	initCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, _, err := session.Client().ProducerID(initCtx); err != nil {
		session.Close()
		return nil, fmt.Errorf("init producer id of the new session: %w", err)
	}
	return session, nil
}

// pause waits d, or less if ctx ends first (it reports whether it did not).
func pause(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
