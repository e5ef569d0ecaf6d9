package loadgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// TestHookApplicability: against a cluster the load generator did not
// launch, process faults need --fault-exec hooks, the ones each action
// needs; broker-partition and slow-follower stay with --target cluster
// (its partition proxies): no hook does them, and a single launched
// broker has no peers.
func TestHookApplicability(t *testing.T) {
	t.Parallel()
	plan := func(name string) faults.Plan {
		p, err := faults.LoadPlan(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	killStart, err := faults.ParseHooks([]string{"kill=true", "start=true"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	external := faultReach{hooks: killStart}
	for _, c := range []struct {
		plan  string
		reach faultReach
		want  string
	}{
		{"leader-kill", faultReach{}, "needs a broker loadgen launched, or --fault-exec hooks that kill and start the brokers"},
		{"leader-pause", faultReach{}, "--fault-exec hooks that pause and resume"},
		{"leader-kill", external, ""},
		{"coordinator-kill", external, ""},
		{"broker-restart", external, ""},
		{"leader-pause", external, "leader-pause needs the --fault-exec hook pause or resume"},
		{"broker-partition", external, "broker-partition needs the partition proxies of --target cluster"},
		{"leader-pause", faultReach{launched: true}, "leader-pause needs a replicated cluster: --target cluster"},
		{"leader-pause", faultReach{launched: true, cluster: true}, ""},
		{"broker-partition", faultReach{}, "broker-partition needs the partition proxies of --target cluster; no --fault-exec hook does it"},
		{"slow-follower", external, "slow-follower needs the partition proxies of --target cluster; no --fault-exec hook does it"},
		{"slow-follower", faultReach{}, "slow-follower needs the partition proxies of --target cluster"},
		{"slow-follower", faultReach{launched: true}, "slow-follower needs a replicated cluster: --target cluster"},
		{"slow-follower", faultReach{launched: true, cluster: true}, ""},
	} {
		got := notApplicable(plan(c.plan), ModeIdempotent, c.reach)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s with %+v: %q, want %q", c.plan, c.reach, got, c.want)
		}
	}
}

// TestShortOf: a broker counts as back when Metadata lists it and every
// partition has a leader and its full ISR.
func TestShortOf(t *testing.T) {
	t.Parallel()
	broker := faults.Broker{NodeID: 2, Host: "h", Port: 1}
	response := kmsg.NewMetadataResponse()
	for id := int32(1); id <= 3; id++ {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID = id
		response.Brokers = append(response.Brokers, b)
	}
	topic := kmsg.NewMetadataResponseTopic()
	topic.Topic = kmsg.StringPtr("t")
	partition := kmsg.NewMetadataResponseTopicPartition()
	partition.Partition, partition.Leader, partition.Replicas, partition.ISR = 1, 1, []int32{1, 2, 3}, []int32{1, 3}
	topic.Partitions = append(topic.Partitions, partition)
	response.Topics = append(response.Topics, topic)
	if err := shortOf(&response, broker); err == nil || err.Error() != "t/1 has ISR [1 3] of replicas [1 2 3]" {
		t.Errorf("short ISR: %v", err)
	}
	response.Topics[0].Partitions[0].ISR = []int32{1, 2, 3}
	if err := shortOf(&response, broker); err != nil {
		t.Errorf("full: %v", err)
	}
	response.Brokers = response.Brokers[:1]
	if err := shortOf(&response, broker); err == nil || !strings.Contains(err.Error(), "node 2 is not in metadata") {
		t.Errorf("missing broker: %v", err)
	}
}

// hookPlanFile writes a short process-fault plan for hook tests.
func hookPlanFile(t *testing.T, dir, name, action string) string {
	t.Helper()
	path := filepath.Join(dir, name+".yaml")
	text := "name: " + name + "\nseed: 3\nprocesses:\n  - action: " + action + "\n    after: 500ms\n    count: 1\n    down: 200ms\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHooksAgainstBootstrap runs process faults through --fault-exec
// hooks against a cluster the runner did not launch (kfake, named by its
// addresses as --bootstrap would): each hook fires once per fault with
// the broker Metadata or FindCoordinator names, and the cells pass. A failing hook ends its
// cell as an error naming the hook and stops the suite.
func TestHooksAgainstBootstrap(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	target := &bootstrapTarget{addresses: cluster.ListenAddrs()}
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	var specs []string
	for _, name := range faults.HookNames {
		specs = append(specs, string(name)+"=echo "+string(name)+" {id} {host}:{port} >> "+calls)
	}
	hooks, err := faults.ParseHooks(specs, 10*time.Second, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	workload := matrixWorkload(t,
		MatrixEntry{Plan: hookPlanFile(t, dir, "hook-leader-kill", "leader-kill"), Modes: []string{ModeIdempotent}},
		MatrixEntry{Plan: hookPlanFile(t, dir, "hook-leader-pause", "leader-pause"), Modes: []string{ModeTransactional}},
		MatrixEntry{Plan: hookPlanFile(t, dir, "hook-restart", "kill-restart"), Modes: []string{ModeIdempotent}},
		MatrixEntry{Plan: hookPlanFile(t, dir, "hook-group-coordinator-kill", "group-coordinator-kill"), Modes: []string{ModeEOSPipeline}},
	)
	results, err := Run(t.Context(), Options{Workload: workload, Target: target, FaultHooks: hooks})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	logMatrix(t, results)
	for _, run := range results.Runs {
		counts := map[string]int{}
		for _, event := range run.FaultEvents {
			counts[event.Kind]++
		}
		down, up := "kill", "restart"
		if strings.Contains(run.Name, "pause") {
			down, up = "pause", "resume"
		}
		if run.Status != report.StatusPass || counts[down] != 1 || counts[up] != 1 {
			t.Errorf("%s: %s (%s), events %v", run.Name, run.Status, run.Reason, run.FaultEvents)
		}
	}
	data, _ := os.ReadFile(calls)
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 8 || !strings.HasPrefix(lines[0], "kill ") ||
		!strings.Contains(lines[0], ":") {
		t.Errorf("hook calls:\n%s", data)
	}

	// A kill hook that fails: its cell is an error naming it, the start
	// hook was still tried, the cell after it is not run.
	if err := os.Remove(calls); err != nil {
		t.Fatal(err)
	}
	hooks, err = faults.ParseHooks([]string{"kill=echo permission denied >&2; exit 4", "start=echo start {id} >> " + calls}, 10*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	results, err = Run(t.Context(), Options{Workload: workload, Target: target, FaultHooks: hooks})
	if err == nil || !strings.Contains(err.Error(), "cells left were not run") {
		t.Errorf("run error %v", err)
	}
	if results == nil || len(results.Runs) != 1 || results.Passed {
		t.Fatalf("results %+v", results)
	}
	failed := results.Runs[0]
	if failed.Status != report.StatusError || !strings.Contains(failed.Reason, "--fault-exec hook kill on node") ||
		!strings.Contains(failed.Reason, "exit status 4") || !strings.Contains(failed.Reason, "permission denied") {
		t.Errorf("failed hook: %s (%s)", failed.Status, failed.Reason)
	}
	if data, _ := os.ReadFile(calls); strings.Count(string(data), "start ") != 1 {
		t.Errorf("start hook after the failed kill: calls\n%s", data)
	}
}
