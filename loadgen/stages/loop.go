package stages

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/pollwatch"
)

// pollLoop is the consume loop every stage shares (the transactional
// pipeline worker, the database stage, the at-least-once relay): poll,
// tell the poll checker, count fetch errors, leave when idle and asked
// to, and hand each non-empty poll to process. Under group-churn
// (leave not nil) the poll chosen to leave on is processed with commit
// false and the loop ends after it. It runs on the stage's own goroutine,
// which owns the client.
type pollLoop struct {
	// poll fetches the next records (the client's or the transact
	// session's PollFetches).
	poll func(ctx context.Context) kgo.Fetches
	// allowRebalance, if set, is called after every poll has been dealt
	// with (clients built with kgo.BlockRebalanceOnPoll); nil for a
	// transact session, which does it itself.
	allowRebalance func()
	// checkUnsupported makes an idle poll stop the loop when the target
	// has said it cannot run the mode (metrics.UnsupportedMode).
	checkUnsupported bool
	// process handles one non-empty poll and reports whether its offsets
	// were committed; commit false ends it without committing.
	process func(ctx context.Context, fetches kgo.Fetches, commit bool) (committed bool, err error)
	// ended, if set, is told after process whether the poll committed
	// (the poll checker rewinds a transaction that did not).
	ended func(committed bool)
}

// run polls until ctx ends, the client closes, process fails, or the
// stage leaves (leave may be nil: it never does).
func (l pollLoop) run(ctx context.Context, polls *pollwatch.Watch, metrics Metrics, leave *Departure) error {
	allow := func() {
		if l.allowRebalance != nil {
			l.allowRebalance()
		}
	}
	for ctx.Err() == nil {
		pollCtx, cancel := leave.pollContext(ctx)
		fetches := l.poll(pollCtx)
		cancel()
		polls.Fetched(fetches)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			allow()
			return nil
		}
		for _, fetchErr := range fetches.Errors() {
			if !errors.Is(fetchErr.Err, context.Canceled) && !errors.Is(fetchErr.Err, context.DeadlineExceeded) {
				metrics.RecordError(fetchErr.Err)
			}
		}
		if fetches.NumRecords() == 0 {
			allow()
			if leave.requested() {
				leave.leftIdle()
				return nil
			}
			if l.checkUnsupported {
				if reason := metrics.UnsupportedMode(); reason != "" {
					return errors.New(reason)
				}
			}
			continue
		}
		commit := leave.commitNext()
		committed, err := l.process(ctx, fetches, commit)
		if l.ended != nil {
			l.ended(committed)
		}
		allow()
		if err != nil {
			return err
		}
		if !commit {
			leave.aborted(fetches.NumRecords())
			return nil
		}
		if committed {
			leave.committed(fetches)
		}
	}
	return nil
}
