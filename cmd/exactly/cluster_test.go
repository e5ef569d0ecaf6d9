package main

import (
	"github.com/exactly-eos/exactly/internal/loopback"

	"bufio"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// asExactlyEnv makes this test binary behave as the exactly command (see
// TestMain), so `exactly cluster` can start its brokers with os.Executable.
const asExactlyEnv = "EXACTLY_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(asExactlyEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	selfCommand = testSelfCommand
	os.Exit(m.Run())
}

// freeClusterPort returns a port P such that P..P+2, P+100..P+102 and
// P+200..P+202 are free now on this process's loopback IP (a few random
// tries; internal/loopback says why not 127.0.0.1).
func freeClusterPort(t *testing.T, brokers int) int {
	t.Helper()
	for range 50 {
		port := 20000 + rand.IntN(30000)
		var lns []net.Listener
		ok := true
		for _, base := range []int{0, 100, 200, 300} { // Kafka, Raft, RPC, metrics
			for i := range brokers {
				ln, err := net.Listen("tcp", net.JoinHostPort(loopback.Host(), strconv.Itoa(port+base+i)))
				if err != nil {
					ok = false
					break
				}
				lns = append(lns, ln)
			}
		}
		for _, ln := range lns {
			ln.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatal("no free port range found")
	return 0
}

// childPIDs returns the pids of the processes whose parent is pid (from
// /proc).
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces: split after ')'.
		text := string(data)
		fields := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
			child, _ := strconv.Atoi(strings.Fields(text)[0])
			out = append(out, child)
		}
	}
	return out
}

// alive reports whether a process with pid exists (and is not a zombie).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	text := string(data)
	fields := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

// TestClusterCommand runs `exactly cluster --brokers 3` as a subprocess:
// it prints the bootstrap address; a client sees 3 brokers, creates an
// RF-3 topic, produces and consumes it; SIGTERM stops every broker
// process.
func TestClusterCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-broker cluster")
	}
	port := freeClusterPort(t, 3)
	dir := t.TempDir()
	cluster := startCommand(t, "cluster", "--brokers", "3", "--data-dir", dir, "--listen", net.JoinHostPort(loopback.Host(), strconv.Itoa(port)),
		"--metrics-listen", net.JoinHostPort(loopback.Host(), strconv.Itoa(port+300)))
	cmd, exited, stderr := cluster.cmd, cluster.exited, cluster.stderr
	_, bootstrap, _ := strings.Cut(cluster.waitLine(t, "bootstrap: ", 90*time.Second), "bootstrap: ")
	var children []int
	seeds := strings.Split(bootstrap, ",")
	want := []string{}
	for i := range 3 {
		want = append(want, net.JoinHostPort(loopback.Host(), strconv.Itoa(port+i)))
	}
	if strings.Join(seeds, ",") != strings.Join(want, ",") {
		t.Fatalf("bootstrap %q, want %q", bootstrap, strings.Join(want, ","))
	}
	children = childPIDs(t, cmd.Process.Pid)
	cluster.children = children
	if len(children) != 3 {
		t.Fatalf("%d child processes, want 3: %v", len(children), children)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("rf3"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"rf3": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil || len(meta.Brokers) != 3 {
		t.Fatalf("Metadata: %v, %d brokers, want 3", err, len(meta.Brokers))
	}
	const n = 200
	replicatedRoundTrip(ctx, t, cl, "rf3", n, false)
	cl.Close()
	// Every broker serves its own metrics on --metrics-listen's port + i-1;
	// the three together appended the 200 records once (the leader) and
	// twice more (the followers do not count), so the sum is 200.
	produced := 0.0
	for i := range 3 {
		url := "http://" + net.JoinHostPort(loopback.Host(), strconv.Itoa(port+300+i))
		if ready, err := httpGet(url + "/readyz"); err != nil || ready.code != 200 {
			t.Errorf("broker %d /readyz: %v %+v", i+1, err, ready)
		}
		page, err := httpGet(url + "/metrics")
		if err != nil || page.code != 200 || !strings.Contains(page.body, "exactly_requests_total") {
			t.Fatalf("broker %d /metrics: %v %d", i+1, err, page.code)
		}
		produced += metricSum(page.body, `exactly_produce_records_total{topic="rf3"}`)
	}
	if produced != n {
		t.Errorf("exactly_produce_records_total of rf3 over the brokers: %v, want %d", produced, n)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Errorf("exactly cluster after SIGTERM: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("exactly cluster still running 60s after SIGTERM; stderr:\n%s", stderr.String())
	}
	for _, pid := range children {
		if alive(pid) {
			t.Errorf("broker process %d still running after the cluster stopped", pid)
		}
	}
}

// runningCommand is this test binary started as `exactly ARGS`
// (startCommand): its stdout lines, its stderr, and its end.
type runningCommand struct {
	cmd      *exec.Cmd
	lines    chan string
	exited   chan error
	stderr   *strings.Builder
	children []int // known children, killed at cleanup even if reparented
}

// startCommand starts this test binary as `exactly args...`; at cleanup
// it kills the process and its children by PID if they still run.
func startCommand(t *testing.T, args ...string) *runningCommand {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rc := &runningCommand{cmd: exec.Command(exe, args...), lines: make(chan string, 64), exited: make(chan error, 1), stderr: &strings.Builder{}}
	rc.cmd.Env = append(os.Environ(), asExactlyEnv+"=1")
	stdout, err := rc.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	rc.cmd.Stderr = rc.stderr
	if err := rc.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A failed test must not leave processes behind: kill by PID.
		for _, pid := range append(rc.children, childPIDs(t, rc.cmd.Process.Pid)...) {
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		rc.cmd.Process.Kill()
		<-rc.exited
	})
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			rc.lines <- scanner.Text()
		}
		close(rc.lines)
		rc.exited <- rc.cmd.Wait()
	}()
	return rc
}

// waitLine returns the first stdout line containing want; the lines after
// it keep being read (and dropped) in the background.
func (rc *runningCommand) waitLine(t *testing.T, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-rc.lines:
			if !ok {
				t.Fatalf("exactly %s ended before printing %q; stderr:\n%s", strings.Join(rc.cmd.Args[1:], " "), want, rc.stderr.String())
			}
			if strings.Contains(line, want) {
				return line
			}
		case <-deadline:
			t.Fatalf("exactly %s: no %q within %v; stderr:\n%s", strings.Join(rc.cmd.Args[1:], " "), want, timeout, rc.stderr.String())
		}
	}
}

type httpAnswer struct {
	code int
	body string
}

// httpGet fetches url with a short timeout (loopback only).
func httpGet(url string) (httpAnswer, error) {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return httpAnswer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return httpAnswer{code: resp.StatusCode, body: string(body)}, err
}

// metricSum adds the values of the text-format lines that start with
// series (name and labels exactly).
func metricSum(page, series string) float64 {
	sum := 0.0
	for _, line := range strings.Split(page, "\n") {
		if value, found := strings.CutPrefix(line, series+" "); found {
			if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}
