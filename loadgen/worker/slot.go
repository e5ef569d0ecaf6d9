package worker

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/exactly-eos/exactly/internal/wait"
)

// Slot is one worker position the runner keeps filled under a fault that
// kills workers: it holds the current process, whether that worker
// reported a transaction open, and whether it was killed on purpose (by
// the runner, or by itself at a crash point), in which case Supervise
// starts a replacement after RestartAfter. Its supervisor goroutine starts
// and reaps processes, a crash scheduler kills them, the process's reading
// goroutine reports open transactions: mu guards the fields they share.
type Slot struct {
	Index        int
	Spec         Spec
	RestartAfter time.Duration

	mu      sync.Mutex
	process *Process // nil before the first launch
	open    bool     // the worker reported a transaction with records not yet ended
	killed  bool     // process was killed on purpose
}

// Launch starts the slot's worker (a first one or a replacement) with
// handle receiving its events.
func (s *Slot) Launch(launch Launch, handle func(Event)) error {
	process, err := StartWith(launch, s.Index, s.Spec, Handlers{Event: handle})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.process, s.open, s.killed = process, false, false
	s.mu.Unlock()
	return nil
}

// Current is the slot's worker process.
func (s *Slot) Current() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.process
}

// SetOpen records whether the worker has a transaction with records open.
func (s *Slot) SetOpen(open bool) {
	s.mu.Lock()
	s.open = open
	s.mu.Unlock()
}

// MarkKilled records that the worker is dying on purpose (it reported it
// kills itself at a crash point).
func (s *Slot) MarkKilled() {
	s.mu.Lock()
	s.killed = true
	s.mu.Unlock()
}

// Kill sends SIGKILL to the slot's worker (no commit, no abort, no leave
// group) and says whether it had a transaction open.
func (s *Slot) Kill() (pid int, open bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.process == nil || s.killed {
		return 0, false, errors.New("no worker running")
	}
	if err := s.process.Signal(syscall.SIGKILL); err != nil {
		return 0, false, err
	}
	s.killed = true
	return s.process.PID(), s.open, nil
}

// Supervise waits for the slot's worker to exit: a worker killed on
// purpose is replaced (relaunch) after RestartAfter; at ctx's end the
// worker is asked to finish; any other exit ends supervision, an error
// when the worker failed. ended is told the failure ("" for a clean exit)
// of a worker that was not killed.
func (s *Slot) Supervise(ctx context.Context, relaunch func() error, ended func(failure string)) error {
	for {
		process := s.Current()
		select {
		case <-ctx.Done():
			process.Stop(15 * time.Second)
			return nil
		case <-process.exited:
		}
		s.mu.Lock()
		killed := s.killed
		s.mu.Unlock()
		if !killed {
			failure := process.Failure()
			ended(failure)
			if failure == "" {
				return nil
			}
			return errors.New(failure)
		}
		if !wait.Until(ctx, time.Now().Add(s.RestartAfter)) {
			return nil
		}
		if err := relaunch(); err != nil {
			return err
		}
	}
}

// WaitOpen polls until the worker reports an open transaction or
// deadline.
func (s *Slot) WaitOpen(ctx context.Context, deadline time.Time) {
	ticker := time.NewTicker(5 * time.Millisecond)
	defer ticker.Stop()
	for time.Now().Before(deadline) {
		s.mu.Lock()
		open := s.open
		s.mu.Unlock()
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
