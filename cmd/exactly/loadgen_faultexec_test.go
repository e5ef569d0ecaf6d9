package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/loopback"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// operatorCluster is a cluster started the way an operator starts one,
// outside the load generator: each member an `exactly broker --node-id`
// process launched in the background by its own start script, which
// writes the member's pid to a file that kill, pause and resume commands
// read.
type operatorCluster struct {
	dir       string
	bootstrap []string
}

// startOperatorCluster writes dir/start-ID.sh for members 1..3 of a
// cluster on this process's loopback IP, runs each script, and waits until
// every member lists all three in Metadata. Cleanup stops the members.
func startOperatorCluster(t *testing.T) *operatorCluster {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	layout := clusterLayout{dataDir: dir, host: loopback.Host(), port: freeClusterPort(t, 3), brokers: 3}
	cluster := &operatorCluster{dir: dir}
	t.Cleanup(cluster.stop)
	for id := 1; id <= 3; id++ {
		words := []string{"env", asExactlyEnv + "=1", shellWord(exe)}
		for _, arg := range memberArgs(layout, id) {
			words = append(words, shellWord(arg))
		}
		script := fmt.Sprintf("#!/bin/sh\n# member %d, in the background, its pid in %s\n%s >>%s 2>&1 </dev/null &\necho $! >%s\n",
			id, cluster.pidFile(id), strings.Join(words, " "), filepath.Join(dir, fmt.Sprintf("broker-%d.log", id)), cluster.pidFile(id))
		if err := os.WriteFile(cluster.script(id), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("sh", cluster.script(id)).CombinedOutput(); err != nil {
			t.Fatalf("start member %d: %v: %s", id, err, out)
		}
		cluster.bootstrap = append(cluster.bootstrap, fmt.Sprintf("%s:%d", layout.host, layout.port+id-1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, addr := range cluster.bootstrap {
		for {
			if n, err := metadataBrokers(ctx, addr); err == nil && n == 3 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("member at %s did not list 3 brokers within a minute; logs in %s", addr, dir)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return cluster
}

func (c *operatorCluster) script(id int) string {
	return filepath.Join(c.dir, fmt.Sprintf("start-%d.sh", id))
}
func (c *operatorCluster) pidFile(id int) string {
	return filepath.Join(c.dir, fmt.Sprintf("broker-%d.pid", id))
}

// hooks are the --fault-exec flags that act on the members by pid.
func (c *operatorCluster) hooks() []string {
	pid := "$(cat " + filepath.Join(c.dir, "broker-{id}.pid") + ")"
	return []string{
		"--fault-exec", "kill=kill -KILL " + pid,
		"--fault-exec", "start=sh " + filepath.Join(c.dir, "start-{id}.sh"),
		"--fault-exec", "pause=kill -STOP " + pid,
		"--fault-exec", "resume=kill -CONT " + pid,
	}
}

// stop ends every member the scripts started: SIGCONT (one may be
// paused), SIGTERM, SIGKILL after 20 s.
func (c *operatorCluster) stop() {
	var pids []int
	for id := 1; id <= 3; id++ {
		data, err := os.ReadFile(c.pidFile(id))
		if pid, convErr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && convErr == nil && pid > 0 {
			pids = append(pids, pid)
			syscall.Kill(pid, syscall.SIGCONT)
			syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// shellWord quotes s for sh.
func shellWord(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// faultExecPlanModes pairs each short process-fault plan with the mode
// it runs in: every plan once, every broker-side mode at least once.
var faultExecPlanModes = []struct{ plan, mode string }{
	{"leader-kill", "eos-pipeline"}, {"coordinator-kill", "transactional"},
	{"broker-restart", "idempotent"}, {"leader-pause", "transactional"},
}

// faultExecWorkload writes short versions of the process-fault plans (one
// firing each, the shortest down times that still act) into dir, and a
// workload whose fault matrix runs each in its mode of
// faultExecPlanModes, and returns the workload's path for --workload.
func faultExecWorkload(t *testing.T, dir string) string {
	t.Helper()
	plans := map[string]string{
		// down > the quorum's 3 s session timeout: new leaders are elected
		"leader-kill":      "action: leader-kill\n    after: 2s\n    count: 1\n    down: 4s",
		"leader-pause":     "action: leader-pause\n    after: 2s\n    count: 1\n    down: 4s",
		"coordinator-kill": "action: coordinator-kill\n    after: 2s\n    count: 1\n    down: 2s",
		"broker-restart":   "action: kill-restart\n    after: 2s\n    count: 1\n    down: 1s",
	}
	// A transaction whose end the coordinator kill lost stays open until
	// the new coordinator aborts it on its timeout, and holds back every
	// later record from read_committed readers (the read-back waits for
	// it): 15 s instead of Kafka's default minute keeps that wait short.
	workload := "name: fault-exec\nmodes: [idempotent, transactional, eos-pipeline]\ntransaction:\n  timeout: 15s\nfaults:\n"
	for _, pair := range faultExecPlanModes {
		path := filepath.Join(dir, pair.plan+".yaml")
		text := "name: " + pair.plan + "\nseed: 1\nduration: 7s\nprocesses:\n  - " + plans[pair.plan] + "\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		workload += fmt.Sprintf("  - plan: %s\n    modes: [%s]\n", path, pair.mode)
	}
	path := filepath.Join(dir, "fault-exec.yaml")
	if err := os.WriteFile(path, []byte(workload), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadgenFaultExecHooks starts a 3-member cluster outside the load
// generator, as an operator would (separate `exactly broker --node-id`
// processes), and runs the load generator against its bootstrap with
// --fault-exec hooks that kill, restart, pause and resume the members by
// pid: leader-kill (eos-pipeline), coordinator-kill and leader-pause
// (transactional) and broker-restart (idempotent), replication factor 3.
// Every hook fires and every cell passes with nothing lost and nothing
// duplicated. (Every plan in every mode, by hand: docs/measurements.)
func TestLoadgenFaultExecHooks(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-member cluster")
	}
	asExactlySelf(t)
	cluster := startOperatorCluster(t)
	out := t.TempDir()
	args := append([]string{"loadgen", "--bootstrap", strings.Join(cluster.bootstrap, ","),
		"--workload", faultExecWorkload(t, t.TempDir()), "--replication-factor", "3", "--partitions", "3",
		"--rate", "1000", "--records", "20000", "--duration", "3s", "--warmup", "0s", "--consumers", "0",
		// A transaction the coordinator's death left open holds
		// read_committed reads back until the new coordinator ends it,
		// at worst when it times out (15 s, faultExecWorkload) and the
		// next abort check (10 s) finds it: on a loaded machine that
		// outlasted the default 20 s drain once.
		"--drain", "90s",
		"--fault-exec-timeout", "30s", "--out", out}, cluster.hooks()...)
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	t.Logf("loadgen output:\n%s", stdout.String())
	if code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	results := readOnlyResults(t, out)
	if len(results.Runs) != len(faultExecPlanModes) {
		t.Fatalf("%d runs, want one per plan", len(results.Runs))
	}
	for i, run := range results.Runs {
		if want := faultExecPlanModes[i]; run.FaultPlan != want.plan || run.Mode != want.mode {
			t.Errorf("run %d: %s in %s, want %s in %s", i, run.FaultPlan, run.Mode, want.plan, want.mode)
		}
		counts := map[string]int{}
		for _, event := range run.FaultEvents {
			counts[event.Kind]++
			if !strings.HasPrefix(event.Detail, "hook ") {
				t.Errorf("%s: event %+v not from a hook", run.Name, event)
			}
		}
		down, up := "kill", "restart"
		if run.FaultPlan == "leader-pause" {
			down, up = "pause", "resume"
		}
		if run.Status != report.StatusPass || counts[down] != 1 || counts[up] != 1 || len(counts) != 2 || len(run.Checks) == 0 {
			t.Errorf("%s: status %s (%s), hook events %v, %d checks", run.Name, run.Status, run.Reason, counts, len(run.Checks))
		}
		for _, check := range run.Checks {
			if counts := check.Counts; counts.Lost != 0 || counts.Duplicated != 0 || counts.Unique == 0 {
				t.Errorf("%s: %s read %+v", run.Name, check.Reader, counts)
			}
		}
	}
}

// TestFaultExecFlagErrors: --fault-exec is for --bootstrap, and each one
// is name=command with a known name; a mistake is one line before anything
// runs.
func TestFaultExecFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--fault-exec", "kill=true"}, "--fault-exec is for a cluster the load generator did not launch (--bootstrap host:port)"},
		{[]string{"--bootstrap", "127.0.0.1:1", "--fault-exec", "stop=true"}, `hook "stop" is not one of [kill start pause resume]`},
		{[]string{"--bootstrap", "127.0.0.1:1", "--fault-exec", "kill"}, "want name=command"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"loadgen", "--faults", "leader-kill"}, c.args...), &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr.String(), c.want)
		}
	}
}
