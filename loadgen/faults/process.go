package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
)

// ProcessConfig describes a server process the load generator launches
// itself, usually one broker of the `exactly` binary (see BrokerArgs).
type ProcessConfig struct {
	// Name labels the process in events; default: Addr.
	Name string
	// Path is the executable; Args its arguments (without argv[0]).
	Path string
	Args []string
	// Env is added to the parent's environment.
	Env []string
	// DataDir, when set, is created before every start; the caller names it
	// in Args (it survives kills and restarts, as a broker's log dir must).
	DataDir string
	// Addr is the host:port the process listens on; it is ready once a TCP
	// connection to it succeeds.
	Addr string
	// StartTimeout bounds each start; 0 means 30 s.
	StartTimeout time.Duration
	// Stdout and Stderr receive the process's output; nil discards it.
	Stdout, Stderr io.Writer
	// Log receives kill, restart, pause and resume events; may be nil.
	Log *EventLog
}

// BrokerArgs is the argument list that starts one `exactly broker`.
func BrokerArgs(listen, dataDir string, nodeID int, extra ...string) []string {
	args := []string{"broker", "--listen", listen, "--data-dir", dataDir, "--node-id", strconv.Itoa(nodeID)}
	return append(args, extra...)
}

// Process is one launched server. Its methods are safe for concurrent use;
// mu serialises them, so a kill never races a start.
type Process struct {
	config ProcessConfig

	mu      sync.Mutex    // guards cmd, exited, waitErr, paused, cut, heal, degrade
	cmd     *exec.Cmd     // nil before the first start
	exited  chan struct{} // closed when cmd's Wait returns
	waitErr error         // cmd's Wait result, set before exited closes
	paused  bool
	// cut and heal are the partition hooks of SetPartition (nil: none).
	cut, heal PartitionHook
	// degrade is the network hook of SetNetwork (nil: none).
	degrade NetworkHook
}

// NewProcess validates config; Start launches it.
func NewProcess(config ProcessConfig) (*Process, error) {
	if config.Path == "" {
		return nil, errors.New("process: no executable path")
	}
	if _, _, err := net.SplitHostPort(config.Addr); err != nil {
		return nil, fmt.Errorf("process %s: listen address %q: %w", config.Path, config.Addr, err)
	}
	if config.Name == "" {
		config.Name = config.Addr
	}
	if config.StartTimeout == 0 {
		config.StartTimeout = 30 * time.Second
	}
	return &Process{config: config}, nil
}

// Name is the process's label in events.
func (p *Process) Name() string { return p.config.Name }

// Addr is the address the process listens on.
func (p *Process) Addr() string { return p.config.Addr }

// PID is the current process id, or 0 when none is running.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Start launches the process and waits until its address accepts
// connections. Starting a running process is an error.
func (p *Process) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked(ctx)
}

func (p *Process) runningLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *Process) startLocked(ctx context.Context) error {
	if p.runningLocked() {
		return fmt.Errorf("process %s: already running as pid %d", p.config.Name, p.cmd.Process.Pid)
	}
	if p.config.DataDir != "" {
		if err := os.MkdirAll(p.config.DataDir, 0o755); err != nil {
			return fmt.Errorf("process %s: data dir: %w", p.config.Name, err)
		}
	}
	cmd := exec.Command(p.config.Path, p.config.Args...)
	cmd.Env = append(os.Environ(), p.config.Env...)
	cmd.Stdout, cmd.Stderr = p.config.Stdout, p.config.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("process %s: start %s: %w", p.config.Name, p.config.Path, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.paused = cmd, exited, false
	// The waiter is the only writer of waitErr; it publishes by closing
	// exited, so readers that saw exited closed may read waitErr.
	go func() {
		p.waitErr = cmd.Wait()
		close(exited)
	}()
	ctx, cancel := context.WithTimeout(ctx, p.config.StartTimeout)
	defer cancel()
	if err := waitListening(ctx, p.config.Addr, exited); err != nil {
		if errors.Is(err, errExited) {
			return fmt.Errorf("process %s: exited before listening on %s: %v", p.config.Name, p.config.Addr, p.waitErr)
		}
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("process %s: not listening on %s: %w", p.config.Name, p.config.Addr, err)
	}
	return nil
}

var errExited = errors.New("process exited")

// waitListening dials addr until it accepts, the process exits or ctx ends.
func waitListening(ctx context.Context, addr string, exited <-chan struct{}) error {
	retry := time.NewTicker(20 * time.Millisecond)
	defer retry.Stop()
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return fmt.Errorf("%w (last dial: %v)", ctx.Err(), err)
		case <-retry.C:
		}
	}
}

// Kill sends SIGKILL (a crash: nothing is flushed) and waits for the exit.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killLocked()
}

func (p *Process) killLocked() error {
	if !p.runningLocked() {
		return fmt.Errorf("process %s: not running", p.config.Name)
	}
	pid := p.cmd.Process.Pid
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("process %s: SIGKILL pid %d: %w", p.config.Name, pid, err)
	}
	<-p.exited
	p.paused = false
	p.record(KindKill, fmt.Sprintf("SIGKILL pid %d", pid))
	return nil
}

// Restart kills the process, waits down and starts it again on the same
// address and data dir. ctx ending cuts the down time short but the process
// is still started (bounded by StartTimeout), so a run whose fault schedule
// is cancelled never leaves a broker dead for the drain and read-back.
func (p *Process) Restart(ctx context.Context, down time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.killLocked(); err != nil {
		return err
	}
	killed := time.Now()
	timer := time.NewTimer(down)
	defer timer.Stop()
	detail := fmt.Sprintf("after %v down", down)
	select {
	case <-timer.C:
	case <-ctx.Done():
		// The event says how long the process really was down.
		detail = fmt.Sprintf("after %v down (the fault schedule ended; %v planned)", time.Since(killed).Round(100*time.Millisecond), down)
	}
	if err := p.startLocked(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	p.record(KindRestart, fmt.Sprintf("pid %d %s", p.cmd.Process.Pid, detail))
	return nil
}

// Pause sends SIGSTOP: the process keeps its sockets but does nothing.
func (p *Process) Pause() error { return p.signal(syscall.SIGSTOP, true, KindPause) }

// Resume sends SIGCONT to a paused process.
func (p *Process) Resume() error { return p.signal(syscall.SIGCONT, false, KindResume) }

func (p *Process) signal(signal syscall.Signal, paused bool, kind Kind) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return fmt.Errorf("process %s: not running", p.config.Name)
	}
	if p.paused == paused {
		return fmt.Errorf("process %s: already %s", p.config.Name, map[bool]string{true: "paused", false: "running"}[paused])
	}
	pid := p.cmd.Process.Pid
	if err := p.cmd.Process.Signal(signal); err != nil {
		return fmt.Errorf("process %s: %v pid %d: %w", p.config.Name, signal, pid, err)
	}
	p.paused = paused
	p.record(kind, fmt.Sprintf("%v pid %d", signal, pid))
	return nil
}

// Stop ends the process cleanly: SIGCONT if paused, SIGTERM, and SIGKILL if
// it has not exited within grace. Stopping a process that is not running
// does nothing. It returns the process's exit error only for SIGKILL.
func (p *Process) Stop(grace time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return nil
	}
	if p.paused {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.paused = false
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("process %s: did not stop within %v of SIGTERM; killed", p.config.Name, grace)
	}
}

// PartitionHook cuts a process off the network or heals it; detail, if
// not empty, is added to the event recorded.
type PartitionHook func() (detail string, err error)

// SetPartition gives the process the hooks that cut it off the network
// and heal it (a cluster behind partition proxies); nil hooks remove them.
func (p *Process) SetPartition(cut, heal PartitionHook) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.heal = cut, heal
}

// Cut cuts the process off from the other brokers and from clients by the
// hook of SetPartition, and records it.
func (p *Process) Cut() error {
	return p.partition(false, KindCut, "cut off from the other brokers and from clients")
}

// Heal lets a cut-off process back onto the network and records it.
func (p *Process) Heal() error {
	return p.partition(true, KindHeal, "reachable again")
}

func (p *Process) partition(heal bool, kind Kind, detail string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn := p.cut
	if heal {
		fn = p.heal
	}
	return p.runHookLocked(fn, "broker-partition", kind, detail)
}

// runHookLocked runs a proxy hook (nil: the process has no partition
// proxies in front of it, which fault needs them) and records kind with
// detail and what the hook adds (p.mu held).
func (p *Process) runHookLocked(hook func() (string, error), fault string, kind Kind, detail string) error {
	if hook == nil {
		return fmt.Errorf("process %s: no partition proxies in front of it (%s needs --target cluster)", p.config.Name, fault)
	}
	extra, err := hook()
	if err != nil {
		return fmt.Errorf("process %s: %s: %w", p.config.Name, kind, err)
	}
	if extra != "" {
		detail += " (" + extra + ")"
	}
	p.record(kind, detail)
	return nil
}

// NetworkHook impairs a process's links to the other brokers with link,
// both ways (a zero link restores them); detail, if not empty, is added
// to the event recorded.
type NetworkHook func(link netem.Link) (detail string, err error)

// SetNetwork gives the process the hook that slows its links to the other
// brokers (a cluster behind partition proxies); nil removes it.
func (p *Process) SetNetwork(degrade NetworkHook) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.degrade = degrade
}

// Degrade slows the process's links to the other brokers with link by the
// hook of SetNetwork, and records it. A zero link is recorded too: the
// links then run through the proxies unimpaired (a reference run).
func (p *Process) Degrade(link netem.Link) error {
	detail := "links to the other brokers slowed: " + link.String()
	if link.Zero() {
		detail = "links to the other brokers through the partition proxies, unimpaired (a zero network)"
	}
	return p.network(link, KindSlow, detail)
}

// Restore lifts Degrade and records it.
func (p *Process) Restore() error {
	return p.network(netem.Link{}, KindRestore, "links to the other brokers restored")
}

func (p *Process) network(link netem.Link, kind Kind, detail string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var hook func() (string, error)
	if p.degrade != nil {
		hook = func() (string, error) { return p.degrade(link) }
	}
	return p.runHookLocked(hook, "slow-follower", kind, detail)
}

// SetLog makes the process record its kills, restarts, pauses and resumes
// in log from now on (nil: nowhere): a cluster launched once for many runs
// records each run's faults in that run's log.
func (p *Process) SetLog(log *EventLog) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.config.Log = log
}

// record notes an event in the process's log; p.mu is held.
func (p *Process) record(kind Kind, detail string) {
	if p.config.Log != nil {
		p.config.Log.Record(Event{Broker: p.config.Name, Kind: kind, APIKey: NoAPIKey, Detail: detail})
	}
}
