package loadgen

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stats"
)

func overheadWorkload(t *testing.T) Workload {
	t.Helper()
	workload, err := LoadWorkload("overhead")
	if err != nil {
		t.Fatal(err)
	}
	if workload.Overhead == nil || workload.Overhead.Rounds < 2 {
		t.Fatalf("the overhead workload has no rounds: %+v", workload.Overhead)
	}
	return workload
}

// TestPlanOverheadRunsRotatesSlots: every round runs every slot once, the
// order rotates by one per round, and every run has its own topic.
func TestPlanOverheadRunsRotatesSlots(t *testing.T) {
	t.Parallel()
	workload := overheadWorkload(t)
	workload.Overhead.Rounds, workload.Overhead.Rates = 3, nil // one load: the workload's rate
	plans, err := planOverheadRuns(workload, 1, []string{"127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	wantSlots := []string{"at-least-once", "at-least-once (A/A)", "idempotent", "transactional@10ms", "transactional@100ms", "transactional@1s"}
	if len(plans) != 3*len(wantSlots) {
		t.Fatalf("planned %d runs, want %d", len(plans), 3*len(wantSlots))
	}
	topics := map[string]bool{}
	for round := 1; round <= 3; round++ {
		var order []string
		for _, plan := range plans[(round-1)*len(wantSlots) : round*len(wantSlots)] {
			if plan.round != round {
				t.Errorf("%s: round %d, want %d", plan.name, plan.round, round)
			}
			if want := plan.slot + " #" + string(rune('0'+round)); plan.name != want {
				t.Errorf("run name %q, want %q", plan.name, want)
			}
			if topics[plan.topic] {
				t.Errorf("topic %s planned twice", plan.topic)
			}
			topics[plan.topic] = true
			order = append(order, plan.slot)
		}
		want := append(slices.Clone(wantSlots[round-1:]), wantSlots[:round-1]...)
		if !slices.Equal(order, want) {
			t.Errorf("round %d order %v, want %v", round, order, want)
		}
	}
	for _, plan := range plans {
		if plan.slot == "transactional@10ms" && plan.commitInterval != 10*time.Millisecond {
			t.Errorf("%s: commit interval %s", plan.name, plan.commitInterval)
		}
	}
}

// TestPlanOverheadRunsPerLoad: a workload with several offered loads
// runs its rounds at each, the load in the run's name and workload.
func TestPlanOverheadRunsPerLoad(t *testing.T) {
	t.Parallel()
	workload, err := LoadWorkload("commit-curve")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := planOverheadRuns(workload, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	slots := len(overheadSlots(workload))
	if slots != 6 || len(plans) != 2*workload.Overhead.Rounds*slots {
		t.Fatalf("%d slots, %d runs; want 6 slots (baseline, A/A, 4 intervals) and %d runs", slots, len(plans), 2*workload.Overhead.Rounds*slots)
	}
	last := plans[len(plans)-1]
	if last.workload.Rate != 20000 || !strings.Contains(last.name, " 20000/s #") || plans[0].workload.Rate != 0 {
		t.Errorf("first run %s at %d/s, last %s at %d/s", plans[0].name, plans[0].workload.Rate, last.name, last.workload.Rate)
	}
}

// TestOverheadSectionFromRounds: known per-round measurements give the
// paired ratios, their median and a verdict; a failed round is left out.
func TestOverheadSectionFromRounds(t *testing.T) {
	t.Parallel()
	workload := overheadWorkload(t)
	workload.Overhead.Rounds, workload.Overhead.Rates = 3, nil // one load: the workload's rate
	workload.Modes = []string{"at-least-once", "idempotent"}
	plans, err := planOverheadRuns(workload, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	throughput := map[string][]float64{"at-least-once": {1000, 1100, 900}, "at-least-once (A/A)": {1010, 1090, 905},
		"idempotent": {500, 550, 450}}
	var runs []*report.Run
	for _, plan := range plans {
		run := &report.Run{Name: plan.name, Mode: plan.mode, Round: plan.round, Slot: plan.slot, Status: report.StatusPass,
			Throughput: report.Throughput{RecordsPerSecond: throughput[plan.slot][plan.round-1]}}
		runs = append(runs, run)
	}
	overhead := buildOverhead(workload, plans, runs)
	rows := overhead.Loads[0].Rows
	if len(rows) != 2 || !rows[0].NoiseFloor || rows[0].Slot != "at-least-once (A/A)" || rows[1].Slot != "idempotent" {
		t.Fatalf("rows %+v, want the A/A row then idempotent", rows)
	}
	idempotent := rows[1].Throughput
	if idempotent.MedianRatio != 0.5 || idempotent.CILow != 0.5 || idempotent.CIHigh != 0.5 || idempotent.Verdict != stats.Slower {
		t.Errorf("idempotent at half the baseline in every round: %+v", idempotent)
	}
	if rows[0].Throughput.Verdict != stats.WithinNoise {
		t.Errorf("A/A ratios %v: verdict %q, want within noise", rows[0].Throughput.Ratios, rows[0].Throughput.Verdict)
	}
	if rows[0].AckP99.Verdict != stats.WithinNoise || len(rows[0].AckP99.Ratios) != 0 {
		t.Errorf("no latency measured: %+v, want no ratios and within noise", rows[0].AckP99)
	}
	runs[len(runs)-1].Status = report.StatusError // the last run: round 3's last slot
	overhead = buildOverhead(workload, plans, runs)
	for _, row := range overhead.Loads[0].Rows {
		if row.Slot == plans[len(plans)-1].slot && len(row.Throughput.Ratios) != 2 {
			t.Errorf("%s: a failed round must not count: ratios %v", row.Slot, row.Throughput.Ratios)
		}
	}
}

// TestOverheadRunAgainstEmbeddedBroker runs the overhead workload, 2
// short rounds at saturation and at a fixed load, against our broker:
// every run passes its checks and the results carry an overhead section
// with one table per load, each with the A/A row and one row per slot.
func TestOverheadRunAgainstEmbeddedBroker(t *testing.T) {
	t.Parallel()
	workload := overheadWorkload(t)
	workload.Overhead.Rounds, workload.Overhead.Rates, workload.Overhead.Fractions = 2, []int{0, 5000}, nil
	workload.Duration, workload.Warmup, workload.Records = Duration(700*time.Millisecond), 0, 4000
	workload.Partitions = 2
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	results, err := Run(ctx, Options{Workload: workload, Target: newQuickGroupsEmbedded(t)})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(results.Runs) != 2*2*6 {
		t.Fatalf("%d runs, want 24 (2 loads, 2 rounds of 6 slots)", len(results.Runs))
	}
	for _, run := range results.Runs {
		if run.Status != report.StatusPass || run.Round < 1 || run.Slot == "" {
			t.Errorf("%s: status %s (%s), round %d, slot %q", run.Name, run.Status, run.Reason, run.Round, run.Slot)
		}
	}
	encoded, err := json.Marshal(results)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Overhead struct {
			Baseline  string `json:"baseline"`
			Rounds    int    `json:"rounds"`
			Producers int    `json:"producers"`
			Loads     []struct {
				Rate int `json:"rate"`
				Rows []struct {
					Slot       string                     `json:"slot"`
					NoiseFloor bool                       `json:"noise_floor"`
					KeptUp     *bool                      `json:"kept_up"`
					Runs       []string                   `json:"runs"`
					Throughput map[string]json.RawMessage `json:"throughput"`
					AckP99     map[string]json.RawMessage `json:"ack_p99"`
				} `json:"rows"`
			} `json:"loads"`
		} `json:"overhead"`
	}
	if err := json.Unmarshal(encoded, &file); err != nil {
		t.Fatal(err)
	}
	overhead := file.Overhead
	if overhead.Baseline != "at-least-once" || overhead.Rounds != 2 || overhead.Producers != workload.Producers ||
		len(overhead.Loads) != 2 || overhead.Loads[0].Rate != 0 || overhead.Loads[1].Rate != 5000 {
		t.Fatalf("overhead section %+v", overhead)
	}
	for _, load := range overhead.Loads {
		rows := load.Rows
		if len(rows) != 5 || rows[0].Slot != "at-least-once (A/A)" || !rows[0].NoiseFloor {
			t.Fatalf("rows %+v: want 5, the A/A row first", rows)
		}
		for _, row := range rows {
			if (row.KeptUp != nil) != (load.Rate > 0) {
				t.Errorf("%s at %d/s: kept_up %v, want it at a fixed load only", row.Slot, load.Rate, row.KeptUp)
			}
			if len(row.Runs) != 2 {
				t.Errorf("%s: runs %v, want one per round", row.Slot, row.Runs)
			}
			for name, stat := range map[string]map[string]json.RawMessage{"throughput": row.Throughput, "ack_p99": row.AckP99} {
				for _, key := range []string{"values", "baseline", "ratios", "median_ratio", "ci_low", "ci_high", "verdict"} {
					if _, ok := stat[key]; !ok {
						t.Errorf("%s %s: no %s field", row.Slot, name, key)
					}
				}
				var ratios []float64
				if err := json.Unmarshal(stat["ratios"], &ratios); err != nil || len(ratios) != 2 {
					t.Errorf("%s %s: ratios %s, want two rounds", row.Slot, name, stat["ratios"])
				}
				var verdict string
				_ = json.Unmarshal(stat["verdict"], &verdict)
				if !slices.Contains([]string{stats.Faster, stats.Slower, stats.WithinNoise}, verdict) {
					t.Errorf("%s %s: verdict %q", row.Slot, name, verdict)
				}
			}
		}
	}
	var table strings.Builder
	if err := report.WriteOverhead(&table, results); err != nil {
		t.Fatal(err)
	}
	t.Log(table.String())
	for _, want := range []string{"overhead vs at-least-once", "at-least-once (A/A)", "transactional@1s", "floor ±", "at 5000 records/s offered"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("overhead table does not show %q:\n%s", want, table.String())
		}
	}
}
