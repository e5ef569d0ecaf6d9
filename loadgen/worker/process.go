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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Launch says how to start a worker: by default the exactly binary at
// Path with the arguments that make it `exactly loadgen worker` and extra
// environment; with Exec, a command template (ssh, kubectl exec, docker
// exec, a wrapper script) whose standard input and output reach an
// `exactly loadgen worker` wherever it runs. The spec and the SASL
// password go in the handshake on stdin, so a transport needs to carry
// nothing but stdin and stdout.
type Launch struct {
	Path string
	Args []string
	Env  []string
	// Exec is the command template, already split into words; "{host}"
	// in a word is replaced by the worker's host (Hosts, in turn), "{i}"
	// by its number. Empty: Path and Args.
	Exec  []string
	Hosts []string
	// Password is the SASL password sent in the handshake ("": none).
	Password string
}

// Command returns the command line of worker number index: the
// expanded template, or Path and Args.
func (l Launch) Command(index int) []string {
	if len(l.Exec) == 0 {
		return append([]string{l.Path}, l.Args...)
	}
	host := ""
	if len(l.Hosts) > 0 {
		host = l.Hosts[index%len(l.Hosts)]
	}
	words := make([]string, len(l.Exec))
	for i, word := range l.Exec {
		words[i] = strings.NewReplacer("{host}", host, "{i}", strconv.Itoa(index)).Replace(word)
	}
	return words
}

// Host is worker index's host ("" without Hosts).
func (l Launch) Host(index int) string {
	if len(l.Exec) == 0 || len(l.Hosts) == 0 {
		return ""
	}
	return l.Hosts[index%len(l.Hosts)]
}

// Handlers receive a worker's reports on its reading goroutine, in the
// order it sent them. Nil handlers drop their kind.
type Handlers struct {
	Event func(Event)
	// Records receives each record batch, decompressed (ApplyRecords
	// decodes it); an error ends the worker as failed.
	Records func(batch []byte) error
	// Summary receives each summary; an error ends the worker as failed.
	Summary func(Summary) error
}

// Process is a worker subprocess (or the local end of its transport) and
// the goroutine reading its reports.
type Process struct {
	cmd     *exec.Cmd
	command string // the command line, for messages
	stdin   io.WriteCloser
	ready   chan struct{} // closed at the first ready event
	exited  chan struct{} // closed once stdout ended and the process exited

	mu     sync.Mutex // guards fatal and stderr
	fatal  string
	stderr strings.Builder // the worker's stderr, first 4 KiB

	stdinMu     sync.Mutex // guards writes to stdin and stdinClosed
	stdinClosed bool
}

// Start launches worker 0 with spec; handle receives its events.
func Start(launch Launch, spec Spec, handle func(Event)) (*Process, error) {
	return StartWith(launch, 0, spec, Handlers{Event: handle})
}

// StartWith launches worker number index with spec, handlers receiving
// its reports.
func StartWith(launch Launch, index int, spec Spec, handlers Handlers) (*Process, error) {
	if launch.Path == "" && len(launch.Exec) == 0 {
		return nil, errors.New("workers need the exactly binary or a --worker-exec command to launch them; none is set")
	}
	handshake, err := json.Marshal(Handshake{Protocol: Protocol, Spec: spec, Password: launch.Password})
	if err != nil {
		return nil, fmt.Errorf("worker spec: %w", err)
	}
	words := launch.Command(index)
	cmd := exec.Command(words[0], words[1:]...)
	cmd.Env = append(os.Environ(), launch.Env...)
	// A wrapper's children may hold the worker's stderr after it exits:
	// Wait gives up on them after this.
	cmd.WaitDelay = 5 * time.Second
	w := &Process{cmd: cmd, command: strings.Join(words, " "), ready: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stderr = limitedWriter{w}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stdout: %w", err)
	}
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("worker stdin: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %s (%s): %w", spec.ClientID, w.command, err)
	}
	go w.read(stdout, handlers)
	// A worker that exited at once cannot take it; read reports why.
	_ = w.Command(string(handshake))
	return w, nil
}

// closeStdin closes the worker's stdin: no more commands.
func (w *Process) closeStdin() {
	w.stdinMu.Lock()
	defer w.stdinMu.Unlock()
	if !w.stdinClosed {
		w.stdinClosed = true
		w.stdin.Close()
	}
}

// Command writes one command line to the worker's stdin.
func (w *Process) Command(text string) error {
	w.stdinMu.Lock()
	defer w.stdinMu.Unlock()
	if w.stdinClosed {
		return fmt.Errorf("worker pid %d is stopping", w.PID())
	}
	if _, err := io.WriteString(w.stdin, text+"\n"); err != nil {
		return fmt.Errorf("command to worker pid %d: %w", w.PID(), err)
	}
	return nil
}

// read checks the worker's hello, decodes its frames until stdout ends,
// then reaps the process.
func (w *Process) read(stdout io.Reader, handlers Handlers) {
	defer close(w.exited)
	in := bufio.NewReaderSize(stdout, 64<<10)
	if _, err := readHello(in); err != nil {
		// A worker that cannot be talked to is of no use: end it.
		// (Not draining its output: a child of a wrapper may hold it.
		// Closing stdin ends such a child that reads it.)
		w.fail(err.Error())
		w.closeStdin()
		_ = w.cmd.Process.Kill()
		_ = w.cmd.Wait()
		return
	}
	decoder, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxFrame*4))
	defer decoder.Close()
	readyClosed := false
	for {
		kind, payload, err := readFrame(in)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				w.fail(fmt.Sprintf("its report stream broke: %v", err))
				_ = w.cmd.Process.Kill()
			}
			break
		}
		switch kind {
		case frameEvent:
			var event Event
			if json.Unmarshal(payload, &event) != nil {
				w.fail(fmt.Sprintf("an event that does not decode: %q", payload))
				continue
			}
			switch event.Event {
			case "ready":
				if !readyClosed {
					close(w.ready)
					readyClosed = true
				}
			case "fatal":
				w.fail(event.Message)
			}
			if handlers.Event != nil {
				handlers.Event(event)
			}
		case frameRecords:
			batch, err := decoder.DecodeAll(payload, nil)
			if err != nil {
				w.fail(fmt.Sprintf("a record batch that does not decompress: %v", err))
				continue
			}
			if handlers.Records != nil {
				if err := handlers.Records(batch); err != nil {
					w.fail(err.Error())
				}
			}
		case frameSummary:
			var summary Summary
			if json.Unmarshal(payload, &summary) != nil {
				w.fail(fmt.Sprintf("a summary that does not decode: %q", payload))
				continue
			}
			if handlers.Summary != nil {
				if err := handlers.Summary(summary); err != nil {
					w.fail(err.Error())
				}
			}
		}
	}
	_ = w.cmd.Wait()
}

// fail keeps the first reason the worker failed.
func (w *Process) fail(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fatal == "" {
		w.fatal = reason
	}
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
	stderr := strings.TrimSpace(w.stderr.String())
	if stderr != "" {
		stderr = "; stderr: " + stderr
	}
	if w.fatal != "" {
		return fmt.Sprintf("worker `%s` (pid %d): %s%s", w.command, w.cmd.Process.Pid, w.fatal, stderr)
	}
	if state := w.cmd.ProcessState; state != nil && !state.Success() {
		return fmt.Sprintf("worker `%s` (pid %d): %v%s", w.command, w.cmd.Process.Pid, state, stderr)
	}
	return ""
}

// CommandLine is the command that started the worker.
func (w *Process) CommandLine() string { return w.command }

// CPUTime is the CPU time (user and system) of the exited local process:
// the worker itself, or only its transport (ssh) when it runs elsewhere.
func (w *Process) CPUTime() time.Duration {
	if state := w.cmd.ProcessState; state != nil {
		return state.UserTime() + state.SystemTime()
	}
	return 0
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
	w.closeStdin()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-w.exited:
	case <-timer.C:
		_ = w.cmd.Process.Kill()
		<-w.exited
	}
}
