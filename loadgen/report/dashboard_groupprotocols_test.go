package report

import (
	"strings"
	"testing"
)

// The dashboard shows the comparison's two protocols side by side (the
// baseline bold, the other with its ratio) and each group-churn run's
// pauses; a file without either has no such section.
func TestDashboardGroupProtocols(t *testing.T) {
	results := loadFixture(t, embeddedFixture)
	if page := renderFixtures(t, results); strings.Contains(page, `id="group-protocols"`) {
		t.Fatal("a file without pauses shows the group protocols section")
	}
	results.Runs[0].GroupProtocol = "consumer"
	results.Runs[0].RebalancePauses = &RebalancePauses{Events: 12, Pauses: 5, MedianMs: 812, P99Ms: 2950, MaxMs: 3001, TotalMs: 9800, NormalGapMs: 4, WindowMs: 2000}
	results.GroupProtocols = &GroupProtocolComparison{Rounds: 5, Protocols: []string{"classic", "consumer"}, Baseline: "classic", Confidence: 0.95,
		Rows: []GroupProtocolRow{{Mode: "eos-pipeline", FaultPlan: "group-churn",
			Sides: []GroupProtocolSide{
				{Protocol: "classic", Runs: []string{"a", "b"}, Passed: 2, MedianPause: Estimate{Values: []float64{520, 600}, Median: 560, Low: 520, High: 600}},
				{Protocol: "consumer", Runs: []string{"c", "d"}, Passed: 2, Duplicated: 0, MedianPause: Estimate{Values: []float64{1400, 1500}, Median: 1450, Low: 1400, High: 1500}}},
			MedianPauseRatio: RatioStat{Ratios: []float64{2.5, 2.7}, MedianRatio: 2.6, CILow: 2.5, CIHigh: 2.7}}}}
	page := renderFixtures(t, results)
	for _, want := range []string{`id="group-protocols"`, "<b>classic</b>", "560 [520, 600]", "1450 [1400, 1500]", "2.600 [2.500, 2.700]",
		`data-run="` + results.Runs[0].Name + `"`, "<td>812</td><td>2950</td><td>3001</td><td>9800</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var text strings.Builder
	if err := WriteGroupProtocols(&text, results); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "1450 [1400, 1500]") || !strings.Contains(text.String(), "2.600 [2.500, 2.700]") {
		t.Errorf("terminal table:\n%s", text.String())
	}
}

// The dashboard shows a run of load workers merged and per worker, a
// worker behind its share flagged with its note; a file without workers
// has no such section.
func TestDashboardLoadWorkers(t *testing.T) {
	results := loadFixture(t, embeddedFixture)
	if page := renderFixtures(t, results); strings.Contains(page, `id="load-workers"`) {
		t.Fatal("a file without load workers shows the section")
	}
	results.Runs[0].Workers = []WorkerShare{
		{Index: 0, Command: "exactly loadgen worker", Producers: []uint32{0, 1}, TargetRecordsPerSecond: 1000, Acknowledged: 10000,
			RecordsPerSecond: 1000, CPUSeconds: 3.5, StreamCPUShare: 0.004, Status: WorkerOK},
		{Index: 1, Host: "client-b", Producers: []uint32{2}, TargetRecordsPerSecond: 1000, Acknowledged: 7000, RecordsPerSecond: 700,
			Status: WorkerBehind, Note: "kept 70% of its share of the rate"},
	}
	page := renderFixtures(t, results)
	for _, want := range []string{`id="load-workers"`, `<td class="text">0–1</td>`, "<td>3.5</td><td>0.40%</td>",
		`<tr data-worker="1" class="worse"><td class="text">worker 1</td><td class="text">client-b</td>`, "behind: kept 70% of its share of the rate",
		", 1 behind"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
