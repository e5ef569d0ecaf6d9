package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// Environment variables that turn the re-executed test binary into a
// helper process instead of running tests.
const (
	echoAddrEnv = "FAULTS_TEST_ECHO_ADDR" // listen there and echo every byte
	exitEnv     = "FAULTS_TEST_EXIT"      // exit at once with status 3
)

func TestMain(m *testing.M) {
	if os.Getenv(exitEnv) != "" {
		os.Exit(3)
	}
	if addr := os.Getenv(echoAddrEnv); addr != "" {
		runEchoServer(addr)
		return
	}
	os.Exit(m.Run())
}

// runEchoServer serves until killed.
func runEchoServer(addr string) {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(2)
	}
	for {
		conn, err := listener.Accept()
		if err != nil {
			os.Exit(2)
		}
		go func() {
			defer conn.Close()
			io.Copy(conn, conn)
		}()
	}
}

func newEchoProcess(t *testing.T, log *EventLog) *Process {
	t.Helper()
	addr := testutil.FreeAddr(t)
	process, err := NewProcess(ProcessConfig{
		Path:    os.Args[0],
		Env:     []string{echoAddrEnv + "=" + addr},
		DataDir: t.TempDir() + "/data",
		Addr:    addr,
		Stderr:  os.Stderr,
		Log:     log,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := process.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { process.Stop(5 * time.Second) })
	return process
}

// echo sends a line and expects it back within timeout.
func echo(conn net.Conn, line string, timeout time.Duration) error {
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte(line)); err != nil {
		return err
	}
	got := make([]byte, len(line))
	if _, err := io.ReadFull(conn, got); err != nil {
		return err
	}
	if string(got) != line {
		return fmt.Errorf("echoed %q, want %q", got, line)
	}
	return nil
}

func dialEcho(t *testing.T, p *Process) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// SIGKILL ends the process (its port refuses connections); a restart on
// the same address serves again under a new pid.
func TestProcessKillRestart(t *testing.T) {
	t.Parallel()
	log := NewEventLog(nil)
	process := newEchoProcess(t, log)
	if err := echo(dialEcho(t, process), "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	firstPID := process.PID()
	if err := process.Kill(); err != nil {
		t.Fatal(err)
	}
	if pid := process.PID(); pid != 0 {
		t.Fatalf("PID %d after kill, want 0", pid)
	}
	if conn, err := net.Dial("tcp", process.Addr()); err == nil {
		conn.Close()
		t.Fatal("killed process still accepts connections")
	}
	if err := process.Kill(); err == nil {
		t.Fatal("killing a dead process succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := process.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := process.Restart(ctx, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if pid := process.PID(); pid == 0 || pid == firstPID {
		t.Fatalf("pid after restart %d, first %d", pid, firstPID)
	}
	if err := echo(dialEcho(t, process), "after", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// A cancelled context cuts the down time short but still restarts.
	cancelled, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	if err := process.Restart(cancelled, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := echo(dialEcho(t, process), "again", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if counts := log.Counts(); counts[KindKill] != 3 || counts[KindRestart] != 2 {
		t.Fatalf("counts %v, want 3 kills and 2 restarts", counts)
	}
}

// processState reads the state letter from /proc/<pid>/stat.
func processState(t *testing.T, pid int) byte {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ...: comm may hold spaces, so parse after the last ')'.
	rest := data[bytes.LastIndexByte(data, ')')+1:]
	return bytes.TrimSpace(rest)[0]
}

// waitState waits until the process's state letter satisfies want.
func waitState(t *testing.T, pid int, what string, want func(byte) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !want(processState(t, pid)) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d never became %s (state %c)", pid, what, processState(t, pid))
		}
		<-tick.C
	}
}

// SIGSTOP freezes the process (state T, no echo); SIGCONT thaws it and the
// held bytes are answered.
func TestProcessPauseResume(t *testing.T) {
	t.Parallel()
	log := NewEventLog(nil)
	process := newEchoProcess(t, log)
	conn := dialEcho(t, process)
	if err := echo(conn, "warm", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := process.Pause(); err != nil {
		t.Fatal(err)
	}
	waitState(t, process.PID(), "stopped", func(s byte) bool { return s == 'T' })
	if err := process.Pause(); err == nil {
		t.Fatal("pausing a paused process succeeded")
	}
	// A stopped process cannot answer: the deadline is the proof.
	var netErr net.Error
	if err := echo(conn, "held", 100*time.Millisecond); !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("echo while stopped: %v, want a timeout", err)
	}
	if err := process.Resume(); err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 4)
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != "held" {
		t.Fatalf("after resume read %q, %v; want the held bytes", got, err)
	}
	if counts := log.Counts(); counts[KindPause] != 1 || counts[KindResume] != 1 {
		t.Fatalf("counts %v", counts)
	}
}

// A process that exits before listening fails Start with its exit status.
func TestProcessExitsEarly(t *testing.T) {
	t.Parallel()
	process, err := NewProcess(ProcessConfig{Path: os.Args[0], Env: []string{exitEnv + "=1"}, Addr: testutil.FreeAddr(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = process.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "exited before listening") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("got %v, want an early-exit error with status 3", err)
	}
	if _, err := NewProcess(ProcessConfig{Path: os.Args[0], Addr: "nonsense"}); err == nil {
		t.Fatal("bad address accepted")
	}
}

// A kill-restart schedule fires count times, round robin over brokers, and
// leaves every broker running.
func TestProcessScheduleKillRestart(t *testing.T) {
	t.Parallel()
	log := NewEventLog(nil)
	processes := []*Process{newEchoProcess(t, log), newEchoProcess(t, log)}
	action := ProcessAction{
		Action:   ProcessKillRestart,
		Schedule: Schedule{After: Duration(10 * time.Millisecond), Every: Duration(50 * time.Millisecond), Count: 4},
		Down:     Duration(10 * time.Millisecond),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := RunProcessActions(ctx, []ProcessAction{action}, processes, nil); err != nil {
		t.Fatal(err)
	}
	perProcess := map[string]int{}
	for _, e := range log.Events() {
		if e.Kind == KindRestart {
			perProcess[e.Broker]++
		}
	}
	if counts := log.Counts(); counts[KindKill] != 4 || counts[KindRestart] != 4 {
		t.Fatalf("counts %v, want 4 kills and 4 restarts", counts)
	}
	for _, p := range processes {
		if err := echo(dialEcho(t, p), "alive", 5*time.Second); err != nil {
			t.Fatalf("%s after the schedule: %v", p.Addr(), err)
		}
	}
	for _, p := range processes {
		if perProcess[p.Name()] != 2 {
			t.Fatalf("restarts per broker %v, want 2 each (round robin)", perProcess)
		}
	}
	outOfRange := 2
	action.Broker = &outOfRange
	if err := RunProcessActions(ctx, []ProcessAction{action}, processes, nil); err == nil || !strings.Contains(err.Error(), "only 2 brokers") {
		t.Fatalf("broker index 2 of 2: got %v", err)
	}
}

// A leader-kill kills and restarts the broker its Selector names when it
// fires, each time; without a Selector it cannot run, and a broker index
// beside it is refused.
func TestProcessLeaderKillKillsTheSelectedBroker(t *testing.T) {
	t.Parallel()
	log := NewEventLog(nil)
	processes := []*Process{newEchoProcess(t, log), newEchoProcess(t, log), newEchoProcess(t, log)}
	action := ProcessAction{
		Action:   ProcessLeaderKill,
		Schedule: Schedule{After: Duration(10 * time.Millisecond), Every: Duration(50 * time.Millisecond), Count: 2},
		Down:     Duration(10 * time.Millisecond),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var asked []ProcessActionKind
	picks := []int{2, 0}
	selector := func(_ context.Context, kind ProcessActionKind) (int, error) {
		asked = append(asked, kind)
		return picks[len(asked)-1], nil
	}
	if err := RunProcessActions(ctx, []ProcessAction{action}, processes, selector); err != nil {
		t.Fatal(err)
	}
	var killed []string
	for _, e := range log.Events() {
		if e.Kind == KindKill {
			killed = append(killed, e.Broker)
		}
	}
	if len(asked) != 2 || asked[0] != ProcessLeaderKill || len(killed) != 2 || killed[0] != processes[2].Name() || killed[1] != processes[0].Name() {
		t.Fatalf("asked %v, killed %v; want the selector asked twice and brokers 2 then 0 killed", asked, killed)
	}
	for _, p := range processes {
		if err := echo(dialEcho(t, p), "alive", 5*time.Second); err != nil {
			t.Fatalf("%s after the schedule: %v", p.Addr(), err)
		}
	}
	if err := RunProcessActions(ctx, []ProcessAction{action}, processes, nil); err == nil || !strings.Contains(err.Error(), "needs a launched cluster") {
		t.Fatalf("leader-kill without a selector: got %v", err)
	}
	index := 1
	action.Broker = &index
	if err := action.Validate(); err == nil || !strings.Contains(err.Error(), "leave broker out") {
		t.Fatalf("leader-kill with a broker index: got %v", err)
	}
}

// A broker-partition cuts the broker its Selector names off through the
// process's partition hooks and heals it after Down, each time; a process
// without hooks refuses it.
func TestProcessBrokerPartitionCutsAndHeals(t *testing.T) {
	t.Parallel()
	log := NewEventLog(nil)
	processes := []*Process{newEchoProcess(t, log), newEchoProcess(t, log)}
	var mu sync.Mutex
	var calls []string
	for i, p := range processes {
		hook := func(what string) PartitionHook {
			return func() (string, error) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, fmt.Sprintf("%s %d", what, i))
				return what + " detail", nil
			}
		}
		p.SetPartition(hook("cut"), hook("heal"))
	}
	action := ProcessAction{
		Action:   ProcessBrokerPartition,
		Schedule: Schedule{After: Duration(10 * time.Millisecond), Every: Duration(50 * time.Millisecond), Count: 2},
		Down:     Duration(20 * time.Millisecond),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	picks := []int{1, 0}
	asked := 0
	selector := func(_ context.Context, kind ProcessActionKind) (int, error) {
		asked++
		return picks[asked-1], nil
	}
	if err := RunProcessActions(ctx, []ProcessAction{action}, processes, selector); err != nil {
		t.Fatal(err)
	}
	if want := []string{"cut 1", "heal 1", "cut 0", "heal 0"}; !slices.Equal(calls, want) {
		t.Fatalf("hook calls %v, want %v", calls, want)
	}
	var kinds []Kind
	for _, e := range log.Events() {
		kinds = append(kinds, e.Kind)
		if !strings.Contains(e.Detail, string(e.Kind)+" detail") {
			t.Errorf("event %+v lacks its hook's detail", e)
		}
	}
	if want := []Kind{KindCut, KindHeal, KindCut, KindHeal}; !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	processes[0].SetPartition(nil, nil)
	if err := processes[0].Cut(); err == nil || !strings.Contains(err.Error(), "no partition proxies") {
		t.Fatalf("Cut without hooks: %v", err)
	}
}

// A slow-follower degrades the links of the broker its Selector names
// with the action's network, through the process's network hook, and
// restores them after Down, or when the schedule ends first (a run that
// ends before a down of an hour); a process without the hook refuses it.
func TestProcessSlowFollowerDegradesAndRestores(t *testing.T) {
	t.Parallel()
	log := NewEventLog(nil)
	processes := []*Process{newEchoProcess(t, log), newEchoProcess(t, log)}
	var mu sync.Mutex
	var calls []string
	for i, p := range processes {
		p.SetNetwork(func(link netem.Link) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, fmt.Sprintf("%d: %s", i, link))
			return "hook detail", nil
		})
	}
	action := ProcessAction{
		Action:  ProcessSlowFollower,
		Down:    Duration(time.Hour),
		Network: &Network{Delay: Duration(10 * time.Millisecond), Rate: 1_000_000},
	}
	ctx, cancel := context.WithCancel(context.Background())
	selector := func(_ context.Context, kind ProcessActionKind) (int, error) {
		if kind != ProcessSlowFollower {
			return -1, fmt.Errorf("asked for %s", kind)
		}
		return 1, nil
	}
	done := make(chan error, 1)
	go func() { done <- RunProcessActions(ctx, []ProcessAction{action}, processes, selector) }()
	waitCtx, waitCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer waitCancel()
	if err := log.WaitFor(waitCtx, func(events []Event) bool { return len(events) == 1 }); err != nil {
		t.Fatal(err)
	}
	cancel() // the run ends long before down
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := []string{"1: delay 10ms, rate 1MB/s", "1: no impairment"}; !slices.Equal(calls, want) {
		t.Fatalf("hook calls %v, want %v", calls, want)
	}
	events := log.Events()
	if len(events) != 2 || events[0].Kind != KindSlow || events[1].Kind != KindRestore || events[0].Broker != processes[1].Name() {
		t.Fatalf("events %v, want a degrade and a restore of %s", events, processes[1].Name())
	}
	if want := "links to the other brokers slowed: delay 10ms, rate 1MB/s (hook detail)"; events[0].Detail != want {
		t.Errorf("degrade detail %q, want %q", events[0].Detail, want)
	}
	if want := "links to the other brokers restored (hook detail)"; events[1].Detail != want {
		t.Errorf("restore detail %q, want %q", events[1].Detail, want)
	}
	// A zero network is applied and recorded all the same.
	if err := processes[0].Degrade(netem.Link{}); err != nil {
		t.Fatal(err)
	}
	if last := log.Events()[2]; last.Kind != KindSlow || !strings.Contains(last.Detail, "unimpaired") {
		t.Errorf("zero network recorded as %+v", last)
	}
	processes[0].SetNetwork(nil)
	if err := processes[0].Degrade(netem.Link{Delay: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "no partition proxies") ||
		!strings.Contains(err.Error(), "slow-follower needs --target cluster") {
		t.Fatalf("Degrade without the hook: %v", err)
	}
	failing := processes[1]
	failing.SetNetwork(func(netem.Link) (string, error) { return "", errors.New("broken") })
	if err := failing.Restore(); err == nil || !strings.Contains(err.Error(), "restore: broken") {
		t.Fatalf("a failing hook: %v", err)
	}
}

// TestProcessActionThatNeverFoundItsBroker: when the run ends while an
// action's first firing is still looking for its broker, the action says
// so (the reason its run is untestable); an action that fired before is
// quiet about a later search cut short.
func TestProcessActionThatNeverFoundItsBroker(t *testing.T) {
	t.Parallel()
	processes := []*Process{newEchoProcess(t, NewEventLog(nil))}
	searching := func(ctx context.Context, _ ProcessActionKind) (int, error) {
		<-ctx.Done()
		return -1, fmt.Errorf("metadata of t: %w", ctx.Err())
	}
	action := ProcessAction{Action: ProcessLeaderKill, Down: Duration(10 * time.Millisecond)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := RunProcessActions(ctx, []ProcessAction{action}, processes, searching)
	if err == nil || !strings.Contains(err.Error(), "leader-kill: the run ended before it found its broker (metadata of t: context deadline exceeded)") {
		t.Fatalf("the run ended during the first search: got %v", err)
	}
	calls := 0
	onceThenSearching := func(ctx context.Context, kind ProcessActionKind) (int, error) {
		calls++
		if calls == 1 {
			return 0, nil
		}
		return searching(ctx, kind)
	}
	action.Schedule = Schedule{Every: Duration(10 * time.Millisecond)}
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := RunProcessActions(ctx, []ProcessAction{action}, processes, onceThenSearching); err != nil || calls < 2 {
		t.Fatalf("the run ended during a later search: got %v after %d searches, want nil after at least 2", err, calls)
	}
}
