package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// costWorkload is the overhead workload with one commit interval, under
// ack-loss and zombie-producer.
func costWorkload(t *testing.T) Workload {
	workload := overheadWorkload(t)
	workload.Overhead.Rounds, workload.Overhead.Rates = 2, []int{0}
	workload.Transaction.CommitIntervals = []Duration{Duration(100e6)}
	workload.Overhead.Faults = []MatrixEntry{{Plan: "ack-loss"}, {Plan: "zombie-producer"}}
	if err := workload.Validate(); err != nil {
		t.Fatal(err)
	}
	return workload
}

// TestPlanOverheadRunsUnderFaults: every slot of a round runs under the
// same plan, named after it; a plan that cannot touch a mode leaves its
// slot out, and one that cannot touch the baseline runs the baseline
// and the A/A slot without faults.
func TestPlanOverheadRunsUnderFaults(t *testing.T) {
	t.Parallel()
	plans, err := planOverheadRuns(costWorkload(t), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	byTable := map[string][]runPlan{}
	for _, plan := range plans {
		byTable[plan.costPlan] = append(byTable[plan.costPlan], plan)
	}
	if len(byTable["ack-loss"]) != 2*4 || len(byTable["zombie-producer"]) != 2*3 {
		t.Fatalf("ack-loss %d runs (want 2 rounds of 4 slots), zombie-producer %d (want 2 rounds of 3: no idempotent)",
			len(byTable["ack-loss"]), len(byTable["zombie-producer"]))
	}
	for _, plan := range byTable["ack-loss"] {
		if plan.faults.Name != "ack-loss" || !strings.Contains(plan.name, ":ack-loss #") {
			t.Errorf("%s ran under %q", plan.name, plan.faults.Name)
		}
	}
	for _, plan := range byTable["zombie-producer"] {
		want := "zombie-producer"
		if plan.mode == "at-least-once" {
			want = "" // a zombie producer needs transactions: the baseline runs without it
		}
		if plan.faults.Name != want && !(want == "" && !hasFaults(plan.faults)) {
			t.Errorf("%s (%s) ran under %q, want %q", plan.name, plan.mode, plan.faults.Name, want)
		}
		if plan.mode == "idempotent" {
			t.Errorf("%s planned: zombie-producer cannot touch idempotent", plan.name)
		}
	}
	topics := map[string]bool{}
	for _, plan := range plans {
		if topics[plan.topic] {
			t.Errorf("topic %s planned twice", plan.topic)
		}
		topics[plan.topic] = true
	}
}

// TestOverheadSectionUnderFaults: each plan gets its own table with the
// A/A row, ratios from its own rounds, the fault's cost per slot, and a
// row that says which mode the plan cannot touch.
func TestOverheadSectionUnderFaults(t *testing.T) {
	t.Parallel()
	workload := costWorkload(t)
	plans, err := planOverheadRuns(workload, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var runs []*report.Run
	for _, plan := range plans {
		run := &report.Run{Name: plan.name, Mode: plan.mode, Round: plan.round, Slot: plan.slot, Status: report.StatusPass,
			Throughput: report.Throughput{RecordsPerSecond: 1000}, Delayed: &report.Delayed{ProduceAck: 10},
			Recovery: &report.Recovery{Faults: []report.FaultRecovery{{Kind: "zombie-producer", Seconds: 1}}, WorstSeconds: 1}}
		if plan.costPlan == "ack-loss" {
			run.Recovery = &report.Recovery{Continuous: true}
			if plan.mode == "idempotent" {
				run.Throughput.RecordsPerSecond = 800
			}
			if plan.mode == "at-least-once" {
				run.Checks = []report.Check{{Counts: verify.Counts{Duplicated: 7}}}
			}
		}
		if plan.slot == "transactional@100ms" && plan.round == 2 && plan.costPlan == "zombie-producer" {
			run.Recovery = &report.Recovery{Faults: []report.FaultRecovery{{Kind: "zombie-producer", Seconds: 3}}, WorstSeconds: 3}
		}
		runs = append(runs, run)
	}
	overhead := buildOverhead(workload, plans, runs)
	if len(overhead.Loads) != 2 || overhead.Loads[0].Faults != "ack-loss" || overhead.Loads[1].Faults != "zombie-producer" {
		t.Fatalf("loads %+v: want one per plan", overhead.Loads)
	}
	ackLoss := overhead.Loads[0]
	if ackLoss.BaselineCost == nil || ackLoss.BaselineCost.Duplicated != 14 || ackLoss.BaselineCost.RecoveryNote != "continuous" {
		t.Errorf("ack-loss baseline cost %+v: want 7 duplicates a round, continuous", ackLoss.BaselineCost)
	}
	slots := []string{}
	for _, row := range ackLoss.Rows {
		slots = append(slots, row.Slot)
		if row.Slot == "idempotent" && (row.Throughput.MedianRatio != 0.8 || row.Cost == nil || row.Cost.DelayedAckMedian != 10) {
			t.Errorf("idempotent under ack-loss: %+v cost %+v", row.Throughput, row.Cost)
		}
	}
	if !slices.Equal(slots, []string{"at-least-once (A/A)", "idempotent", "transactional@100ms"}) {
		t.Errorf("ack-loss rows %v", slots)
	}
	zombie := overhead.Loads[1]
	if !zombie.BaselineWithoutFaults {
		t.Error("zombie-producer: the baseline ran without it, but the table does not say so")
	}
	last := zombie.Rows[len(zombie.Rows)-1]
	if last.Slot != "idempotent" || !strings.Contains(last.CannotBite, "transactional") || len(last.Throughput.Ratios) != 0 {
		t.Errorf("last zombie-producer row %+v: want idempotent, which it cannot touch, without ratios", last)
	}
	for _, row := range zombie.Rows {
		if row.Slot == "transactional@100ms" && (row.Cost.RecoveryMedian != 2 || row.Cost.RecoveryLow != 1 || row.Cost.RecoveryHigh != 3) {
			t.Errorf("transactional recovery 1 s and 3 s: %+v", row.Cost)
		}
	}
	var table strings.Builder
	if err := report.WriteOverhead(&table, &report.Results{Overhead: overhead}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"what each guarantee costs under each fault class", "(at-least-once ran without faults: the plan cannot touch it)",
		"zombie-producer: idempotent cannot be touched (zombie-producer needs the transactional mode)", "continuous", "2.0 s [1.0, 3.0]", "0 / 14"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("cost table does not show %q:\n%s", want, table.String())
		}
	}
	if strings.Contains(table.String(), "overhead vs") {
		t.Errorf("the fault-free overhead table printed without fault-free rounds:\n%s", table.String())
	}
}

// TestCostRoundsUnderFaultsAgainstEmbeddedBroker runs cost rounds against
// our broker under lost acks and a broker killed 1.5 s into each run and
// restarted 300 ms later: every slot of every round runs under its plan,
// nothing is lost, idempotent and transactional duplicate nothing, and
// every round of every slot shows the restart as a dip it recovered from.
func TestCostRoundsUnderFaultsAgainstEmbeddedBroker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("cost rounds under faults: about 40 s")
	}
	restart := filepath.Join(t.TempDir(), "quick-restart.yaml")
	if err := os.WriteFile(restart, []byte(`name: quick-restart
description: SIGKILL the broker 1.5 s into the load, restart it 300 ms later
seed: 1
duration: 3500ms
processes:
  - action: kill-restart
    after: 1500ms
    count: 1
    down: 300ms
`), 0o644); err != nil {
		t.Fatal(err)
	}
	workload := overheadWorkload(t)
	workload.Modes = []string{"at-least-once", "transactional"}
	workload.Transaction.CommitIntervals = []Duration{Duration(100 * time.Millisecond)}
	workload.Overhead.Rounds, workload.Overhead.Rates, workload.Overhead.Fractions = 2, []int{4000}, nil
	workload.Overhead.Faults = []MatrixEntry{{Plan: "ack-loss"}, {Plan: restart}}
	workload.Duration, workload.Warmup, workload.Partitions, workload.Consumers = Duration(time.Second), 0, 2, 1
	workload.RecordSize = 256
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	results, err := Run(ctx, Options{Workload: workload, Target: newQuickGroupsEmbedded(t), Self: testSelf()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, run := range results.Runs {
		if run.Status != report.StatusPass {
			t.Errorf("%s: %s (%s)", run.Name, run.Status, run.Reason)
		}
	}
	var table strings.Builder
	if err := report.WriteOverhead(&table, results); err != nil {
		t.Fatal(err)
	}
	t.Log(table.String())
	loads := results.Overhead.Loads
	if len(loads) != 2 || loads[0].Faults != "ack-loss" || loads[1].Faults != "quick-restart" {
		t.Fatalf("loads %+v: want ack-loss then quick-restart", loads)
	}
	for _, load := range loads {
		if len(load.Rows) != 2 || !load.Rows[0].NoiseFloor || load.Rows[1].Slot != "transactional@100ms" {
			t.Fatalf("%s rows %+v: want the A/A row and transactional", load.Faults, load.Rows)
		}
		costs := map[string]*report.FaultCost{"at-least-once": load.BaselineCost}
		for _, row := range load.Rows {
			costs[row.Slot] = row.Cost
			if len(row.Throughput.Ratios) != 2 || len(row.AckP99.Ratios) != 2 || len(row.EndToEndP99.Ratios) != 2 {
				t.Errorf("%s %s: ratios %v / %v / %v, want two rounds each", load.Faults, row.Slot,
					row.Throughput.Ratios, row.AckP99.Ratios, row.EndToEndP99.Ratios)
			}
		}
		for slot, cost := range costs {
			if cost == nil || cost.Lost != 0 || cost.Failed != 0 || len(cost.DelayedAck) != 2 {
				t.Errorf("%s %s: cost %+v: want two checked rounds, nothing lost", load.Faults, slot, cost)
				continue
			}
			if !strings.HasPrefix(slot, "at-least-once") && cost.Duplicated != 0 {
				t.Errorf("%s %s: %d duplicated", load.Faults, slot, cost.Duplicated)
			}
			switch load.Faults {
			case "ack-loss":
				if cost.RecoveryNote != "continuous" {
					t.Errorf("ack-loss %s: recovery %q, want continuous", slot, cost.RecoveryText())
				}
			case "quick-restart":
				if len(cost.RecoverySeconds) != 2 || cost.NotRecovered != 0 {
					t.Errorf("quick-restart %s: recovery %v: want both rounds measured and back", slot, cost.RecoverySeconds)
				}
				for _, seconds := range cost.RecoverySeconds {
					if seconds <= 0 || seconds > 3 {
						t.Errorf("quick-restart %s: recovered in %v s; a 300 ms outage must show, and be over within the run", slot, seconds)
					}
				}
			}
		}
	}
	for _, run := range results.Runs {
		if run.Slot != "" && run.FaultPlan == "quick-restart" && (run.Recovery == nil || len(run.Recovery.Faults) != 1 || run.AckTimeline == nil) {
			t.Errorf("%s: recovery %+v, timeline %v", run.Name, run.Recovery, run.AckTimeline != nil)
		}
	}
}

// TestConsumeSideFaultsOnlyAtFixedLoads: group churn's slots are the
// entry's modes (a consume stage is needed), and it runs at a fixed load
// only: at saturation its table says why it did not run.
func TestConsumeSideFaultsOnlyAtFixedLoads(t *testing.T) {
	t.Parallel()
	workload := costWorkload(t)
	workload.Overhead.Rates = []int{0, 2000}
	workload.Overhead.Faults = []MatrixEntry{{Plan: "group-churn", Modes: []string{"at-least-once", "eos-pipeline"}}}
	plans, err := planOverheadRuns(workload, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	slots := map[string]bool{}
	for _, plan := range plans {
		slots[plan.slot] = true
		if plan.workload.Rate != 2000 {
			t.Errorf("%s at %d/s: group churn runs at fixed loads only", plan.name, plan.workload.Rate)
		}
	}
	if len(plans) != 2*3 || !slots["eos-pipeline"] || !slots["at-least-once (A/A)"] {
		t.Errorf("%d runs of slots %v: want 2 rounds of at-least-once, its A/A and eos-pipeline", len(plans), slots)
	}
	var runs []*report.Run
	for _, plan := range plans {
		runs = append(runs, &report.Run{Name: plan.name, Mode: plan.mode, Round: plan.round, Slot: plan.slot,
			Status: report.StatusPass, Recovery: &report.Recovery{ConsumeSide: true},
			RebalancePauses: &report.RebalancePauses{Events: 3, MedianMs: 400}})
	}
	overhead := buildOverhead(workload, plans, runs)
	if len(overhead.Loads) != 2 || !strings.Contains(overhead.Loads[0].NotApplicable, "not at saturation") {
		t.Fatalf("loads %+v: want saturation not applicable, then the fixed load", overhead.Loads)
	}
	if note := overhead.Loads[1].BaselineCost.RecoveryNote; note != "consume side: rebalance pause 400 ms" {
		t.Errorf("baseline recovery %q", note)
	}
}
