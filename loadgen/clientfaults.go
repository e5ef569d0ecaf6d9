package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/exactly-eos/exactly/internal/wait"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/verify"
	"github.com/exactly-eos/exactly/loadgen/worker"
)

// chainProducer is one generation of the zombie-producer chain: a
// transactional producer worker writing as ledger slot log. Once the runner
// resumes it after a replacement fenced it, resumedAt is set: every record
// it sends and every commit it begins after that must stay invisible.
type chainProducer struct {
	process *worker.Process
	log     *verify.TrackedLog
	// transactionalID is the worker's, for the ledger's acks.
	transactionalID string
	resumedAt       atomic.Int64 // Unix nanoseconds; 0 while not a zombie
	// postFence marks transactions (by first sequence) whose end began after
	// the resume; owned by the process's reading goroutine.
	postFence map[uint64]bool
}

// handle replays one report into the ledger.
func (c *chainProducer) handle(event worker.Event, zombieWrites *atomic.Int64, metrics *runMetrics) {
	resumed := c.resumedAt.Load()
	afterResume := resumed != 0 && event.Time > resumed
	switch event.Event {
	case "sent":
		fate := verify.FateCommit
		if afterResume {
			fate, _ = verify.FateAbort, zombieWrites.Add(1)
		}
		_ = c.log.RecordSent(event.Seq, fate) // the worker numbers its records from 0 without gaps
		metrics.recordSent()
	case "ack":
		c.log.RecordAcknowledged(event.Seq, event.Ack(c.transactionalID))
		metrics.live.AckedUntimed() // the worker measures no latency for the runner
	case "err":
		c.log.RecordErrored(event.Seq)
		metrics.recordFailed()
	case "ending":
		if afterResume {
			c.postFence[event.First] = true
			zombieWrites.Add(1)
		}
	case "end":
		outcome := event.TransactionOutcome()
		if c.postFence[event.First] {
			// A commit begun after the fence must fail: if it reports
			// success anyway, its records still must not be visible.
			outcome = verify.TransactionAborted
		}
		c.log.RecordTransactionEnd(event.First, event.End, outcome)
		metrics.recordTransactionEnd(outcome == verify.TransactionCommitted, outcome == verify.TransactionAborted, 0)
	}
}

// startChainProducer launches generation gen of the chain as ledger slot
// Producers+gen and waits until its InitProducerId has fenced any earlier
// generation.
func (l *loadRun) startChainProducer(ctx context.Context, gen int) (*chainProducer, error) {
	plan, workload := l.plan, l.plan.workload
	slot := workload.Producers + gen
	spec := worker.Spec{
		Role: worker.RoleProducer, Mode: plan.mode, Bootstrap: plan.clientBootstrap, Security: plan.security.Config(), FastRetries: hasFaults(plan.faults),
		ClientID:        fmt.Sprintf("exactly-loadgen-%s-zombie-chain-%d", plan.topicSuffix, gen),
		TransactionalID: fmt.Sprintf("exactly-%s-%s-zombie-chain", plan.runIDText, plan.topicSuffix),
		// A short timeout, so a transaction left open is aborted quickly.
		TransactionTimeout: 10 * time.Second,
		Topic:              plan.topic, RunID: plan.runID, Producer: uint32(slot), RecordSize: workload.RecordSize,
		KeyDistribution: workload.Keys.Distribution, KeySpace: workload.Keys.Space, Rate: max(float64(workload.Rate)/float64(workload.Producers), 200),
		Budget: uint64(workload.Records), Deadline: l.deadline,
		CommitInterval: plan.commitInterval, CommitRecords: workload.Transaction.CommitRecords,
	}
	chain := &chainProducer{log: l.logs[slot], transactionalID: spec.TransactionalID, postFence: make(map[uint64]bool)}
	process, err := worker.Start(workerLaunch(l.env.self, l.env.workers, l.plan.security), spec, func(event worker.Event) {
		chain.handle(event, &l.zombieWrites, l.metrics)
	})
	if err != nil {
		return nil, err
	}
	chain.process = process
	if err := process.WaitReady(ctx, 30*time.Second); err != nil {
		process.Stop(5 * time.Second)
		if reason := unsupportedReason(errors.New(process.Failure())); reason != "" {
			l.metrics.markUnsupported("zombie-producer worker: " + reason)
		}
		return nil, fmt.Errorf("zombie-producer chain generation %d: %w", gen, err)
	}
	return chain, nil
}

// runZombieChain runs the zombie-producer fault: a transactional producer
// worker runs; at each firing the runner freezes it (SIGSTOP), starts a
// replacement with the same transactional.id (whose InitProducerId fences
// the frozen one), waits the action's pause and resumes the old one, which
// is now a zombie: whatever it sends or commits from then on must never be
// visible under read_committed.
func (l *loadRun) runZombieChain(ctx context.Context, action faults.ClientAction) error {
	current, err := l.startChainProducer(ctx, 0)
	if err != nil {
		return err
	}
	var zombies []*chainProducer
	horizon := time.Duration(l.plan.workload.Warmup + l.plan.workload.Duration)
	for fired, at := range action.Times(horizon) {
		if !wait.Until(ctx, l.start.Add(at)) || chainExited(current) {
			break
		}
		if err := current.process.Signal(syscall.SIGSTOP); err != nil {
			break
		}
		replacement, err := l.startChainProducer(ctx, fired+1)
		if err != nil {
			_ = current.process.Signal(syscall.SIGCONT)
			l.stopChain(append(zombies, current))
			return err
		}
		l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindZombieProducer, APIKey: faults.NoAPIKey,
			Detail: fmt.Sprintf("froze producer worker pid %d; replacement pid %d took over its transactional.id; resuming the old one in %s",
				current.process.PID(), replacement.process.PID(), action.Pause)})
		wait.Until(ctx, time.Now().Add(time.Duration(action.Pause)))
		current.resumedAt.Store(time.Now().UnixNano())
		_ = current.process.Signal(syscall.SIGCONT)
		zombies = append(zombies, current)
		current = replacement
	}
	// The last generation runs to its deadline; zombies end once fenced.
	select {
	case <-current.process.Exited():
	case <-ctx.Done():
	}
	l.stopChain(append(zombies, current))
	if failure := current.process.Failure(); failure != "" {
		if reason := unsupportedReason(errors.New(failure)); reason != "" {
			l.metrics.markUnsupported("zombie-producer worker: " + reason)
		}
		return fmt.Errorf("zombie-producer chain: %s", failure)
	}
	return nil
}

// stopChain stops every worker of the chain that still runs.
func (l *loadRun) stopChain(chain []*chainProducer) {
	for _, producer := range chain {
		producer.process.Stop(10 * time.Second)
	}
}

func chainExited(c *chainProducer) bool { return c.process.HasExited() }
