package report

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDashboardHeaderShowsContextAndSharedMachineWarning: the header
// shows the CPU model, GOMAXPROCS, kernel, broker settings and client
// settings; a file whose client and broker shared the machine gets a
// visible warning, a file that does not say (written before the field)
// gets none.
func TestDashboardHeaderShowsContextAndSharedMachineWarning(t *testing.T) {
	old := loadFixture(t, kfakeFixture)
	if page := renderFixtures(t, old); strings.Contains(page, `class="warning"`) {
		t.Errorf("a file without shares_machine got the shared-machine warning")
	}
	shared := loadFixture(t, embeddedFixture)
	yes := true
	shared.Machine.CPUModel, shared.Machine.GOMAXPROCS, shared.Machine.Kernel = "Test CPU @ 3.00GHz", 2, "linux 6.1.0-test"
	shared.Target.SharesMachine, shared.Target.Sharing = &yes, "the broker runs in the load generator's process"
	shared.Target.BrokerSettings = map[string]string{"log.fsync": "never (default)", "min.insync.replicas": "1 (default)"}
	page := renderFixtures(t, shared)
	for _, want := range []string{"Test CPU @ 3.00GHz", "GOMAXPROCS 2", "kernel linux 6.1.0-test",
		"log.fsync=never (default), min.insync.replicas=1 (default)", "franz-go kgo; 2 producers",
		`<p class="warning" role="alert"><b>Warning</b>`, "client and broker ran on the same machine"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Index(page, `class="warning"`) > strings.Index(page, `<section id="setup">`) {
		t.Errorf("the shared-machine warning is not above the setup section")
	}
}

// TestDashboardSharedWarningOncePerText: files measured the same way on
// the same machine share one warning naming them; a different target gets
// its own.
func TestDashboardSharedWarningOncePerText(t *testing.T) {
	yes := true
	var files []*Results
	for _, kind := range []string{"embedded", "kfake", "embedded"} {
		results := loadFixture(t, embeddedFixture)
		results.Target.Kind, results.Target.SharesMachine, results.Target.Sharing = kind, &yes, "in process"
		files = append(files, results)
	}
	page := renderFixtures(t, files...)
	if got := strings.Count(page, `<p class="warning" role="alert">`); got != 2 {
		t.Errorf("%d warnings, want 2 (embedded, kfake)", got)
	}
	for _, want := range []string{`<b>Warning</b> (files A, C): `, `<b>Warning</b> (file B): `} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestDashboardSaysWhatLatencyCountsFrom: a fixed-rate run's row says its
// latency counts from the scheduled send time and shows the uncorrected
// figure beside it, an unpaced run's says it counts from the creation, and
// the uncorrected spectrum has its own titled chart.
func TestDashboardSaysWhatLatencyCountsFrom(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	paced := results.Runs[2]
	paced.LatencyOrigin = LatencyFromSchedule
	uncorrected := *paced.Latency[LatencyProduceAck]
	uncorrected.PercentilesMs = map[string]float64{"99.9": 12.5, "100": 34.5}
	uncorrected.MaxMillis = 34.5
	paced.Latency[LatencyProduceAckUncorrected] = &uncorrected
	results.Runs[0].LatencyOrigin = LatencyFromCreation
	page := renderFixtures(t, results)
	row := rowFor(t, page, "runs", `data-run="`+paced.Name+`" data-file="A"`)
	for _, want := range []string{"scheduled send time", "<td>12.5 / 34.5</td>"} {
		if !strings.Contains(row, want) {
			t.Errorf("%s row lacks %q: %s", paced.Name, want, row)
		}
	}
	if row := rowFor(t, page, "runs", `data-run="`+results.Runs[0].Name+`" data-file="A"`); !strings.Contains(row, "creation (unpaced)") {
		t.Errorf("unpaced row does not say its latency counts from the creation: %s", row)
	}
	for _, want := range []string{"Latency at a fixed rate counts from the scheduled send time",
		"produce → ack latency, uncorrected: from when the record was handed to the client"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestThroughputChartsUseHorizontalBars: every run of a file with many
// runs has its own horizontal label (no rotated labels), the chart grows
// with the runs, and a fixed-rate workload's cap is noted.
func TestThroughputChartsUseHorizontalBars(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	base := results.Runs
	for i := range 35 {
		copied := *base[i%len(base)]
		copied.Name = fmt.Sprintf("%s:plan-%02d", copied.Name, i)
		results.Runs = append(results.Runs, &copied)
	}
	results.Workload = json.RawMessage(`{"name": "many", "rate": 2000}`)
	charts := figures(t, renderFixtures(t, results))
	for _, id := range []string{"throughput", "overhead"} {
		svg := charts[id]
		if strings.Contains(svg, "rotate(") {
			t.Errorf("%s chart has rotated labels", id)
		}
		for _, run := range results.Runs {
			if !strings.Contains(svg, ">"+run.Name+"<") {
				t.Errorf("%s chart lacks the label %s", id, run.Name)
				break
			}
		}
		height := regexp.MustCompile(`<svg[^>]* height="([0-9.]+)pt"`).FindStringSubmatch(svg)
		if len(height) < 2 {
			t.Fatalf("%s chart: no svg height", id)
		}
		if points, _ := strconv.ParseFloat(height[1], 64); points < 20*float64(len(results.Runs)) {
			t.Errorf("%s chart is %s pt high for %d runs: too low for a readable label each", id, height[1], len(results.Runs))
		}
	}
	if !strings.Contains(charts["throughput"], "Offered load was capped (A at 2000 records/s)") {
		t.Errorf("throughput chart does not note the rate cap")
	}
}
