package worker

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
	"syscall"
	"time"
)

// Launch says how to start the exactly binary as a worker: its path, the
// arguments that make it `exactly loadgen worker` (the spec follows) and
// extra environment.
type Launch struct {
	Path string
	Args []string
	Env  []string
}

// Process is a worker subprocess and the goroutine reading its reports.
// handle runs on that goroutine, once per event, in order.
type Process struct {
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

// Start launches a worker with spec; handle receives its events.
func Start(launch Launch, spec Spec, handle func(Event)) (*Process, error) {
	if launch.Path == "" {
		return nil, errors.New("client faults need the exactly binary to launch workers; none is set")
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("worker spec: %w", err)
	}
	cmd := exec.Command(launch.Path, append(append([]string(nil), launch.Args...), "--spec", string(specJSON))...)
	cmd.Env = append(os.Environ(), launch.Env...)
	w := &Process{cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{})}
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

// Command writes one command line to the worker's stdin.
func (w *Process) Command(text string) error {
	w.stdinMu.Lock()
	defer w.stdinMu.Unlock()
	if w.stdinClosed {
		return fmt.Errorf("worker pid %d is stopping", w.PID())
	}
	if _, err := io.WriteString(w.stdin, text+"\n"); err != nil {
		return fmt.Errorf("command %q to worker pid %d: %w", text, w.PID(), err)
	}
	return nil
}

// read decodes report lines until stdout ends, then reaps the process.
func (w *Process) read(stdout io.Reader, handle func(Event)) {
	defer close(w.exited)
	readyClosed := false
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		var event Event
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
type limitedWriter struct{ w *Process }

func (l limitedWriter) Write(data []byte) (int, error) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	if room := 4096 - l.w.stderr.Len(); room > 0 {
		l.w.stderr.Write(data[:min(len(data), room)])
	}
	return len(data), nil
}

// Exited is closed once the worker exited and its reports were read.
func (w *Process) Exited() <-chan struct{} { return w.exited }

// HasExited reports whether the worker exited.
func (w *Process) HasExited() bool {
	select {
	case <-w.exited:
		return true
	default:
		return false
	}
}

// Failure describes why the worker ended badly, or "".
func (w *Process) Failure() string {
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

// PID is the worker's process id.
func (w *Process) PID() int { return w.cmd.Process.Pid }

// Signal sends signal to the worker.
func (w *Process) Signal(signal syscall.Signal) error {
	if err := w.cmd.Process.Signal(signal); err != nil {
		return fmt.Errorf("%v worker pid %d: %w", signal, w.PID(), err)
	}
	return nil
}

// WaitReady waits for the worker's ready report; a worker that exits
// first or does not report in time is an error.
func (w *Process) WaitReady(ctx context.Context, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-w.ready:
		return nil
	case <-w.exited:
		return fmt.Errorf("worker pid %d exited before it was ready: %s", w.PID(), w.Failure())
	case <-timer.C:
		return fmt.Errorf("worker pid %d not ready within %s", w.PID(), timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop asks the worker to finish (closing its stdin) and waits up to
// grace for it to exit, then kills it. It always resumes a stopped worker
// first.
func (w *Process) Stop(grace time.Duration) {
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
