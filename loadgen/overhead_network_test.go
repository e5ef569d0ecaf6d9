package loadgen

import (
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// TestNetworkSweepPlansEveryStep: the network workload runs every slot
// once per round at each round-trip time, every run of a step under the
// same degrade rule (half the round trip each way; the reference 0
// through the same proxy without delay), with its own topic and table.
func TestNetworkSweepPlansEveryStep(t *testing.T) {
	t.Parallel()
	workload, err := LoadWorkload("network")
	if err != nil {
		t.Fatal(err)
	}
	workload.Overhead.Rounds, workload.Overhead.Rates = 2, []int{2000}
	plans, err := planOverheadRuns(workload, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	slots := []string{"at-least-once", "at-least-once (A/A)", "idempotent", "transactional@10ms", "transactional@100ms", "eos-pipeline"}
	steps := map[string]time.Duration{"rtt-0ms": 0, "rtt-1ms": time.Millisecond, "rtt-5ms": 5 * time.Millisecond,
		"rtt-20ms": 20 * time.Millisecond, "rtt-50ms": 50 * time.Millisecond}
	if len(plans) != 2*len(slots)*len(steps) {
		t.Fatalf("planned %d runs, want %d", len(plans), 2*len(slots)*len(steps))
	}
	topics, keys := map[string]bool{}, map[string]bool{}
	perStep := map[string]int{}
	for _, plan := range plans {
		rtt, ok := steps[plan.faults.Name]
		if !ok {
			t.Fatalf("%s: plan %q is not a step", plan.name, plan.faults.Name)
		}
		perStep[plan.faults.Name]++
		if !strings.Contains(plan.name, ":"+plan.faults.Name+" #") {
			t.Errorf("run %q does not name its step %s", plan.name, plan.faults.Name)
		}
		rules := plan.faults.Rules
		if len(rules) != 1 || rules[0].Action != faults.ActionDegrade || time.Duration(rules[0].Delay) != rtt/2 ||
			rules[0].Direction != "" || !plan.faults.NeedsProxy() {
			t.Errorf("%s: rules %+v, want one degrade of %v each way", plan.name, rules, rtt/2)
		}
		if topics[plan.topic] {
			t.Errorf("topic %s planned twice", plan.topic)
		}
		topics[plan.topic] = true
		keys[plan.costPlan] = true
	}
	for step, count := range perStep {
		if count != 2*len(slots) {
			t.Errorf("step %s: %d runs, want %d", step, count, 2*len(slots))
		}
	}
	if len(keys) != len(steps) {
		t.Errorf("tables %v, want one per step", keys)
	}
	// At saturation the consume stage would measure its backlog: the
	// pipeline's slot does not run, and its row says why.
	workload.Overhead.Rates = []int{0}
	saturated, err := planOverheadRuns(workload, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(saturated) != 2*(len(slots)-1)*len(steps) {
		t.Fatalf("at saturation %d runs, want %d (no eos-pipeline)", len(saturated), 2*(len(slots)-1)*len(steps))
	}
	var runs []*report.Run
	for _, plan := range saturated {
		if plan.mode == "eos-pipeline" {
			t.Fatalf("%s planned at saturation", plan.name)
		}
		runs = append(runs, &report.Run{Name: plan.name, Mode: plan.mode, Round: plan.round, Slot: plan.slot, Status: report.StatusPass})
	}
	overhead := buildOverhead(workload, saturated, runs)
	for _, load := range overhead.Loads {
		last := load.Rows[len(load.Rows)-1]
		if last.Slot != "eos-pipeline" || !strings.Contains(last.NotRun, "outrun the consume stage") || len(last.Throughput.Ratios) != 0 {
			t.Errorf("%s: last row %+v, want eos-pipeline not run", load.Faults, last)
		}
	}
}

// TestNetworkSweepTables: each step's table carries its network point, the
// measured round trip the median of its runs'; ratios compare slots of
// the same step only.
func TestNetworkSweepTables(t *testing.T) {
	t.Parallel()
	workload, err := LoadWorkload("network")
	if err != nil {
		t.Fatal(err)
	}
	workload.Modes = []string{"at-least-once", "idempotent"}
	workload.Overhead.Rounds, workload.Overhead.Rates = 3, []int{0}
	workload.Overhead.Network.RTTs = []Duration{0, Duration(20 * time.Millisecond)}
	plans, err := planOverheadRuns(workload, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var runs []*report.Run
	for _, plan := range plans {
		throughput, rtt := 1000.0, 0.2
		if plan.faults.Name == "rtt-20ms" {
			throughput, rtt = 500, 20.4
			if plan.mode == "idempotent" {
				throughput = 250
			}
		}
		run := &report.Run{Name: plan.name, Mode: plan.mode, Round: plan.round, Slot: plan.slot, Status: report.StatusPass,
			Throughput: report.Throughput{RecordsPerSecond: throughput}}
		run.PathRTTMs = rtt
		runs = append(runs, run)
	}
	overhead := buildOverhead(workload, plans, runs)
	if len(overhead.Loads) != 2 {
		t.Fatalf("%d tables, want 2", len(overhead.Loads))
	}
	for i, want := range []struct {
		rtt, measured, idempotent float64
		plan                      string
	}{{0, 0.2, 1, "rtt-0ms"}, {20, 20.4, 0.5, "rtt-20ms"}} {
		load := overhead.Loads[i]
		if load.Network == nil || load.Network.Path != NetworkPathClients || load.Network.RTTMs != want.rtt ||
			load.Network.MeasuredRTTMs != want.measured || load.Faults != want.plan || load.Network.Plan != "" {
			t.Errorf("table %d: faults %q network %+v, want %s at %v ms measured %v", i, load.Faults, load.Network, want.plan, want.rtt, want.measured)
		}
		if got := load.Rows[1].Throughput.MedianRatio; load.Rows[1].Slot != "idempotent" || got != want.idempotent {
			t.Errorf("table %d: %s throughput ratio %v, want %v", i, load.Rows[1].Slot, got, want.idempotent)
		}
	}
	if !strings.Contains(overhead.Loads[1].Network.Link, "delay 10ms") {
		t.Errorf("20 ms step link %q", overhead.Loads[1].Network.Link)
	}
}

// TestNetworkSweepLayersOnPlans: with fault plans the sweep runs under
// each, the network layered on the plan; the sweep's jitter, rate and
// loss apply at every step but the reference.
func TestNetworkSweepLayersOnPlans(t *testing.T) {
	t.Parallel()
	sweep := &NetworkSweep{RTTs: []Duration{0, Duration(10 * time.Millisecond)}, Jitter: Duration(time.Millisecond),
		Distribution: "normal", Rate: "100mbit", Loss: 0.001}
	if err := sweep.Validate(); err != nil {
		t.Fatal(err)
	}
	entries := sweep.expand([]MatrixEntry{{Plan: "ack-loss"}})
	if len(entries) != 2 {
		t.Fatalf("%d entries", len(entries))
	}
	reference, err := entries[0].load()
	if err != nil {
		t.Fatal(err)
	}
	slowed, err := entries[1].load()
	if err != nil {
		t.Fatal(err)
	}
	if reference.Name != "ack-loss-rtt-0ms" || slowed.Name != "ack-loss-rtt-10ms" || len(slowed.Rules) != 2 ||
		slowed.Rules[0].Action != faults.ActionDropResponse || slowed.Rules[1].Action != faults.ActionDegrade {
		t.Fatalf("plans %s %+v and %s %+v", reference.Name, reference.Rules, slowed.Name, slowed.Rules)
	}
	if link := reference.Rules[1].Network; !link.Zero() {
		t.Errorf("the reference step is impaired: %s", link)
	}
	want := faults.Network{Delay: faults.Duration(5 * time.Millisecond), Jitter: faults.Duration(time.Millisecond),
		Distribution: "normal", Rate: 12_500_000, Loss: 0.001}
	if got := slowed.Rules[1].Network; got != want {
		t.Errorf("10 ms step network %+v, want %+v", got, want)
	}
	if entries[0].key() == entries[1].key() {
		t.Errorf("both steps keyed %q", entries[0].key())
	}
	for _, bad := range []NetworkSweep{{Path: "sideways", RTTs: []Duration{0}}, {}, {RTTs: []Duration{-1}},
		{RTTs: []Duration{0, 0}}, {RTTs: []Duration{Duration(time.Millisecond)}, Rate: "fast"},
		{RTTs: []Duration{Duration(time.Millisecond)}, Jitter: Duration(time.Second)}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestFollowerSweepNeedsPartitionProxies: a sweep of the follower path
// layers a slow-follower action (the whole run) on every step and makes
// the cluster target start behind its partition proxies; the clients'
// path does not.
func TestFollowerSweepNeedsPartitionProxies(t *testing.T) {
	t.Parallel()
	workload, err := LoadWorkload("network")
	if err != nil {
		t.Fatal(err)
	}
	if NeedsPartitionProxies(workload) {
		t.Fatal("a sweep of the clients' path asks for partition proxies")
	}
	workload.Overhead.Network.Path = NetworkPathFollower
	if !NeedsPartitionProxies(workload) {
		t.Fatal("a sweep of the follower path does not ask for partition proxies")
	}
	plans, err := planOverheadRuns(workload, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, plan := range plans {
		actions := plan.faults.Processes
		if len(actions) != 1 || actions[0].Action != faults.ProcessSlowFollower || actions[0].Network == nil ||
			time.Duration(actions[0].Down) < time.Hour || plan.faults.NeedsProxy() || !strings.HasPrefix(plan.faults.Name, "follower-rtt-") {
			t.Fatalf("%s: plan %s %+v, want one slow-follower action for the run", plan.name, plan.faults.Name, actions)
		}
	}
}
