package loadgen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exactly-eos/exactly/internal/wait"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/worker"
)

// Under the consumer-crash fault each consume worker position (a
// transact worker, or a database stage worker) is a worker.Slot: a worker
// subprocess, replaced by a new one when it is killed. A transact
// worker's replacement keeps the transactional.id, so its
// InitProducerId aborts the killed worker's open transaction; a database
// stage's replacement resumes from the database (its stored offsets or
// its dedup window). Workers are dynamic group members with a 6 s session
// (on the consumer protocol the broker's; see [LaunchedBrokerProperties]
// and fitCrashDrains): static
// membership (a replacement taking the killed member's place at
// once) stalled the partitions of the killed worker against kfake. The
// slots' supervisor goroutines start and reap processes; the crash
// scheduler kills them (or tells them where to kill themselves).

// startWorkerPipeline runs the consume workers of plan (transact workers,
// or a database stage) as worker processes and, when crash, crashes them
// at each firing of action, starting a replacement after its restart
// delay. Without crash (load workers, --workers) they only run there.
func startWorkerPipeline(ctx context.Context, l *loadRun, action faults.ClientAction, crash bool) (*stages.Group, error) {
	plan := l.plan
	workers := plan.workload.Pipeline.Workers
	p, ctx := stages.NewGroup(ctx, workers)
	slots := make([]*worker.Slot, workers)
	for index := range slots {
		slots[index] = &worker.Slot{Index: index, Spec: plan.consumeWorkerSpec(index), RestartAfter: time.Duration(action.RestartAfter)}
		if err := l.launchSlot(slots[index], p); err != nil {
			p.Cancel()
			for _, started := range slots[:index] {
				started.Current().Stop(5 * time.Second)
			}
			return nil, err
		}
	}
	p.RunWorkers(workers, func(index int) error {
		slot := slots[index]
		return slot.Supervise(ctx, func() error { return l.launchSlot(slot, p) }, func(failure string) {
			if reason := unsupportedReason(errors.New(failure)); reason != "" {
				l.metrics.markUnsupported("pipeline worker: " + reason)
			}
		})
	})
	switch {
	case !crash:
	case usesDatabase(plan.mode):
		p.Schedule = func() { scheduleStageCrashes(ctx, l, action, slots) }
	default:
		p.Schedule = func() { scheduleCrashes(ctx, l, action, slots) }
	}
	return p, nil
}

// killedWorkerTransactionTimeout bounds transaction.timeout.ms of
// transact workers the consumer-crash fault kills.
const killedWorkerTransactionTimeout = 10 * time.Second

// consumeWorkerSpec is consume worker index's subprocess settings.
func (plan runPlan) consumeWorkerSpec(index int) worker.Spec {
	if usesDatabase(plan.mode) {
		stage := plan.dbStageSpec(index)
		return worker.Spec{Role: worker.RoleDBStage, Bootstrap: plan.clientBootstrap, Security: plan.security.Config(), FastRetries: hasFaults(plan.faults),
			ClientID: stage.ClientID, Group: stage.Group, GroupProtocol: plan.groupProtocol(), Input: stage.Input, Mode: plan.mode,
			Database: plan.databaseDSN, Run: stage.Run, Worker: stage.Worker, Window: stage.Window}
	}
	session := plan.sessionSpec(index)
	return worker.Spec{
		Role: worker.RolePipeline, Bootstrap: plan.clientBootstrap, Security: plan.security.Config(), FastRetries: hasFaults(plan.faults),
		ClientID: session.ClientID, TransactionalID: session.TransactionalID,
		// A short timeout, as the zombie chain's: the transaction a killed
		// worker leaves open (and the offsets it holds pending, which
		// block the partition's next owner) ends within the drain time
		// even when no replacement's InitProducerId aborts it first.
		TransactionTimeout: min(session.TransactionTimeout, killedWorkerTransactionTimeout), Group: session.Group,
		GroupProtocol: plan.groupProtocol(),
		Input:         session.Input, Output: plan.outputTopic,
	}
}

// launchSlot starts the slot's worker process, its events replayed into
// the run: its polls, its assignment, its open transactions and commits,
// the crash it reports just before killing itself.
func (l *loadRun) launchSlot(s *worker.Slot, p *stages.Group) error {
	polls := l.plan.observations.workerTracker(s.Spec, fmt.Sprintf("%s (subprocess of slot %d)", s.Spec.ClientID, s.Index))
	err := s.Launch(workerLaunch(l.env.self, l.env.workers, l.plan.security), func(event worker.Event) {
		if worker.ReplayPoll(polls, event) {
			return
		}
		switch event.Event {
		case "assigned":
			p.Watch.Set(s.Index, int(event.Count))
		case "open":
			s.SetOpen(true)
		case "committed":
			l.recordStageCommit(event)
			p.Committed.Add(event.Count)
			s.SetOpen(false)
		case "crashing":
			s.MarkKilled()
			l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindConsumerCrash, APIKey: faults.NoAPIKey,
				Detail: fmt.Sprintf("%s worker %d %s; replacement in %s", l.plan.mode, s.Index, event.Message, s.RestartAfter)})
		}
	})
	if err != nil {
		return fmt.Errorf("pipeline worker %d: %w", s.Index, err)
	}
	return nil
}

// recordStageCommit replays a database stage worker's commit report into
// the run's measurements.
func (l *loadRun) recordStageCommit(event worker.Event) {
	if event.Outcome != "" {
		// A transact worker's transaction.
		l.metrics.recordTransactionEnd(event.Outcome == "committed", event.Outcome == "aborted", time.Duration(event.Took))
		return
	}
	if len(event.SendTimes) == 0 && event.Took == 0 {
		return
	}
	now := time.Now()
	for _, sendTime := range event.SendTimes {
		l.metrics.recordEndToEnd(time.Unix(0, sendTime), now)
	}
	l.metrics.recordTransactionEnd(true, false, time.Duration(event.Took))
	l.stats.DatabaseCommits.Add(1)
	l.stats.Dropped.Add(event.Dropped)
	l.stats.Conflicts.Add(event.Conflicts)
	l.stats.Seeks.Add(event.Seeks)
}

// scheduleCrashes kills a worker at each firing of action before the load's
// deadline, round robin over the slots, preferring a moment when the
// victim has a transaction open (it waits up to a second for one).
func scheduleCrashes(ctx context.Context, l *loadRun, action faults.ClientAction, slots []*worker.Slot) {
	horizon := time.Duration(l.plan.workload.Warmup + l.plan.workload.Duration)
	for fired, at := range action.Times(horizon) {
		if !wait.Until(ctx, l.start.Add(at)) {
			return
		}
		slot := slots[fired%len(slots)]
		slot.WaitOpen(ctx, time.Now().Add(time.Second))
		pid, open, err := slot.Kill()
		if err != nil {
			l.env.note("consumer-crash at %s: worker %d: %v", at, slot.Index, err)
			continue
		}
		state := "with a transaction open"
		if !open {
			state = "between transactions"
		}
		l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindConsumerCrash, APIKey: faults.NoAPIKey,
			Detail: fmt.Sprintf("SIGKILL pipeline worker %d pid %d %s; replacement in %s", slot.Index, pid, state, action.RestartAfter)})
	}
}

// scheduleStageCrashes crashes database stage workers at each firing of
// action: one worker right after a database commit, before its next poll
// (the window a seek to the stored offsets must cover), and, with more
// than one worker, another inside an open database transaction. The
// worker kills itself (SIGKILL) at the point, on the runner's command, so
// the crash lands exactly there; it reports the crash just before.
func scheduleStageCrashes(ctx context.Context, l *loadRun, action faults.ClientAction, slots []*worker.Slot) {
	horizon := time.Duration(l.plan.workload.Warmup + l.plan.workload.Duration)
	for fired, at := range action.Times(horizon) {
		if !wait.Until(ctx, l.start.Add(at)) {
			return
		}
		commands := []string{worker.CommandCrashAfterCommit, worker.CommandCrashInTransaction}
		for offset, command := range commands[:min(len(commands), len(slots))] {
			slot := slots[(fired+offset)%len(slots)]
			process := slot.Current()
			if process == nil {
				continue
			}
			if err := process.Command(command); err != nil {
				l.env.note("consumer-crash at %s: worker %d: %v", at, slot.Index, err)
			}
		}
	}
}
