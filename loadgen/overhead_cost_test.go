package loadgen

import (
	"slices"
	"strings"
	"testing"

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
	for _, want := range []string{"what each guarantee costs under each fault class", "at-least-once (no faults)",
		"cannot be touched: zombie-producer needs the transactional mode", "continuous", "2.0 s [1.0, 3.0]", "0 / 14"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("cost table does not show %q:\n%s", want, table.String())
		}
	}
	if strings.Contains(table.String(), "overhead vs") {
		t.Errorf("the fault-free overhead table printed without fault-free rounds:\n%s", table.String())
	}
}
