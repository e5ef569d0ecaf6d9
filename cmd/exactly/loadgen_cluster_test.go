package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// testSelfCommand makes the load generator launch this test binary in
// command mode (see TestMain) for the brokers and workers it runs. TestMain
// sets selfCommand to it once, before any test runs, so that tests running
// in parallel never write the package variable they all read.
func testSelfCommand() (loadgen.SelfCommand, error) {
	return loadgen.SelfCommand{Path: os.Args[0], Env: []string{asExactlyEnv + "=1"}}, nil
}

// asExactlySelf marks a test that has the load generator launch brokers
// or workers: they are this test binary in command mode, which TestMain
// arranged for every test (testSelfCommand).
func asExactlySelf(t *testing.T) {
	t.Helper()
}

// TestLoadgenClusterLeaderKill runs the load generator against a launched
// 3-broker cluster (replication factor 3, min.insync.replicas 2) under
// leader-kill: the broker leading most of the load's partitions is killed
// with SIGKILL twice and restarted. The idempotent acks=all producer loses
// nothing acknowledged and duplicates nothing; at-least-once loses
// nothing; the consume-transform-produce pipeline carries every record
// once (its workers outlive a transaction end their coordinator's broker
// did not answer); each run shows its two kills and restarts; the embedded
// target calls the plan not applicable.
func TestLoadgenClusterLeaderKill(t *testing.T) {
	results := runClusterLoadgen(t, "--mode", "at-least-once,idempotent,eos-pipeline", "--faults", "leader-kill",
		"--rate", "1000", "--records", "30000", "--warmup", "0s", "--consumers", "0")
	if results.Target.Kind != loadgen.TargetCluster || !strings.Contains(results.Target.Description, "3 brokers") {
		t.Errorf("target %+v, want the launched 3-broker cluster", results.Target)
	}
	for _, run := range results.Runs {
		kills, restarts := 0, 0
		for _, event := range run.FaultEvents {
			switch event.Kind {
			case "kill":
				kills++
			case "restart":
				restarts++
			}
		}
		if run.Status != report.StatusPass || kills != 2 || restarts != 2 || len(run.Checks) == 0 {
			t.Errorf("%s: status %s (%s), %d kills, %d restarts, %d checks", run.Name, run.Status, run.Reason, kills, restarts, len(run.Checks))
		}
		for _, check := range run.Checks {
			if counts := check.Counts; counts.Lost != 0 || counts.Unique == 0 || (run.Mode != "at-least-once" && counts.Duplicated != 0) {
				t.Errorf("%s: %s read %+v", run.Name, check.Reader, counts)
			}
		}
	}
	// The same plan against the embedded broker is not applicable.
	var stdout, stderr bytes.Buffer
	code := run([]string{"loadgen", "--mode", "idempotent", "--faults", "leader-kill", "--records", "100", "--out", t.TempDir()}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "leader-kill needs a replicated cluster: --target cluster") {
		t.Errorf("embedded under leader-kill: exit %d, output:\n%s", code, stdout.String())
	}
}

// TestLoadgenClusterBrokerPartition runs the load generator against a
// launched 3-broker cluster behind partition proxies under
// broker-partition: the broker leading most of the load's partitions is cut
// off from the other brokers and from clients twice for 5 s, then healed.
// The idempotent acks=all producer loses nothing acknowledged and
// duplicates nothing, and the run shows its two cuts and heals.
func TestLoadgenClusterBrokerPartition(t *testing.T) {
	results := runClusterLoadgen(t, "--mode", "idempotent", "--faults", "broker-partition",
		"--rate", "1000", "--records", "30000", "--warmup", "0s", "--consumers", "0")
	if results.Target.Kind != loadgen.TargetCluster || !strings.Contains(results.Target.Description, "behind partition proxies") {
		t.Errorf("target %+v, want the launched 3-broker cluster behind partition proxies", results.Target)
	}
	if len(results.Runs) == 0 {
		t.Fatal("no runs")
	}
	for _, run := range results.Runs {
		cuts, heals := 0, 0
		for _, event := range run.FaultEvents {
			switch event.Kind {
			case "cut":
				cuts++
			case "heal":
				heals++
				// The proxies acted on real traffic: the cut dropped or
				// refused connections (a cut that did nothing reports 0).
				var blocked int
				if _, err := fmt.Sscanf(event.Detail[strings.Index(event.Detail, "(")+1:], "%d connections", &blocked); err != nil || blocked == 0 {
					t.Errorf("%s: heal %q: want a positive count of connections dropped or refused", run.Name, event.Detail)
				}
			case "kill":
				t.Errorf("%s: a broker was killed: %+v", run.Name, event)
			}
		}
		if run.Status != report.StatusPass || cuts != 2 || heals != 2 || len(run.Checks) == 0 {
			t.Errorf("%s: status %s (%s), %d cuts, %d heals, %d checks", run.Name, run.Status, run.Reason, cuts, heals, len(run.Checks))
		}
		for _, check := range run.Checks {
			if counts := check.Counts; counts.Lost != 0 || counts.Duplicated != 0 || counts.Unique == 0 {
				t.Errorf("%s: %s read %+v", run.Name, check.Reader, counts)
			}
		}
	}
}

// TestLoadgenClusterSlowFollower runs the load generator against a
// launched 3-broker cluster behind partition proxies under none and
// slow-follower: the proxies carry both runs, and under slow-follower the
// broker leading the fewest of the load's partitions has its links to
// the other brokers delayed 10 ms each way for the whole run. Both runs
// pass; the slow one shows one slow and one restore event, the restore
// counting real traffic, and its acks=all produce latency is higher by
// about the follower's fetch round trip.
func TestLoadgenClusterSlowFollower(t *testing.T) {
	// Not in parallel: with two other clusters running beside it on 2
	// cores the slow run's p50 was once no higher than the other's.
	results := runClusterLoadgenAlone(t, "--mode", "idempotent", "--faults", "none,slow-follower",
		"--rate", "500", "--records", "4000", "--warmup", "0s", "--consumers", "0")
	if !strings.Contains(results.Target.Description, "behind partition proxies") {
		t.Errorf("target %+v, want the launched 3-broker cluster behind partition proxies", results.Target)
	}
	p50 := map[string]float64{}
	for _, run := range results.Runs {
		p50[run.FaultPlan] = run.Latency[report.LatencyProduceAck].Percentile(50)
		if run.Status != report.StatusPass || len(run.Checks) == 0 {
			t.Errorf("%s: status %s (%s), %d checks", run.Name, run.Status, run.Reason, len(run.Checks))
		}
		if run.FaultPlan != "slow-follower" {
			continue
		}
		counts := map[string]int{}
		for _, event := range run.FaultEvents {
			counts[event.Kind]++
			if event.Kind == "restore" {
				// The proxies delayed real traffic: the follower's fetches.
				var connections int
				detail := event.Detail[strings.Index(event.Detail, "impaired")+len("impaired "):]
				if _, err := fmt.Sscanf(detail, "%d connections", &connections); err != nil || connections == 0 {
					t.Errorf("%s: restore %q: want a positive count of impaired connections", run.Name, event.Detail)
				}
			}
			t.Logf("%s: %s at %.2fs %s: %s", run.Name, event.Kind, event.ElapsedSeconds, event.Broker, event.Detail)
		}
		if counts["slow"] != 1 || counts["restore"] != 1 || len(counts) != 2 {
			t.Errorf("%s: events %v, want one slow and one restore", run.Name, counts)
		}
	}
	t.Logf("produce_ack p50: %v ms", p50)
	if len(p50) != 2 || p50["slow-follower"] < p50["none"]+10 {
		t.Errorf("produce_ack p50 by plan %v ms: want slow-follower's at least 10 ms above none's", p50)
	}
}

// runClusterLoadgen runs `exactly loadgen --target cluster` with args (in
// parallel with other tests, skipped under -short), fails the test on a
// non-zero exit with the output, and returns the results file.
func runClusterLoadgen(t *testing.T, args ...string) *report.Results {
	t.Helper()
	t.Parallel()
	return runClusterLoadgenAlone(t, args...)
}

// runClusterLoadgenAlone is runClusterLoadgen, not in parallel with the
// package's other tests.
func runClusterLoadgenAlone(t *testing.T, args ...string) *report.Results {
	t.Helper()
	if testing.Short() {
		t.Skip("launches a 3-broker cluster")
	}
	asExactlySelf(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(append(append([]string{"loadgen", "--target", "cluster"}, args...), "--out", out), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	return readOnlyResults(t, out)
}
