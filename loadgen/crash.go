package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/exactly-eos/exactly/loadgen/faults"
)

// pipelineSlot is one consume worker position under the consumer-crash
// fault: a worker subprocess (an eos-pipeline worker, or a consumer-dedup
// or external-offsets database stage), replaced by a new one when it is
// killed. An eos-pipeline replacement keeps the transactional.id, so its
// InitProducerId aborts the killed worker's open transaction; a database
// stage's replacement resumes from the database (its stored offsets or
// its dedup window). Workers are dynamic group members with a 6 s session:
// static membership (a replacement taking the killed member's place at
// once) stalled the partitions of the killed worker against kfake. Its
// supervisor goroutine starts and reaps processes; the crash scheduler
// kills them (or tells them where to kill themselves); mu guards the
// fields they share.
type pipelineSlot struct {
	index        int
	spec         workerSpec
	restartAfter time.Duration

	mu      sync.Mutex
	process *workerProcess // nil while a replacement is pending
	open    bool           // the worker reported a transaction with records not yet ended
	killed  bool           // process was killed on purpose (by the scheduler, or by itself at a crash point)
}

// startWorkerPipeline runs the consume workers of plan (eos-pipeline, or
// the database stage of consumer-dedup and external-offsets) as
// subprocesses and crashes them at each firing of action, starting a
// replacement after its restart delay.
func startWorkerPipeline(ctx context.Context, l *loadRun, action faults.ClientAction) (*pipeline, error) {
	plan := l.plan
	workers := plan.workload.Pipeline.Workers
	p, ctx := newPipeline(ctx, workers)
	slots := make([]*pipelineSlot, workers)
	for index := range slots {
		slots[index] = &pipelineSlot{index: index, spec: plan.consumeWorkerSpec(index), restartAfter: time.Duration(action.RestartAfter)}
		if err := slots[index].launch(l, p); err != nil {
			p.cancel()
			for _, started := range slots[:index] {
				started.current().stop(5 * time.Second)
			}
			return nil, err
		}
	}
	p.runWorkers(workers, func(index int) error {
		return slots[index].supervise(ctx, l, p, time.Duration(action.RestartAfter))
	})
	p.schedule = func() { scheduleCrashes(ctx, l, action, slots) }
	if usesDatabase(plan.mode) {
		p.schedule = func() { scheduleStageCrashes(ctx, l, action, slots) }
	}
	return p, nil
}

// killedWorkerTransactionTimeout bounds transaction.timeout.ms of
// eos-pipeline workers the consumer-crash fault kills.
const killedWorkerTransactionTimeout = 10 * time.Second

// consumeWorkerSpec is consume worker index's subprocess settings.
func (plan runPlan) consumeWorkerSpec(index int) workerSpec {
	if usesDatabase(plan.mode) {
		stage := plan.dbStageSpec(index)
		return workerSpec{Role: workerRoleDBStage, Bootstrap: plan.clientBootstrap, FastRetries: hasFaults(plan.faults),
			ClientID: stage.clientID, Group: stage.group, Input: stage.input, Mode: plan.mode,
			Database: plan.databaseDSN, Run: stage.run, Worker: stage.worker, Window: stage.window}
	}
	session := plan.sessionSpec(index)
	return workerSpec{
		Role: workerRolePipeline, Bootstrap: plan.clientBootstrap, FastRetries: hasFaults(plan.faults),
		ClientID: session.clientID, TransactionalID: session.transactionalID,
		// A short timeout, as the zombie chain's: the transaction a killed
		// worker leaves open (and the offsets it holds pending, which
		// block the partition's next owner) ends within the drain time
		// even when no replacement's InitProducerId aborts it first.
		TransactionTimeout: min(session.transactionTimeout, killedWorkerTransactionTimeout), Group: session.group,
		Input: session.input, Output: plan.outputTopic,
	}
}

// launch starts the slot's worker process.
func (s *pipelineSlot) launch(l *loadRun, p *pipeline) error {
	polls := l.plan.observations.workerTracker(s.spec, fmt.Sprintf("%s (subprocess of slot %d)", s.spec.ClientID, s.index))
	process, err := startWorker(l.env.self, s.spec, func(event workerEvent) {
		if replayPollEvent(polls, event) {
			return
		}
		switch event.Event {
		case "assigned":
			p.watch.set(s.index, int(event.Count))
		case "open":
			s.setOpen(true)
		case "committed":
			l.recordStageCommit(event)
			p.committed.add(event.Count)
			s.setOpen(false)
		case "crashing":
			s.mu.Lock()
			s.killed = true
			s.mu.Unlock()
			l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindConsumerCrash, APIKey: faults.NoAPIKey,
				Detail: fmt.Sprintf("%s worker %d %s; replacement in %s", l.plan.mode, s.index, event.Message, s.restartAfter)})
		}
	})
	if err != nil {
		return fmt.Errorf("pipeline worker %d: %w", s.index, err)
	}
	s.mu.Lock()
	s.process, s.open, s.killed = process, false, false
	s.mu.Unlock()
	return nil
}

// recordStageCommit replays a database stage worker's commit report into
// the run's measurements.
func (l *loadRun) recordStageCommit(event workerEvent) {
	if len(event.SendTimes) == 0 && event.Took == 0 {
		return // an eos-pipeline worker's report: no measurements
	}
	now := time.Now()
	for _, sendTime := range event.SendTimes {
		l.metrics.recordEndToEnd(time.Unix(0, sendTime), now)
	}
	l.metrics.recordTransactionEnd(true, false, time.Duration(event.Took))
	l.stats.databaseCommits.Add(1)
	l.stats.dropped.Add(event.Dropped)
	l.stats.conflicts.Add(event.Conflicts)
	l.stats.seeks.Add(event.Seeks)
}

func (s *pipelineSlot) setOpen(open bool) {
	s.mu.Lock()
	s.open = open
	s.mu.Unlock()
}

func (s *pipelineSlot) current() *workerProcess {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.process
}

// supervise waits for the slot's worker to exit: a worker the scheduler
// killed is replaced after restartAfter; at ctx's end the worker is asked
// to finish; any other exit is the worker's error.
func (s *pipelineSlot) supervise(ctx context.Context, l *loadRun, p *pipeline, restartAfter time.Duration) error {
	for {
		process := s.current()
		select {
		case <-ctx.Done():
			process.stop(15 * time.Second)
			return nil
		case <-process.exited:
		}
		s.mu.Lock()
		killed := s.killed
		s.mu.Unlock()
		if !killed {
			failure := process.failure()
			if reason := unsupportedReason(errors.New(failure)); reason != "" {
				l.metrics.markUnsupported("pipeline worker: " + reason)
			}
			if failure == "" {
				return nil
			}
			return errors.New(failure)
		}
		if !sleepUntil(ctx, time.Now().Add(restartAfter)) {
			return nil
		}
		if err := s.launch(l, p); err != nil {
			return err
		}
	}
}

// kill sends SIGKILL to the slot's worker (no commit, no abort, no leave
// group) and says whether it had a transaction open.
func (s *pipelineSlot) kill() (pid int, open bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.process == nil || s.killed {
		return 0, false, errors.New("no worker running")
	}
	if err := s.process.signal(syscall.SIGKILL); err != nil {
		return 0, false, err
	}
	s.killed = true
	return s.process.pid(), s.open, nil
}

// scheduleCrashes kills a worker at each firing of action before the load's
// deadline, round robin over the slots, preferring a moment when the
// victim has a transaction open (it waits up to a second for one).
func scheduleCrashes(ctx context.Context, l *loadRun, action faults.ClientAction, slots []*pipelineSlot) {
	horizon := time.Duration(l.plan.workload.Warmup + l.plan.workload.Duration)
	for fired, at := range action.Times(horizon) {
		if !sleepUntil(ctx, l.start.Add(at)) {
			return
		}
		slot := slots[fired%len(slots)]
		waitOpen(ctx, slot, time.Now().Add(time.Second))
		pid, open, err := slot.kill()
		if err != nil {
			l.env.note("consumer-crash at %s: worker %d: %v", at, slot.index, err)
			continue
		}
		state := "with a transaction open"
		if !open {
			state = "between transactions"
		}
		l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindConsumerCrash, APIKey: faults.NoAPIKey,
			Detail: fmt.Sprintf("SIGKILL pipeline worker %d pid %d %s; replacement in %s", slot.index, pid, state, action.RestartAfter)})
	}
}

// waitOpen polls until the slot reports an open transaction or deadline.
func waitOpen(ctx context.Context, slot *pipelineSlot, deadline time.Time) {
	ticker := time.NewTicker(5 * time.Millisecond)
	defer ticker.Stop()
	for time.Now().Before(deadline) {
		slot.mu.Lock()
		open := slot.open
		slot.mu.Unlock()
		if open {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// scheduleStageCrashes crashes database stage workers at each firing of
// action: one worker right after a database commit, before its next poll
// (the window the seed's seek() road must cover), and, with more than one
// worker, another inside an open database transaction. The worker kills
// itself (SIGKILL) at the point, on the runner's command, so the crash
// lands exactly there; it reports the crash just before.
func scheduleStageCrashes(ctx context.Context, l *loadRun, action faults.ClientAction, slots []*pipelineSlot) {
	horizon := time.Duration(l.plan.workload.Warmup + l.plan.workload.Duration)
	for fired, at := range action.Times(horizon) {
		if !sleepUntil(ctx, l.start.Add(at)) {
			return
		}
		commands := []string{workerCommandCrashAfterCommit, workerCommandCrashInTransaction}
		for offset, command := range commands[:min(len(commands), len(slots))] {
			slot := slots[(fired+offset)%len(slots)]
			process := slot.current()
			if process == nil {
				continue
			}
			if err := process.command(command); err != nil {
				l.env.note("consumer-crash at %s: worker %d: %v", at, slot.index, err)
			}
		}
	}
}
