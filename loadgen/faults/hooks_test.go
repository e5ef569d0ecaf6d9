package faults

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var hookBroker = Broker{NodeID: 2, Host: "127.0.0.5", Port: 9092}

func mustHooks(t *testing.T, timeout time.Duration, specs ...string) *Hooks {
	t.Helper()
	hooks, err := ParseHooks(specs, timeout, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return hooks
}

// TestParseHooks: name=command, names from HookNames, each once.
func TestParseHooks(t *testing.T) {
	t.Parallel()
	hooks := mustHooks(t, 0, "kill=kill -KILL {id}", "start = systemctl start kafka")
	if !hooks.Has(HookKill) || !hooks.Has(HookStart) || hooks.Has(HookPause) || hooks.Command(HookStart) != "systemctl start kafka" {
		t.Errorf("hooks %+v", hooks)
	}
	if hooks.Timeout != DefaultHookTimeout || hooks.Recovery != time.Second {
		t.Errorf("timeouts %v %v", hooks.Timeout, hooks.Recovery)
	}
	if missing := hooks.Missing(ProcessLeaderPause); len(missing) != 2 || missing[0] != HookPause {
		t.Errorf("leader-pause misses %v", missing)
	}
	if missing := hooks.Missing(ProcessCoordinatorKill); len(missing) != 0 {
		t.Errorf("coordinator-kill misses %v", missing)
	}
	if missing := hooks.Missing(ProcessBrokerPartition); len(missing) != 1 {
		t.Errorf("broker-partition misses %v: no hook serves it", missing)
	}
	if missing := hooks.Missing(ProcessSlowFollower); len(missing) != 1 {
		t.Errorf("slow-follower misses %v: no hook serves it", missing)
	}
	for _, bad := range [][]string{{"kill"}, {"kill="}, {"stop=x"}, {"kill=a", "kill=b"}, nil} {
		if _, err := ParseHooks(bad, 0, 0); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestExpandQuotes: placeholders take the broker's values, quoted for sh
// only where they need it, so that sh sees each value as one word.
func TestExpandQuotes(t *testing.T) {
	t.Parallel()
	if got := Expand("ssh {host} kill -KILL $(cat /run/kafka-{id}.pid) # {port}", hookBroker); got != "ssh 127.0.0.5 kill -KILL $(cat /run/kafka-2.pid) # 9092" {
		t.Errorf("plain values: %q", got)
	}
	odd := Broker{NodeID: 1, Host: "a b'c;$(touch x)", Port: 1}
	if got := Expand("echo {host}", odd); got != `echo 'a b'\''c;$(touch x)'` {
		t.Errorf("odd host: %q", got)
	}
	// Run through sh, the odd host arrives as one argument, unexpanded.
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	hooks := mustHooks(t, 5*time.Second, "kill=printf '%s|' {id} {host} {port} \"$EXACTLY_BROKER_ID\" > "+out)
	if err := hooks.Run(context.Background(), HookKill, odd, nil); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	if string(data) != "1|a b'c;$(touch x)|1|1|" {
		t.Errorf("sh saw %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("the host's $(...) ran")
	}
}

// TestHookEvents: a hook that succeeds records its kind with its exit
// status and time; one that fails records hook-failed and returns an
// error naming the hook, the broker, the command, the status and the last
// lines of its stderr.
func TestHookEvents(t *testing.T) {
	t.Parallel()
	log := NewEventLog(nil)
	hooks := mustHooks(t, 5*time.Second, "kill=true", "start=echo one >&2; echo two >&2; exit 3")
	if err := hooks.Run(context.Background(), HookKill, hookBroker, log); err != nil {
		t.Fatal(err)
	}
	err := hooks.Run(context.Background(), HookStart, hookBroker, log)
	var failure *HookError
	if !errors.As(err, &failure) || !IsHookFailure(err) {
		t.Fatalf("err %v, want a HookError", err)
	}
	for _, want := range []string{"hook start on node 2 (127.0.0.5:9092)", "exit status 3", "exit 3", "one | two"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	events := log.Events()
	if len(events) != 2 || events[0].Kind != KindKill || !strings.HasPrefix(events[0].Detail, "hook kill node 2 (127.0.0.5:9092): exit 0 in ") ||
		events[1].Kind != KindHookFailed || !strings.Contains(events[1].Detail, "exit status 3") {
		t.Errorf("events %v", events)
	}
}

// TestHookTimeout: a hook that hangs is killed, with the children it
// started, at its timeout and reported as such.
func TestHookTimeout(t *testing.T) {
	t.Parallel()
	hooks := mustHooks(t, 300*time.Millisecond, "pause=sleep 30 & sleep 30")
	started := time.Now()
	err := hooks.Run(context.Background(), HookPause, hookBroker, nil)
	if elapsed := time.Since(started); elapsed > 5*time.Second {
		t.Errorf("took %v", elapsed)
	}
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms; killed") {
		t.Errorf("err %v", err)
	}
}

// TestHookBackgroundChild: a start hook that leaves its broker running in
// the background holding the hook's stderr still counts as done once the
// shell exited 0.
func TestHookBackgroundChild(t *testing.T) {
	t.Parallel()
	hooks := mustHooks(t, 10*time.Second, "start=sleep 3 & exit 0")
	started := time.Now()
	if err := hooks.Run(context.Background(), HookStart, hookBroker, nil); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(started); elapsed > 2500*time.Millisecond {
		t.Errorf("waited %v for the background child", elapsed)
	}
}

// hookScript is a fake cluster's hooks, each appending "name id" to a
// file.
func hookScript(t *testing.T, failing HookName) (*Hooks, func() []string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "calls")
	var specs []string
	for _, name := range HookNames {
		command := "echo " + string(name) + " {id} >> " + file
		if name == failing {
			command += "; echo no such broker >&2; exit 1"
		}
		specs = append(specs, string(name)+"="+command)
	}
	hooks, err := ParseHooks(specs, 5*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return hooks, func() []string {
		data, _ := os.ReadFile(file)
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
}

// TestRunHookActions: each firing selects its broker, runs the down hook,
// waits, runs the up hook and waits for the recovery; the events count
// every hook.
func TestRunHookActions(t *testing.T) {
	t.Parallel()
	hooks, calls := hookScript(t, "")
	log := NewEventLog(nil)
	var selected, recovered []int
	cluster := External{Hooks: hooks, Log: log,
		Select: func(_ context.Context, action ProcessAction, fired int) (Broker, error) {
			selected = append(selected, fired)
			return Broker{NodeID: int32(fired + 1), Host: "h", Port: 1}, nil
		},
		Recovered: func(_ context.Context, broker Broker) error {
			recovered = append(recovered, int(broker.NodeID))
			return nil
		}}
	actions := []ProcessAction{{Action: ProcessLeaderKill, Schedule: Schedule{Every: Duration(10 * time.Millisecond), Count: 2},
		Down: Duration(time.Millisecond)}}
	if err := RunHookActions(context.Background(), actions, cluster); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls(), ", "); got != "kill 1, start 1, kill 2, start 2" {
		t.Errorf("calls %q", got)
	}
	if len(selected) != 2 || len(recovered) != 2 || log.Count(KindKill) != 2 || log.Count(KindRestart) != 2 {
		t.Errorf("selected %v, recovered %v, counts %v", selected, recovered, log.Counts())
	}
	// leader-pause: pause and resume.
	actions[0].Action, actions[0].Count = ProcessLeaderPause, 1
	if err := RunHookActions(context.Background(), actions, cluster); err != nil {
		t.Fatal(err)
	}
	if log.Count(KindPause) != 1 || log.Count(KindResume) != 1 {
		t.Errorf("counts %v", log.Counts())
	}
}

// TestRunHookActionsFailures: a failing kill hook still tries the start
// hook and ends the actions with a HookError; a broker that does not come
// back is a RecoveryError; an action without its hooks does not start.
func TestRunHookActionsFailures(t *testing.T) {
	t.Parallel()
	hooks, calls := hookScript(t, HookKill)
	log := NewEventLog(nil)
	cluster := External{Hooks: hooks, Log: log,
		Select: func(context.Context, ProcessAction, int) (Broker, error) { return hookBroker, nil },
		Recovered: func(context.Context, Broker) error {
			t.Error("recovery awaited after a failed hook")
			return nil
		}}
	actions := []ProcessAction{{Action: ProcessKillRestart, Schedule: Schedule{Every: Duration(time.Millisecond), Count: 3},
		Down: Duration(time.Millisecond)}}
	err := RunHookActions(context.Background(), actions, cluster)
	if !IsHookFailure(err) || !strings.Contains(err.Error(), "no such broker") {
		t.Errorf("err %v", err)
	}
	if got := strings.Join(calls(), ", "); got != "kill 2, start 2" {
		t.Errorf("calls %q: want one kill, then the start tried, then nothing", got)
	}
	if log.Count(KindHookFailed) != 1 || log.Count(KindRestart) != 1 {
		t.Errorf("counts %v", log.Counts())
	}

	hooks, _ = hookScript(t, "")
	cluster.Hooks = hooks
	cluster.Recovered = func(ctx context.Context, broker Broker) error {
		return errors.New("t/0 has ISR [1 3] of replicas [1 2 3]")
	}
	err = RunHookActions(context.Background(), actions, cluster)
	var recovery *RecoveryError
	if !errors.As(err, &recovery) || !strings.Contains(err.Error(), "node 2 (127.0.0.5:9092) was not back") ||
		!strings.Contains(err.Error(), "ISR [1 3]") || log.Count(KindNotRecovered) != 1 {
		t.Errorf("err %v, counts %v", err, log.Counts())
	}

	partial, _ := ParseHooks([]string{"kill=true"}, 0, 0)
	cluster.Hooks = partial
	if err := RunHookActions(context.Background(), actions, cluster); err == nil || !strings.Contains(err.Error(), "needs the --fault-exec hooks [start]") {
		t.Errorf("without start: %v", err)
	}
	// No hook slows a network: slow-follower (and broker-partition) need
	// the launched cluster's partition proxies.
	cluster.Hooks = hooks
	slow := []ProcessAction{{Action: ProcessSlowFollower, Down: Duration(time.Second), Network: &Network{Delay: Duration(time.Millisecond)}}}
	if err := RunHookActions(context.Background(), slow, cluster); err == nil ||
		!strings.Contains(err.Error(), "slow-follower needs the partition proxies of --target cluster; no --fault-exec hook does it") {
		t.Errorf("slow-follower through hooks: %v", err)
	}
}
