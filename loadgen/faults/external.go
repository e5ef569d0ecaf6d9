package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/exactly-eos/exactly/internal/wait"
)

// External is a cluster the load generator did not launch, whose brokers
// process actions reach through the operator's hooks.
type External struct {
	Hooks *Hooks
	// Log receives every hook's event and every failed recovery.
	Log *EventLog
	// Select finds, when an action fires, the broker it acts on: the
	// leader of most of the run's partitions, a coordinator, or (an
	// action that does not select) the broker at action.Broker or one
	// drawn at random; fired counts the action's firings from 0.
	Select func(ctx context.Context, action ProcessAction, fired int) (Broker, error)
	// Recovered waits, at most Hooks.Recovery, until broker is back in
	// Metadata and every partition of the run's topics has its full ISR;
	// its error says what was still missing.
	Recovered func(ctx context.Context, broker Broker) error
}

// RecoveryError is a broker that did not come back after a fault within
// the bound: the next fault would hit a cluster still short of it.
type RecoveryError struct {
	Broker  Broker
	Timeout time.Duration
	Err     error
}

func (e *RecoveryError) Error() string {
	return fmt.Sprintf("%s was not back in Metadata with full ISRs within %v after its fault: %v", e.Broker, e.Timeout, e.Err)
}

func (e *RecoveryError) Unwrap() error { return e.Err }

// IsHookFailure reports whether err comes from a hook that failed or a
// broker that did not recover, after which the cluster's state is
// unknown and the suite should stop.
func IsHookFailure(err error) bool {
	var hook *HookError
	var recovery *RecoveryError
	return errors.As(err, &hook) || errors.As(err, &recovery)
}

// RunHookActions runs every process action of a plan against an external
// cluster until each schedule is done or ctx ends (which is not an
// error). The first action that fails ends the others; a fault already
// under way is always brought back (start or resume) and waited for.
func RunHookActions(ctx context.Context, actions []ProcessAction, cluster External) error {
	for i, action := range actions {
		if err := action.Validate(); err != nil {
			return fmt.Errorf("processes[%d]: %w", i, err)
		}
		if _, _, ok := HooksFor(action.Action); !ok {
			return fmt.Errorf("processes[%d]: %s needs the partition proxies of --target cluster; no --fault-exec hook does it", i, action.Action)
		}
		if missing := cluster.Hooks.Missing(action.Action); len(missing) > 0 {
			return fmt.Errorf("processes[%d]: %s needs the --fault-exec hooks %v", i, action.Action, missing)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(actions))
	for i, action := range actions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = onSchedule(ctx, action.Schedule, func(fired int) error {
				return fireHookAction(ctx, action, fired, cluster)
			})
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// fireHookAction selects the action's broker and acts on it: the down
// hook (kill, pause), Down, the up hook (start, resume), then the wait
// until the broker is back. Once the down hook ran, the rest runs even
// when ctx ends: a run never leaves a broker dead or stopped behind.
func fireHookAction(ctx context.Context, action ProcessAction, fired int, cluster External) error {
	broker, err := cluster.Select(ctx, action, fired)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: find its broker: %w", action.Action, err)
	}
	down, up, _ := HooksFor(action.Action)
	bounded := context.WithoutCancel(ctx) // each hook has its own timeout
	if err := cluster.Hooks.Run(bounded, down, broker, cluster.Log); err != nil {
		// The broker may be down or stopped all the same: bring it back
		// if it can be.
		if upErr := cluster.Hooks.Run(bounded, up, broker, cluster.Log); upErr != nil {
			return fmt.Errorf("%s: %w (and then: %w)", action.Action, err, upErr)
		}
		return fmt.Errorf("%s: %w", action.Action, err)
	}
	wait.Until(ctx, time.Now().Add(time.Duration(action.Down)))
	if err := cluster.Hooks.Run(bounded, up, broker, cluster.Log); err != nil {
		return fmt.Errorf("%s: %w", action.Action, err)
	}
	recoverCtx, cancel := context.WithTimeout(bounded, cluster.Hooks.Recovery)
	defer cancel()
	if err := cluster.Recovered(recoverCtx, broker); err != nil {
		failure := &RecoveryError{Broker: broker, Timeout: cluster.Hooks.Recovery, Err: err}
		cluster.Log.record(KindNotRecovered, broker, failure.Error())
		return fmt.Errorf("%s: %w", action.Action, failure)
	}
	return nil
}
