package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HookName names an operator-supplied command (`--fault-exec name=command`)
// that acts on one broker of a cluster the load generator did not launch,
// in the spirit of Jepsen's nemesis and Chaos Mesh's actions.
type HookName string

// The hooks process actions use.
const (
	// HookKill crashes the broker (e.g. `ssh {host} sudo systemctl kill -s KILL kafka`).
	HookKill HookName = "kill"
	// HookStart starts a killed broker again on its data.
	HookStart HookName = "start"
	// HookPause stops the broker without killing it (SIGSTOP).
	HookPause HookName = "pause"
	// HookResume lets a paused broker run again (SIGCONT).
	HookResume HookName = "resume"
)

// HookNames lists the hooks in the order help texts name them.
var HookNames = []HookName{HookKill, HookStart, HookPause, HookResume}

// hookKinds is the event each hook records when it succeeds: the same
// kinds a launched Process records, so counts and expectations read
// alike for both.
var hookKinds = map[HookName]Kind{HookKill: KindKill, HookStart: KindRestart, HookPause: KindPause, HookResume: KindResume}

// Hook defaults.
const (
	DefaultHookTimeout     = 60 * time.Second
	DefaultRecoveryTimeout = 60 * time.Second
)

// hookOutputTail bounds the stderr kept of a hook, for its error.
const hookOutputTail = 2048

// Hooks are the operator's commands for process faults on a cluster the
// load generator did not launch. Each runs through `sh -c` with the
// placeholders {id}, {host} and {port} replaced by the target broker's
// node id, host and port from Metadata, shell-quoted where they hold
// anything but letters, digits and ._:- (so a placeholder needs no quotes
// of its own). Hooks is immutable once built and safe for concurrent use.
type Hooks struct {
	commands map[HookName]string
	// Timeout bounds each invocation; a hook still running then is killed
	// with its process group and reported as hung.
	Timeout time.Duration
	// Recovery bounds the wait, after a start or resume hook, until the
	// broker is back in Metadata and every partition of the run's topics
	// has its full ISR.
	Recovery time.Duration
}

// ParseHooks reads `name=command` specs (names: see HookNames; each at
// most once). timeout and recovery of 0 mean the defaults.
func ParseHooks(specs []string, timeout, recovery time.Duration) (*Hooks, error) {
	if timeout < 0 || recovery < 0 {
		return nil, errors.New("hook timeouts must not be negative")
	}
	hooks := &Hooks{commands: map[HookName]string{}, Timeout: timeout, Recovery: recovery}
	if hooks.Timeout == 0 {
		hooks.Timeout = DefaultHookTimeout
	}
	if hooks.Recovery == 0 {
		hooks.Recovery = DefaultRecoveryTimeout
	}
	for _, spec := range specs {
		name, command, ok := strings.Cut(spec, "=")
		name, command = strings.TrimSpace(name), strings.TrimSpace(command)
		if !ok || command == "" {
			return nil, fmt.Errorf("--fault-exec %q: want name=command, e.g. kill='kill -KILL $(cat /run/kafka-{id}.pid)'", spec)
		}
		if !slices.Contains(HookNames, HookName(name)) {
			return nil, fmt.Errorf("--fault-exec %q: hook %q is not one of %v", spec, name, HookNames)
		}
		if _, dup := hooks.commands[HookName(name)]; dup {
			return nil, fmt.Errorf("--fault-exec: hook %s given twice", name)
		}
		hooks.commands[HookName(name)] = command
	}
	if len(hooks.commands) == 0 {
		return nil, errors.New("--fault-exec: no hooks")
	}
	return hooks, nil
}

// Has reports whether the hook was given.
func (h *Hooks) Has(name HookName) bool {
	_, ok := h.commands[name]
	return ok
}

// Command is the hook's command as given, placeholders unexpanded.
func (h *Hooks) Command(name HookName) string { return h.commands[name] }

// HooksFor lists the hooks an action needs: the one that brings the
// broker down and the one that brings it back. broker-partition and
// slow-follower need the partition proxies of a launched cluster and no
// hook serves them.
func HooksFor(kind ProcessActionKind) (down, up HookName, ok bool) {
	switch kind {
	case ProcessKillRestart, ProcessLeaderKill, ProcessCoordinatorKill, ProcessGroupCoordinatorKill:
		return HookKill, HookStart, true
	case ProcessPause, ProcessLeaderPause:
		return HookPause, HookResume, true
	}
	return "", "", false
}

// Missing lists the hooks kind needs that were not given (nil: none; a
// kind no hook serves reports itself as missing).
func (h *Hooks) Missing(kind ProcessActionKind) []HookName {
	down, up, ok := HooksFor(kind)
	if !ok {
		return []HookName{HookName(kind)}
	}
	var missing []HookName
	for _, name := range []HookName{down, up} {
		if !h.Has(name) {
			missing = append(missing, name)
		}
	}
	return missing
}

// Broker is one broker of a cluster as Metadata names it.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
}

// Addr is the broker's host:port.
func (b Broker) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))) }

// String is "node 2 (127.0.0.5:9092)".
func (b Broker) String() string { return fmt.Sprintf("node %d (%s)", b.NodeID, b.Addr()) }

// Expand replaces the placeholders of command with broker's values,
// shell-quoted where needed.
func Expand(command string, broker Broker) string {
	return strings.NewReplacer(
		"{id}", shellQuote(strconv.Itoa(int(broker.NodeID))),
		"{host}", shellQuote(broker.Host),
		"{port}", shellQuote(strconv.Itoa(int(broker.Port))),
	).Replace(command)
}

// shellQuote returns s as one word of sh: unchanged when it holds only
// characters sh gives no meaning to, else in single quotes.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-/", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// HookError is a hook that failed: it exited non-zero, could not start,
// or did not finish within its timeout.
type HookError struct {
	Hook    HookName
	Broker  Broker
	Command string // as run, placeholders expanded
	Status  string // "exit status 3", "did not finish within 60s; killed"
	Stderr  string // the last lines of its stderr
}

func (e *HookError) Error() string {
	text := fmt.Sprintf("--fault-exec hook %s on %s failed: %s; command: %s", e.Hook, e.Broker, e.Status, e.Command)
	if e.Stderr != "" {
		text += "; stderr: " + e.Stderr
	}
	return text
}

// Run runs the hook name against broker, bounded by h.Timeout, and
// records it in log (nil: nowhere): a success as the hook's kind (kill,
// restart, pause, resume) with its exit status and time, a failure as
// KindHookFailed. ctx ending kills the hook as its timeout does.
func (h *Hooks) Run(ctx context.Context, name HookName, broker Broker, log *EventLog) error {
	command, ok := h.commands[name]
	if !ok {
		return fmt.Errorf("--fault-exec: no %s hook", name)
	}
	expanded := Expand(command, broker)
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", expanded)
	cmd.Env = append(os.Environ(), "EXACTLY_BROKER_ID="+strconv.Itoa(int(broker.NodeID)),
		"EXACTLY_BROKER_HOST="+broker.Host, "EXACTLY_BROKER_PORT="+strconv.Itoa(int(broker.Port)))
	// Its own process group, so that a hung hook is killed with every
	// child it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A start hook may leave the broker running in the background with
	// the hook's output still open: stop waiting for it soon after the
	// shell exits.
	cmd.WaitDelay = time.Second
	stderr := &tailBuffer{limit: hookOutputTail}
	cmd.Stdout, cmd.Stderr = nil, stderr
	started := time.Now()
	err := cmd.Run()
	elapsed := time.Since(started).Round(time.Millisecond)
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // the shell exited 0; a child it left behind holds stderr
	}
	if err == nil {
		log.record(hookKinds[name], broker, fmt.Sprintf("hook %s %s: exit 0 in %v", name, broker, elapsed))
		return nil
	}
	status := err.Error()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		status = fmt.Sprintf("did not finish within %v; killed", h.Timeout)
	case ctx.Err() != nil:
		status = "cancelled: " + ctx.Err().Error()
	}
	failure := &HookError{Hook: name, Broker: broker, Command: expanded, Status: status, Stderr: stderr.lastLines(5)}
	log.record(KindHookFailed, broker, fmt.Sprintf("hook %s %s: %s in %v", name, broker, status, elapsed))
	return failure
}

// record notes a hook's event; a nil log records nothing.
func (l *EventLog) record(kind Kind, broker Broker, detail string) {
	if l != nil {
		l.Record(Event{Broker: fmt.Sprintf("broker %d (%s)", broker.NodeID, broker.Addr()), Kind: kind, APIKey: NoAPIKey, Detail: detail})
	}
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit int
	data  []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.data = append(b.data, p...)
	if over := len(b.data) - b.limit; over > 0 {
		b.data = b.data[over:]
	}
	return len(p), nil
}

// lastLines is at most n of the last lines, joined by " | ".
func (b *tailBuffer) lastLines(n int) string {
	lines := strings.Split(strings.TrimSpace(string(b.data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}
