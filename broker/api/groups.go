package api

import (
	"context"
	"fmt"

	"github.com/exactly-eos/exactly/broker/group"
)

// awaitGroupReply calls start with a reply callback for the group
// coordinator (JoinReply, SyncReply) and waits for the reply or for ctx to
// end; answered is false when ctx ended first. The handler owns the
// channel: it is buffered for the one reply, so the coordinator, which
// replies under a group's lock, never blocks on it, even once nobody
// waits any more.
func awaitGroupReply[T any](ctx context.Context, start func(reply func(T, error))) (result T, answered bool, err error) {
	type answer struct {
		result T
		err    error
	}
	answers := make(chan answer, 1)
	start(func(result T, err error) { answers <- answer{result, err} })
	select {
	case got := <-answers: // answered without parking
		return got.result, true, got.err
	default:
	}
	select {
	case got := <-answers:
		return got.result, true, got.err
	case <-ctx.Done():
		return result, false, nil
	}
}

// abandonedWait is the answer to a parked JoinGroup or SyncGroup whose
// context ended (the client went away or the broker is closing): the
// client must rejoin.
func abandonedWait(ctx context.Context) error {
	return fmt.Errorf("stopped waiting (%v): %w", context.Cause(ctx), group.ErrRebalanceInProgress)
}

// authorizedOperationsOmitted is Kafka's "not computed" authorized
// operations value.
const authorizedOperationsOmitted = -2147483648
