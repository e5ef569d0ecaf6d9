package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// colouredCell finds an element whose class says better or worse.
var colouredCell = regexp.MustCompile(`class="[^"]*\b(better|worse)\b[^"]*"`)

// TestDashboardSingleRunsColourNothing: two results files of the same
// build, one run per mode each, B's throughput 1.87 times A's: the values
// stand side by side with "one run each: no interval", no ratio, no colour,
// no verdict word.
func TestDashboardSingleRunsColourNothing(t *testing.T) {
	a, b := loadFixture(t, kfakeFixture), loadFixture(t, kfakeFixture)
	b.RunID = "00000000000000bb"
	for _, run := range b.Runs {
		run.Throughput.RecordsPerSecond *= 1.87
	}
	page := renderFixtures(t, a, b)
	if found := colouredCell.FindAllString(page, -1); len(found) > 0 {
		t.Errorf("single runs coloured: %v", found)
	}
	row := rowFor(t, page, "comparison", `data-run="at-least-once"`)
	for _, want := range []string{oneRunEach, number(a.Runs[2].Throughput.RecordsPerSecond, 0), number(b.Runs[2].Throughput.RecordsPerSecond, 0)} {
		if !strings.Contains(row, want) {
			t.Errorf("at-least-once comparison lacks %q: %s", want, row)
		}
	}
	for _, banned := range []string{"×1.87", "better", "worse", "within noise"} {
		if strings.Contains(row, banned) {
			t.Errorf("single runs compared with %q: %s", banned, row)
		}
	}
	if strings.Contains(page, `<table class="comparison-slots">`) {
		t.Error("files without rounds got a table of slots")
	}
}

// roundsResults is a results file of five interleaved rounds with an
// overhead section at saturation: the baseline, the A/A floor (±5 % on
// both measures), idempotent and transactional@100ms. scale multiplies a
// slot's throughput, so that two files differ where a test says.
func roundsResults(id string, scale map[string]float64) *Results {
	results := &Results{SchemaVersion: SchemaVersion, Tool: "exactly loadgen", RunID: id, Target: Target{Kind: "embedded"}, Passed: true}
	slots := []string{"at-least-once", "at-least-once (A/A)", "idempotent", "transactional@100ms"}
	throughput := map[string][]float64{
		"at-least-once":       {1000, 1020, 980, 1010, 990},
		"at-least-once (A/A)": {1005, 995, 1015, 985, 1000},
		"idempotent":          {900, 910, 890, 905, 895},
		"transactional@100ms": {800, 812, 788, 806, 794},
	}
	p99 := map[string][]float64{
		"at-least-once":       {10, 10.2, 9.8, 10.1, 9.9},
		"at-least-once (A/A)": {10.1, 9.9, 10, 10.2, 9.8},
		"idempotent":          {11, 11.2, 10.8, 11.1, 10.9},
		"transactional@100ms": {20, 20.4, 19.6, 20.2, 19.8},
	}
	names := map[string][]string{}
	for round := 1; round <= 5; round++ {
		for _, slot := range slots {
			mode := strings.Fields(strings.Split(slot, "@")[0])[0]
			name := fmt.Sprintf("%s max #%d", slot, round)
			names[slot] = append(names[slot], name)
			results.Runs = append(results.Runs, &Run{Name: name, Mode: mode, Status: StatusPass, Round: round, Slot: slot,
				Throughput: Throughput{RecordsPerSecond: throughput[slot][round-1] * scaleOf(scale, slot)}, Latency: map[string]*Histogram{}})
		}
	}
	scaled := func(values []float64, slot string) []float64 {
		out := make([]float64, len(values))
		for i, value := range values {
			out[i] = value * scaleOf(scale, slot)
		}
		return out
	}
	load := OverheadLoad{Rate: 0, BaselineRuns: names["at-least-once"],
		NoiseBand: NoiseBand{ThroughputLow: 0.95, ThroughputHigh: 1.05, AckP99Low: 0.95, AckP99High: 1.05}}
	for _, slot := range slots[1:] {
		load.Rows = append(load.Rows, OverheadRow{Slot: slot, Mode: strings.Fields(strings.Split(slot, "@")[0])[0],
			NoiseFloor: slot == "at-least-once (A/A)", Runs: names[slot],
			Throughput: RatioStat{Values: scaled(throughput[slot], slot), Baseline: scaled(throughput["at-least-once"], "at-least-once")},
			AckP99:     RatioStat{Values: p99[slot], Baseline: p99["at-least-once"]}})
	}
	results.Overhead = &Overhead{Baseline: "at-least-once", Rounds: 5, Producers: 2, Resamples: 2000, Confidence: 0.95, RandomStream: 17,
		Loads: []OverheadLoad{load}}
	return results
}

func scaleOf(scale map[string]float64, slot string) float64 {
	if factor, ok := scale[slot]; ok {
		return factor
	}
	return 1
}

// slotCells returns the comparison cells (the other file's "B vs A"
// columns) of a slot's row: throughput, then ack p99.
func slotCells(t *testing.T, page, slot string) []string {
	t.Helper()
	row := rowFor(t, page, "comparison-slots", `data-slot="`+slot+`"`)
	cells := regexp.MustCompile(`<td class="text ratio[^"]*">[^<]*</td>`).FindAllString(row, -1)
	if len(cells) != len(compareMeasures) {
		t.Fatalf("slot %s: %d comparison cells, want %d: %s", slot, len(cells), len(compareMeasures), row)
	}
	return cells
}

// TestDashboardRoundsColourOnlyBeyondTheFloor: two files of five rounds.
// B's idempotent runs at half A's throughput, far outside the ±5 % floor:
// that cell is red with its interval. B's transactional slot is 3 %
// faster: the interval may exclude 1, but it does not clear the floor, so
// it reads "no difference (within noise ±5%)", uncoloured. Unchanged
// slots are uncoloured too; the same files give the same page.
func TestDashboardRoundsColourOnlyBeyondTheFloor(t *testing.T) {
	a := roundsResults("00000000000000aa", nil)
	b := roundsResults("00000000000000bb", map[string]float64{"idempotent": 0.5, "transactional@100ms": 1.03})
	page := renderFixtures(t, a, b)

	idempotent := slotCells(t, page, "idempotent")
	if !strings.Contains(idempotent[0], `class="text ratio worse"`) || !regexp.MustCompile(`×0\.50 \[0\.4\d, 0\.5\d\] worse`).MatchString(idempotent[0]) {
		t.Errorf("idempotent at half the throughput not coloured worse with its interval: %s", idempotent[0])
	}
	if colouredCell.MatchString(idempotent[1]) || !strings.Contains(idempotent[1], "no difference (within noise ±5") {
		t.Errorf("idempotent's unchanged p99 coloured: %s", idempotent[1])
	}
	transactional := slotCells(t, page, "transactional@100ms")
	if colouredCell.MatchString(transactional[0]) || !strings.Contains(transactional[0], "×1.03 [") ||
		!strings.Contains(transactional[0], "no difference (within noise ±5") {
		t.Errorf("transactional 3%% apart, inside the floor: %s", transactional[0])
	}
	for _, slot := range []string{"at-least-once", "at-least-once (A/A)"} {
		for _, cell := range slotCells(t, page, slot) {
			// The fixtures have no live consumers: their end-to-end
			// column is "-" in both files.
			if colouredCell.MatchString(cell) || !(strings.Contains(cell, "within noise") || strings.HasSuffix(cell, ">-</td>")) {
				t.Errorf("%s unchanged between the files but: %s", slot, cell)
			}
		}
	}
	if got := len(colouredCell.FindAllString(page[strings.Index(page, `<section id="comparison">`):], -1)); got != 1 {
		t.Errorf("%d coloured comparison cells, want 1 (idempotent's throughput)", got)
	}
	// The rounds are compared by slot, not run by run.
	if strings.Contains(page, `<table class="comparison">`) {
		t.Error("runs grouped into slots also compared one by one")
	}
	if again := renderFixtures(t, a, b); again != page {
		t.Error("the same files rendered two different pages")
	}
}

// TestDashboardRoundsInOneFileOnly: a file of rounds beside a file whose
// slot has a single round: side by side, no interval, no colour.
func TestDashboardRoundsInOneFileOnly(t *testing.T) {
	a := roundsResults("00000000000000aa", nil)
	b := roundsResults("00000000000000bb", map[string]float64{"idempotent": 0.5})
	rows := b.Overhead.Loads[0].Rows
	for index := range rows {
		if rows[index].Slot == "idempotent" {
			rows[index].Throughput.Values = rows[index].Throughput.Values[:1]
		}
	}
	page := renderFixtures(t, a, b)
	if cell := slotCells(t, page, "idempotent")[0]; colouredCell.MatchString(cell) || !strings.Contains(cell, roundsInOneFile) {
		t.Errorf("one round against five judged: %s", cell)
	}
}

// TestDashboardOpensWithTheVerdictMatrix: a standard-like results file
// (every mode under fault plans, judged, at a capped rate) opens with the
// verdict matrix, mode by plan, before any throughput chart.
func TestDashboardOpensWithTheVerdictMatrix(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	for index, run := range results.Runs {
		run.FaultRunInfo = FaultRunInfo{FaultPlan: "none", Expectation: &Expectation{Verdict: StatusPass}}
		if index%2 == 1 {
			copied := *run
			copied.Name += ":ack-loss"
			copied.FaultRunInfo = FaultRunInfo{FaultPlan: "ack-loss", Expectation: &Expectation{Verdict: StatusPass}}
			results.Runs = append(results.Runs, &copied)
		}
	}
	idempotent := results.Runs[len(results.Runs)-2]
	idempotent.Expectation.Verdict, idempotent.Status = StatusFail, StatusFail
	page := renderFixtures(t, results)
	sections := regexp.MustCompile(`<section id="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(sections) == 0 || sections[0][1] != "verdicts" {
		t.Fatalf("sections %v, want the verdict matrix first", sections)
	}
	matrix, chart := strings.Index(page, `<table class="verdict-matrix"`), strings.Index(page, `data-chart="throughput"`)
	if matrix < 0 || chart < 0 || matrix > chart {
		t.Errorf("verdict matrix at %d, first throughput chart at %d", matrix, chart)
	}
	if !strings.Contains(page, `<tr><th class="text">mode</th><th class="text">none</th><th class="text">ack-loss</th></tr>`) {
		t.Errorf("matrix columns are not the fault plans")
	}
	row := regexp.MustCompile(`<tr data-mode="` + idempotent.Mode + `">.*</tr>`).FindString(page)
	if !strings.Contains(row, `status-pass"`) || !strings.Contains(row, `status-fail" title="`+idempotent.Name+`">fail<`) {
		t.Errorf("%s row: %s", idempotent.Mode, row)
	}
	if row := regexp.MustCompile(`<tr data-mode="at-most-once">.*</tr>`).FindString(page); !strings.HasSuffix(row, `<td class="text "></td></tr>`) {
		t.Errorf("at-most-once did not run under ack-loss, but: %s", row)
	}
}
