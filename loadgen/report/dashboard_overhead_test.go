package report

import (
	"regexp"
	"strings"
	"testing"
)

// overheadResults is a results file of two rounds with an overhead
// section: an A/A row within noise, idempotent within noise (its interval
// spans 1.0 though its median is above), transactional slower.
func overheadResults() *Results {
	results := &Results{SchemaVersion: SchemaVersion, Tool: "exactly loadgen", RunID: "00000000000000aa",
		Target: Target{Kind: "embedded"}, Passed: true}
	for round := 1; round <= 2; round++ {
		for _, slot := range []string{"at-least-once", "at-least-once (A/A)", "idempotent", "transactional@100ms"} {
			mode := strings.Fields(strings.Split(slot, "@")[0])[0]
			results.Runs = append(results.Runs, &Run{Name: slot + " #" + string(rune('0'+round)), Mode: mode, Status: StatusPass,
				Round: round, Slot: slot, Latency: map[string]*Histogram{}})
		}
	}
	var names = func(slot string) []string { return []string{slot + " #1", slot + " #2"} }
	results.Overhead = &Overhead{Baseline: "at-least-once", Rounds: 2, Producers: 2, Resamples: 2000, Confidence: 0.95, RandomStream: 17,
		Loads: []OverheadLoad{{Rate: 0, BaselineRuns: names("at-least-once"), Rows: []OverheadRow{
			{Slot: "at-least-once (A/A)", Mode: "at-least-once", NoiseFloor: true, Runs: names("at-least-once (A/A)"),
				Throughput: RatioStat{Values: []float64{99, 101}, Baseline: []float64{100, 100}, Ratios: []float64{0.99, 1.01},
					MedianRatio: 1, CILow: 0.99, CIHigh: 1.01, Verdict: "within noise"}},
			{Slot: "idempotent", Mode: "idempotent", Runs: names("idempotent"),
				Throughput: RatioStat{Values: []float64{95, 115}, Baseline: []float64{100, 100}, Ratios: []float64{0.95, 1.15},
					MedianRatio: 1.05, CILow: 0.95, CIHigh: 1.15, Verdict: "within noise"}},
			{Slot: "transactional@100ms", Mode: "transactional", CommitIntervalMs: 100, Runs: names("transactional@100ms"),
				Throughput: RatioStat{Values: []float64{80, 82}, Baseline: []float64{100, 100}, Ratios: []float64{0.8, 0.82},
					MedianRatio: 0.81, CILow: 0.8, CIHigh: 0.82, Verdict: "slower"}},
		}}}}
	return results
}

// TestDashboardOpensWithTheOverheadTable: the overhead table is the
// page's first section after the fault matrix's verdicts, with the baseline, the A/A noise floor and every
// slot; a spanning interval is shown within noise, uncoloured, never as a
// gain; the fault matrix column reads the matrix of the other file shown.
func TestDashboardOpensWithTheOverheadTable(t *testing.T) {
	matrix := loadFixture(t, kfakeFixture)
	for _, run := range matrix.Runs {
		run.FaultRunInfo = FaultRunInfo{FaultPlan: "ack-loss", Expectation: &Expectation{Verdict: StatusPass}}
	}
	page := renderFixtures(t, overheadResults(), matrix)
	sections := regexp.MustCompile(`<section id="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(sections) < 2 || sections[0][1] != "verdicts" || sections[1][1] != "overhead" {
		t.Fatalf("sections %v, want the verdict matrix, then overhead", sections)
	}
	section := page[strings.Index(page, `<section id="overhead">`):]
	section = section[:strings.Index(section, "</section>")]
	rows := regexp.MustCompile(`(?s)<tr data-slot="([^"]+)"[^>]*>(.*?)</tr>`).FindAllStringSubmatch(section, -1)
	var slots []string
	cells := map[string]string{}
	for _, row := range rows {
		slots = append(slots, row[1])
		cells[row[1]] = row[2]
	}
	if strings.Join(slots, ",") != "at-least-once,at-least-once (A/A),idempotent,transactional@100ms" {
		t.Fatalf("overhead rows %v", slots)
	}
	if !strings.Contains(cells["at-least-once (A/A)"], "noise floor") {
		t.Errorf("A/A row not marked as the noise floor: %s", cells["at-least-once (A/A)"])
	}
	idempotent := cells["idempotent"]
	if !strings.Contains(idempotent, "1.050 [0.950, 1.150]") || !strings.Contains(idempotent, "within noise") ||
		strings.Contains(idempotent, "better") || strings.Contains(idempotent, "faster") {
		t.Errorf("a ratio spanning 1.0 must read within noise, uncoloured: %s", idempotent)
	}
	if transactional := cells["transactional@100ms"]; !strings.Contains(transactional, `class="text worse">slower`) {
		t.Errorf("transactional@100ms slower not marked worse: %s", transactional)
	}
	if !strings.Contains(cells["idempotent"], "2/2 pass") {
		t.Errorf("rounds checked missing: %s", cells["idempotent"])
	}
	if !strings.Contains(cells["idempotent"], `status-pass">pass (1 runs)`) {
		t.Errorf("fault matrix verdict of idempotent from the second file missing: %s", cells["idempotent"])
	}
	if !strings.Contains(section, "saturation") || !strings.Contains(section, "2 producers") {
		t.Errorf("overhead table does not say the load and the producers: %s", section)
	}
}

// TestDashboardWithoutOverheadHasNoOverheadSection: older results files
// (no overhead section) still render, without the section.
func TestDashboardWithoutOverheadHasNoOverheadSection(t *testing.T) {
	page := renderFixtures(t, loadFixture(t, kfakeFixture), loadFixture(t, embeddedFixture))
	if strings.Contains(page, `<section id="overhead">`) {
		t.Error("a results file without rounds got an overhead section")
	}
}

// TestCommitCurveChart: with two or more commit intervals the overhead
// section draws the curve, one point with an interval bar per interval
// and measure; with one interval there is no curve.
func TestCommitCurveChart(t *testing.T) {
	results := overheadResults()
	if page := renderFixtures(t, results); strings.Contains(page, `class="chart curve"`) {
		t.Error("one commit interval drew a curve")
	}
	rows := &results.Overhead.Loads[0].Rows
	second := (*rows)[2]
	second.Slot, second.CommitIntervalMs = "transactional@1s", 1000
	*rows = append(*rows, second)
	page := renderFixtures(t, results)
	svgs := regexp.MustCompile(`(?s)<figure class="chart curve"><figcaption>([^<]*)</figcaption>(<svg.*?</svg>)</figure>`).FindAllStringSubmatch(page, -1)
	if len(svgs) != 2 {
		t.Fatalf("%d curve charts, want 2 (throughput, p99)", len(svgs))
	}
	for _, svg := range svgs {
		elements := parseSVG(t, svg[1], svg[2])
		if elements["circle"] != 2 || elements["path"] != 1 {
			t.Errorf("%s: %d points, %d lines; want 2 points on 1 line", svg[1], elements["circle"], elements["path"])
		}
	}
	if !strings.Contains(svgs[0][2], "100 ms") || !strings.Contains(svgs[0][2], "1000 ms") || !strings.Contains(svgs[0][2], "0.810 [0.800, 0.820]") {
		t.Errorf("curve does not label its intervals and ratios: %s", svgs[0][2])
	}
}

// overheadFixture is the results file of a real `exactly loadgen
// --workload overhead --rounds 5` run on the embedded broker (time
// series, HdrHistogram encodings and the client settings of rounds 2-5
// left out to keep it small).
const overheadFixture = "testdata/results-v1-embedded-overhead.json"

// TestOverheadFixtureReadsAndRenders: a real overhead run's file loads,
// keeps every field through a decode and encode, and renders its two
// tables (saturation, 20000 records/s) with the A/A row and every slot.
func TestOverheadFixtureReadsAndRenders(t *testing.T) {
	results := loadFixture(t, overheadFixture)
	overhead := results.Overhead
	if overhead == nil || overhead.Rounds != 5 || len(overhead.Loads) != 2 || overhead.Loads[1].Rate != 20000 {
		t.Fatalf("overhead section %+v", overhead)
	}
	for _, load := range overhead.Loads {
		if len(load.Rows) != 5 || !load.Rows[0].NoiseFloor || len(load.BaselineRuns) != 5 {
			t.Errorf("load %d: rows %d, A/A first %v, baseline runs %v", load.Rate, len(load.Rows), load.Rows[0].NoiseFloor, load.BaselineRuns)
		}
	}
	page := renderFixtures(t, results)
	if got := strings.Count(page, `<tr data-slot="at-least-once (A/A)"`); got != 2 {
		t.Errorf("%d A/A rows on the page, want 2 (one per load)", got)
	}
	if got := strings.Count(page, ">5/5 pass<"); got != 12 {
		t.Errorf("%d slots with 5/5 rounds passed, want 12 (6 slots, 2 loads)", got)
	}
}
