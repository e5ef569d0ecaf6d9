package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// workerProcess is a worker subprocess and the goroutine reading its
// reports. handle runs on that goroutine, once per event, in order.
type workerProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ready  chan struct{} // closed at the first ready event
	exited chan struct{} // closed once stdout ended and the process exited

	mu     sync.Mutex // guards fatal and stderr
	fatal  string
	stderr strings.Builder // the worker's stderr, first 4 KiB

	stdinMu     sync.Mutex // guards writes to stdin and stdinClosed
	stdinClosed bool
}

// command writes one command line to the worker's stdin.
func (w *workerProcess) command(text string) error {
	w.stdinMu.Lock()
	defer w.stdinMu.Unlock()
	if w.stdinClosed {
		return fmt.Errorf("worker pid %d is stopping", w.pid())
	}
	if _, err := io.WriteString(w.stdin, text+"\n"); err != nil {
		return fmt.Errorf("command %q to worker pid %d: %w", text, w.pid(), err)
	}
	return nil
}

// startWorker launches `exactly loadgen worker` with spec.
func startWorker(self SelfCommand, spec workerSpec, handle func(workerEvent)) (*workerProcess, error) {
	if self.Path == "" {
		return nil, errors.New("client faults need the exactly binary to launch workers; none is set")
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("worker spec: %w", err)
	}
	cmd := exec.Command(self.Path, self.command("loadgen", "worker", "--spec", string(specJSON))...)
	cmd.Env = append(os.Environ(), self.Env...)
	w := &workerProcess{cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stderr = limitedWriter{w}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stdout: %w", err)
	}
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("worker stdin: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %s: %w", spec.ClientID, err)
	}
	go w.read(stdout, handle)
	return w, nil
}

// read decodes report lines until stdout ends, then reaps the process.
func (w *workerProcess) read(stdout io.Reader, handle func(workerEvent)) {
	defer close(w.exited)
	readyClosed := false
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		var event workerEvent
		if json.Unmarshal(scanner.Bytes(), &event) != nil {
			continue // not a report line
		}
		switch event.Event {
		case "ready":
			if !readyClosed {
				close(w.ready)
				readyClosed = true
			}
		case "fatal":
			w.mu.Lock()
			w.fatal = event.Message
			w.mu.Unlock()
		}
		handle(event)
	}
	_ = w.cmd.Wait()
}

// limitedWriter keeps the first 4 KiB of a worker's stderr.
type limitedWriter struct{ w *workerProcess }

func (l limitedWriter) Write(data []byte) (int, error) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	if room := 4096 - l.w.stderr.Len(); room > 0 {
		l.w.stderr.Write(data[:min(len(data), room)])
	}
	return len(data), nil
}

// failure describes why the worker ended badly, or "".
func (w *workerProcess) failure() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fatal != "" {
		return w.fatal
	}
	if state := w.cmd.ProcessState; state != nil && !state.Success() {
		return fmt.Sprintf("worker pid %d: %v; stderr: %s", w.cmd.Process.Pid, state, strings.TrimSpace(w.stderr.String()))
	}
	return ""
}

func (w *workerProcess) pid() int { return w.cmd.Process.Pid }

func (w *workerProcess) signal(signal syscall.Signal) error {
	if err := w.cmd.Process.Signal(signal); err != nil {
		return fmt.Errorf("%v worker pid %d: %w", signal, w.pid(), err)
	}
	return nil
}

// waitReady waits for the worker's ready report; a worker that exits first
// or does not report in time is an error.
func (w *workerProcess) waitReady(ctx context.Context, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-w.ready:
		return nil
	case <-w.exited:
		return fmt.Errorf("worker pid %d exited before it was ready: %s", w.pid(), w.failure())
	case <-timer.C:
		return fmt.Errorf("worker pid %d not ready within %s", w.pid(), timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop asks the worker to finish (closing its stdin) and waits up to grace
// for it to exit, then kills it. It always resumes a stopped worker first.
func (w *workerProcess) stop(grace time.Duration) {
	_ = w.cmd.Process.Signal(syscall.SIGCONT)
	w.stdinMu.Lock()
	w.stdinClosed = true
	w.stdin.Close()
	w.stdinMu.Unlock()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-w.exited:
	case <-timer.C:
		_ = w.cmd.Process.Kill()
		<-w.exited
	}
}

// chainProducer is one generation of the zombie-producer chain: a
// transactional producer worker writing as ledger slot log. Once the runner
// resumes it after a replacement fenced it, resumedAt is set: every record
// it sends and every commit it begins after that must stay invisible.
type chainProducer struct {
	process *workerProcess
	log     *verify.TrackedLog
	// transactionalID is the worker's, for the ledger's acks.
	transactionalID string
	resumedAt       atomic.Int64 // Unix nanoseconds; 0 while not a zombie
	// postFence marks transactions (by first sequence) whose end began after
	// the resume; owned by the process's reading goroutine.
	postFence map[uint64]bool
}

// handle replays one report into the ledger.
func (c *chainProducer) handle(event workerEvent, zombieWrites *atomic.Int64, metrics *runMetrics) {
	resumed := c.resumedAt.Load()
	afterResume := resumed != 0 && event.Time > resumed
	switch event.Event {
	case "sent":
		fate := verify.FateCommit
		if afterResume {
			fate, _ = verify.FateAbort, zombieWrites.Add(1)
		}
		_ = c.log.RecordSent(event.Seq, fate) // the worker numbers its records from 0 without gaps
	case "ack":
		c.log.RecordAcknowledged(event.Seq, event.ack(c.transactionalID))
	case "err":
		c.log.RecordErrored(event.Seq)
	case "ending":
		if afterResume {
			c.postFence[event.First] = true
			zombieWrites.Add(1)
		}
	case "end":
		outcome := map[string]verify.TransactionOutcome{"committed": verify.TransactionCommitted,
			"aborted": verify.TransactionAborted}[event.Outcome]
		if event.Outcome == "unknown" {
			outcome = verify.TransactionUnknown
		}
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
	spec := workerSpec{
		Role: workerRoleProducer, Mode: plan.mode, Bootstrap: plan.clientBootstrap, FastRetries: hasFaults(plan.faults),
		ClientID:        fmt.Sprintf("exactly-loadgen-%s-zombie-chain-%d", plan.topicSuffix, gen),
		TransactionalID: fmt.Sprintf("exactly-%s-%s-zombie-chain", plan.runIDText, plan.topicSuffix),
		// A short timeout, so a transaction left open is aborted quickly.
		TransactionTimeout: 10 * time.Second,
		Topic:              plan.topic, RunID: plan.runID, Producer: uint32(slot), RecordSize: workload.RecordSize,
		Keys: workload.Keys, Rate: max(float64(workload.Rate)/float64(workload.Producers), 200),
		Budget: uint64(workload.Records), Deadline: l.deadline,
		CommitInterval: plan.commitInterval, CommitRecords: workload.Transaction.CommitRecords,
	}
	chain := &chainProducer{log: l.logs[slot], transactionalID: spec.TransactionalID, postFence: make(map[uint64]bool)}
	process, err := startWorker(l.env.self, spec, func(event workerEvent) {
		chain.handle(event, &l.zombieWrites, l.metrics)
	})
	if err != nil {
		return nil, err
	}
	chain.process = process
	if err := process.waitReady(ctx, 30*time.Second); err != nil {
		process.stop(5 * time.Second)
		if reason := unsupportedReason(errors.New(process.failure())); reason != "" {
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
		if !sleepUntil(ctx, l.start.Add(at)) || chainExited(current) {
			break
		}
		if err := current.process.signal(syscall.SIGSTOP); err != nil {
			break
		}
		replacement, err := l.startChainProducer(ctx, fired+1)
		if err != nil {
			_ = current.process.signal(syscall.SIGCONT)
			l.stopChain(append(zombies, current))
			return err
		}
		l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindZombieProducer, APIKey: faults.NoAPIKey,
			Detail: fmt.Sprintf("froze producer worker pid %d; replacement pid %d took over its transactional.id; resuming the old one in %s",
				current.process.pid(), replacement.process.pid(), action.Pause)})
		sleepUntil(ctx, time.Now().Add(time.Duration(action.Pause)))
		current.resumedAt.Store(time.Now().UnixNano())
		_ = current.process.signal(syscall.SIGCONT)
		zombies = append(zombies, current)
		current = replacement
	}
	// The last generation runs to its deadline; zombies end once fenced.
	select {
	case <-current.process.exited:
	case <-ctx.Done():
	}
	l.stopChain(append(zombies, current))
	if failure := current.process.failure(); failure != "" {
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
		producer.process.stop(10 * time.Second)
	}
}

func chainExited(c *chainProducer) bool {
	select {
	case <-c.process.exited:
		return true
	default:
		return false
	}
}

// sleepUntil waits for deadline; false means ctx ended first.
func sleepUntil(ctx context.Context, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
