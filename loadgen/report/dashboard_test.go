package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// renderFixtures renders the dashboard of results and returns the page.
func renderFixtures(t *testing.T, results ...*Results) string {
	t.Helper()
	var page bytes.Buffer
	if err := RenderDashboard(&page, DashboardOptions{}, results...); err != nil {
		t.Fatalf("RenderDashboard: %v", err)
	}
	return page.String()
}

// figures maps each data-chart id of page to the figure's HTML.
func figures(t *testing.T, page string) map[string]string {
	t.Helper()
	found := map[string]string{}
	for _, match := range regexp.MustCompile(`(?s)<figure class="chart" data-chart="([^"]+)">(.*?)</figure>`).FindAllStringSubmatch(page, -1) {
		found[match[1]] = match[2]
	}
	return found
}

// parseSVG checks that svg is well-formed XML with an <svg> root and
// returns how many elements of each name it holds.
func parseSVG(t *testing.T, id, svg string) map[string]int {
	t.Helper()
	elements := map[string]int{}
	decoder := xml.NewDecoder(strings.NewReader(svg))
	for {
		token, err := decoder.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart %s: SVG is not well-formed: %v", id, err)
		}
		if start, ok := token.(xml.StartElement); ok {
			elements[start.Name.Local]++
		}
	}
	if elements["svg"] != 1 {
		t.Fatalf("chart %s: %d <svg> elements", id, elements["svg"])
	}
	return elements
}

// rowFor returns the <tr> of the table with the given class whose
// data attributes match.
func rowFor(t *testing.T, page, table, attributes string) string {
	t.Helper()
	start := strings.Index(page, `<table class="`+table+`">`)
	if start < 0 {
		t.Fatalf("no %s table", table)
	}
	body := page[start : start+strings.Index(page[start:], "</table>")]
	for _, row := range strings.Split(body, "<tr") {
		if strings.Contains(row, attributes) {
			return row
		}
	}
	t.Fatalf("table %s has no row with %s", table, attributes)
	return ""
}

// TestDashboardFromRealRuns renders the two fixture runs (kfake and our
// embedded broker, smoke workload) and checks that every chart is a
// well-formed SVG with data in it.
func TestDashboardFromRealRuns(t *testing.T) {
	kfake, embedded := loadFixture(t, kfakeFixture), loadFixture(t, embeddedFixture)
	page := renderFixtures(t, kfake, embedded)

	charts := figures(t, page)
	wantCharts := map[string]string{
		"throughput": "rect|path", "overhead": "path",
		"latency-produce_ack-0": "path", "latency-produce_ack-1": "path",
		"latency-end_to_end-0": "path", "latency-end_to_end-1": "path",
		"latency-transaction_commit-0": "path", "sweep-throughput": "path", "sweep-latency": "path",
	}
	for id := range wantCharts {
		figure, ok := charts[id]
		if !ok {
			t.Errorf("chart %s missing; charts: %v", id, keys(charts))
			continue
		}
		svgStart, svgEnd := strings.Index(figure, "<svg"), strings.LastIndex(figure, "</svg>")
		if svgStart < 0 || svgEnd < 0 {
			t.Errorf("chart %s has no SVG: %.300s", id, figure)
			continue
		}
		elements := parseSVG(t, id, figure[svgStart:svgEnd+len("</svg>")])
		if elements["path"] < 10 || elements["text"] < 4 {
			t.Errorf("chart %s: %d paths, %d texts: no data drawn?", id, elements["path"], elements["text"])
		}
	}
	// The embedded broker recorded no commit latency (transactions are
	// unsupported there): its panel says so instead of drawing nothing.
	if figure := charts["latency-transaction_commit-1"]; strings.Contains(figure, "<svg") || !strings.Contains(figure, "no transaction_commit latency recorded") {
		t.Errorf("embedded commit-latency panel: %.300s", figure)
	}
	// Bars in both files' colours; the baseline line is dashed.
	throughput := strings.ToLower(charts["throughput"])
	for _, colour := range []string{cssColor(fileColor(0)), cssColor(fileColor(1))} {
		if !strings.Contains(throughput, "fill:"+colour) {
			t.Errorf("throughput chart has no bar in %s", colour)
		}
	}
	if !strings.Contains(charts["overhead"], "stroke-dasharray") {
		t.Error("overhead chart has no dashed baseline line")
	}
	// Spectra are drawn on log axes with percentile labels.
	for _, label := range []string{">0%<", ">90%<", ">99%<", ">99.9%<"} {
		if !strings.Contains(charts["latency-produce_ack-0"], label) {
			t.Errorf("produce-ack spectrum has no %s tick", label)
		}
	}
	// Unsupported runs are listed but not charted.
	if !strings.Contains(charts["throughput"], "not charted, unsupported by the target: B idempotent") {
		t.Errorf("throughput chart does not note the unsupported runs")
	}
}

// TestDashboardTablesFromRealRuns checks the tables of the fixture page:
// values, ratios between targets, setup, and that it is self-contained.
func TestDashboardTablesFromRealRuns(t *testing.T) {
	kfake, embedded := loadFixture(t, kfakeFixture), loadFixture(t, embeddedFixture)
	page := renderFixtures(t, kfake, embedded)
	row := rowFor(t, page, "runs", `data-run="at-least-once" data-file="A"`)
	for _, want := range []string{number(kfake.Runs[2].Throughput.RecordsPerSecond, 0), "×1.00", "pass"} {
		if !strings.Contains(row, want) {
			t.Errorf("at-least-once row of A lacks %q: %s", want, row)
		}
	}
	// One run in each file: the values side by side, no ratio, no colour.
	comparison := rowFor(t, page, "comparison", `data-run="at-most-once"`)
	ratio := embedded.Runs[0].Throughput.RecordsPerSecond / kfake.Runs[0].Throughput.RecordsPerSecond
	for _, want := range []string{number(kfake.Runs[0].Throughput.RecordsPerSecond, 0), number(embedded.Runs[0].Throughput.RecordsPerSecond, 0), oneRunEach} {
		if !strings.Contains(comparison, want) {
			t.Errorf("comparison of at-most-once lacks %q: %s", want, comparison)
		}
	}
	if strings.Contains(comparison, times(ratio)) {
		t.Errorf("comparison of single runs shows the ratio %s: %s", times(ratio), comparison)
	}
	if idempotent := rowFor(t, page, "comparison", `data-run="idempotent"`); !strings.Contains(idempotent, "unsupported") {
		t.Errorf("comparison does not mark B's idempotent run unsupported: %s", idempotent)
	}
	// Setup: target, machine, workload, client settings.
	for _, want := range []string{kfake.Target.Description, embedded.Target.Description, "vm: linux/amd64, 2 CPUs", "smoke: every delivery mode",
		"<td>transaction.abort_share</td><td>0.2</td>", "max.in.flight.requests.per.connection", "read_uncommitted"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Self-contained: nothing is fetched at view time; no value was
	// rejected by html/template (ZgotmplZ).
	for _, banned := range []string{"<script", "<link", `src="http`, `href="http`, "@import", "url(http", "ZgotmplZ"} {
		if strings.Contains(page, banned) {
			t.Errorf("page contains %q: not self-contained", banned)
		}
	}
}

func keys(m map[string]string) []string {
	var list []string
	for key := range m {
		list = append(list, key)
	}
	return list
}

// TestDashboardHighlightsViolations: a checker count that breaks the
// guarantee is a red cell in a highlighted row; aborted records read under
// read_uncommitted are expected and stay plain.
func TestDashboardHighlightsViolations(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	baseline := results.Runs[2]
	baseline.Status = StatusFail
	baseline.Checks[0].Counts.Duplicated = 7
	baseline.Checks[0].Violations = baseline.Checks[0].Counts.Violations(verify.ReadCommitted)
	baseline.FaultsFired = 3
	page := renderFixtures(t, results)

	row := rowFor(t, page, "checks", `data-run="at-least-once" data-file="A" data-reader="read_committed"`)
	if !strings.HasPrefix(row, ` class="violation"`) {
		t.Errorf("violating row not highlighted: %s", row)
	}
	if !strings.Contains(row, `<td class="violation">7</td>`) {
		t.Errorf("duplicated count not marked: %s", row)
	}
	if !strings.Contains(row, "<li>7 duplicated</li>") || !strings.Contains(row, "status-fail") {
		t.Errorf("violation or status missing: %s", row)
	}
	clean := rowFor(t, page, "checks", `data-run="transactional@20ms" data-file="A" data-reader="read_uncommitted"`)
	if strings.Contains(clean, "violation") || !strings.Contains(clean, `<td class="">1500</td>`) {
		t.Errorf("read_uncommitted aborted records must be shown plain: %s", clean)
	}
	// Faults fired without times are reported, not hidden.
	if !strings.Contains(page, "3 faults fired; this results file does not record when") {
		t.Error("faults without times are not noted at the time series")
	}
}

// TestDashboardEscapesRecordedText: names and reasons come from files and
// must not inject markup, neither in tables nor in the SVG charts.
func TestDashboardEscapesRecordedText(t *testing.T) {
	results := loadFixture(t, embeddedFixture)
	results.Runs[0].Name = `<script>alert("run")</script>`
	results.Runs[3].Reason = `<img src=x onerror=alert(1)>`
	results.Target.Description = `"><b>target</b>`
	page := renderFixtures(t, results)
	for _, raw := range []string{`<script>alert`, `<img src=x`, `"><b>target`} {
		if strings.Contains(page, raw) {
			t.Errorf("page contains unescaped %q", raw)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(&#34;run&#34;)&lt;/script&gt;") && !strings.Contains(page, "&lt;script&gt;alert(&quot;run&quot;)") {
		t.Error("escaped run name not found")
	}
	for id, figure := range figures(t, page) {
		if start := strings.Index(figure, "<svg"); start >= 0 {
			parseSVG(t, id, figure[start:strings.LastIndex(figure, "</svg>")+len("</svg>")])
		}
	}
}

// TestSpectrumPoints checks the percentile spectrum of a known
// distribution: 1..1000 ms, one value each.
func TestSpectrumPoints(t *testing.T) {
	histogram := NewLatencyHistogram()
	for millisecond := int64(1); millisecond <= 1000; millisecond++ {
		if err := histogram.RecordValue(millisecond * 1000); err != nil {
			t.Fatal(err)
		}
	}
	summary := Summarize(histogram)
	points, decoded := spectrumPoints(summary)
	if !decoded {
		t.Fatal("spectrum did not decode the recorded histogram")
	}
	if first, last := points[0], points[len(points)-1]; first.X != 1 || last.X != 1000 || math.Abs(last.Y-1000) > 1 {
		t.Errorf("spectrum runs from %v to %v, want x 1..1000 ending at 1000 ms", first, last)
	}
	for _, point := range points {
		quantile := 1 - 1/point.X // share of values at or below y
		if want := quantile * 1000; math.Abs(point.Y-want) > 2+want*0.002 {
			t.Errorf("at x=%.3g (q=%.4f): %.2f ms, want about %.2f", point.X, quantile, point.Y, want)
		}
	}
	for index := 1; index < len(points); index++ {
		if points[index].X <= points[index-1].X || points[index].Y < points[index-1].Y {
			t.Fatalf("spectrum not increasing at %d: %v then %v", index, points[index-1], points[index])
		}
	}
	// Without the encoded histogram (or with a corrupt one): the reported
	// percentiles, in order.
	for _, encoded := range []string{"", "HISTFAAAnot-base64!", "SElTVEZBQUFBQUFB"} {
		summary.Encoded = encoded
		points, decoded = spectrumPoints(summary)
		if decoded || len(points) != len(ReportedPercentiles) {
			t.Fatalf("encoded %q: decoded=%v, %d points, want the %d reported percentiles", encoded, decoded, len(points), len(ReportedPercentiles))
		}
		// 50% at x=2, 90% at 10, 99% at 100; 99.9% and beyond at the
		// count, the last value recorded.
		for index, want := range []float64{2, 10, 100, 1000, 1000, 1000} {
			if math.Abs(points[index].X-want) > 1e-6*want {
				t.Errorf("fallback point %d at x=%v, want %v", index, points[index].X, want)
			}
		}
	}
	if points, _ := spectrumPoints(nil); points != nil {
		t.Errorf("nil histogram gave %v", points)
	}
}

// TestTimeSeriesMarksFaultEvents draws one tick per fault event in a lane
// under the zero line, in the run's colour, with a legend entry; without
// events there are none.
func TestTimeSeriesMarksFaultEvents(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	run := results.Runs[2]
	run.TimeSeries = []Sample{{ElapsedSeconds: 1, RecordsPerSecond: 900}, {ElapsedSeconds: 2, RecordsPerSecond: 300}, {ElapsedSeconds: 3, RecordsPerSecond: 1000}}
	file := newFileView(0, results, nil)
	file.Label = "A kfake"
	names, nameIndex := runNames([]*fileView{file})

	plain := timeSeriesChart(file, names, nameIndex, nil)
	if len(plain.Legend) != 1 || plain.SVG == "" {
		t.Fatalf("no events: legend %v, %d bytes of SVG", plain.Legend, len(plain.SVG))
	}
	events := map[string][]FaultEvent{run.Name: {{ElapsedSeconds: 1.5, Kind: "drop-response"}, {ElapsedSeconds: 2.5, Kind: "kill"}}}
	marked := timeSeriesChart(file, names, nameIndex, events)
	colour := "STROKE:" + strings.ToUpper(cssColor(seriesColor(nameIndex[run.Name])))
	plainPaths := strings.Count(strings.ToUpper(string(plain.SVG)), colour)
	if got := strings.Count(strings.ToUpper(string(marked.SVG)), colour) - plainPaths; got != 2 {
		t.Errorf("%d more paths in the run's colour with two events, want one tick each", got)
	}
	if last := marked.Legend[len(marked.Legend)-1]; !strings.Contains(last.Name, "fault fired") {
		t.Errorf("legend lacks the fault ticks: %v", marked.Legend)
	}
	if !strings.Contains(marked.Note, "no per-second samples") {
		t.Errorf("runs without samples are not named: %q", marked.Note)
	}
	// The rug's lane sits below zero, and no negative tick is labelled.
	if strings.Contains(string(marked.SVG), ">-") {
		t.Error("a negative y tick is labelled")
	}
}

// TestSweepSeries takes the measured transactional runs, by interval, one
// series per fault plan.
func TestSweepSeries(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	template := results.Runs[4]
	var runs []*Run
	for _, interval := range []string{"100", "1", "10", "0"} {
		run := *template
		run.ClientSettings = map[string]string{"commit.interval.ms": interval}
		run.Throughput.RecordsPerSecond = 1000 + float64(len(interval))
		runs = append(runs, &run)
	}
	unsupported := *template
	unsupported.Status = StatusUnsupported
	faulted := *template
	faulted.FaultPlan = "ack-loss"
	explicitNone := *runs[0]
	explicitNone.FaultPlan, explicitNone.ClientSettings = "none", map[string]string{"commit.interval.ms": "1000"}
	baseline := results.Runs[2]
	results.Runs = append(runs, &unsupported, results.Runs[0], &faulted, &explicitNone, baseline)
	series := sweepSeriesOf(results)
	if len(series) != 2 || series[0].plan != "" || series[1].plan != "ack-loss" || len(series[1].points) != 1 {
		t.Fatalf("sweep series %+v, want no-fault and ack-loss series", series)
	}
	var intervals []float64
	for _, point := range series[0].points {
		intervals = append(intervals, point.intervalMillis)
	}
	if fmt.Sprint(intervals) != "[1 10 100 1000]" {
		t.Fatalf("no-fault sweep intervals %v, want [1 10 100 1000]", intervals)
	}
	file := newFileView(0, results, nil)
	file.Label = "A"
	throughput, latency, ok := sweepCharts([]*fileView{file})
	if !ok || throughput.SVG == "" || latency.SVG == "" {
		t.Fatalf("sweep charts not drawn: %+v %+v", throughput.Note, latency.Note)
	}
	if len(throughput.Legend) != 3 || throughput.Legend[1].Name != "A ack-loss" || throughput.Legend[0].Color == throughput.Legend[1].Color {
		t.Errorf("sweep legend %+v, want the two series in two colours and the baseline", throughput.Legend)
	}
	// A second file without transactional runs gets no baseline line.
	other := newFileView(1, loadFixture(t, embeddedFixture), nil)
	other.Results.Runs = other.Results.Runs[:3]
	throughput, _, _ = sweepCharts([]*fileView{file, other})
	if len(throughput.Legend) != 3 {
		t.Errorf("sweep legend with a file without a sweep: %+v", throughput.Legend)
	}
	if note := sweepNote([]*fileView{file}); note != "" {
		t.Errorf("a three-point sweep got the one-point note %q", note)
	}
}

// TestChartFailureBecomesNote: gonum/plot panics on a log axis over zero;
// the page shows a note instead of failing.
func TestChartFailureBecomesNote(t *testing.T) {
	p := newPlot("broken", "x", "y")
	var legend []legendEntry
	if err := addLine(p, &legend, "zero", plotter.XYs{{X: 1, Y: 0}, {X: 2, Y: 1}}, seriesColor(0), false, false); err != nil {
		t.Fatal(err)
	}
	p.Y.Scale = logScaleWithoutGuard{}
	view := chart("broken", p, panelWidth, panelHeight, legend, "")
	if view.SVG != "" || !strings.Contains(view.Note, `draw chart "broken"`) {
		t.Fatalf("broken chart: svg %d bytes, note %q", len(view.SVG), view.Note)
	}
}

// logScaleWithoutGuard panics like plot.LogScale on non-positive values.
type logScaleWithoutGuard struct{}

func (logScaleWithoutGuard) Normalize(low, high, x float64) float64 {
	if low <= 0 || x <= 0 {
		panic("Values must be greater than 0 for a log scale.")
	}
	return (math.Log(x) - math.Log(low)) / (math.Log(high) - math.Log(low))
}

func TestLogRangeAndLabels(t *testing.T) {
	cases := []struct{ low, high, wantLow, wantHigh float64 }{
		{1.6, 42, 1, 50}, {0.11, 706, 0.1, 1000}, {3, 3, 2, 20}, {0, 5, 1, 10}, {250, 260, 200, 2000},
	}
	for _, test := range cases {
		if low, high := logRange(test.low, test.high); math.Abs(low-test.wantLow) > 1e-9 || math.Abs(high-test.wantHigh) > 1e-9 {
			t.Errorf("logRange(%v, %v) = %v, %v, want %v, %v", test.low, test.high, low, high, test.wantLow, test.wantHigh)
		}
	}
	for value, want := range map[float64]string{250000: "250k", 1.5e6: "1.5M", 0.25: "0.25", 20: "20", 1000: "1k"} {
		if got := humanNumber(value); got != want {
			t.Errorf("humanNumber(%v) = %q, want %q", value, got, want)
		}
	}
}

// TestWriteDashboardLinksProfiles: profiles named by the run id next to the
// page are linked relative to it; other runs' files and the results JSON
// are not.
func TestWriteDashboardLinksProfiles(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	dir := t.TempDir()
	id := results.RunID
	for _, name := range []string{"cpu-" + id + ".pprof", "loadgen-x-" + id + ".json", "cpu-0123456789abcdef.pprof",
		filepath.Join("profiles", id, "mem.pprof"), filepath.Join("profiles", id, "trace.out")} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("profile"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "dashboard.html")
	if err := WriteDashboard(path, results); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	links := regexp.MustCompile(`class="profile" href="([^"]+)"`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, link := range links {
		got = append(got, link[1])
	}
	want := []string{"cpu-" + id + ".pprof", "profiles/" + id + "/mem.pprof", "profiles/" + id + "/trace.out"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("profile links %v, want %v", got, want)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file left behind: %v", err)
	}
	if !strings.Contains(page, "Generated "+time.Now().UTC().Format("2006-01-02")) {
		t.Error("page not stamped with the generation time")
	}
}

// TestWriteDashboardNextTo: loadgen's page sits beside its JSON file.
func TestWriteDashboardNextTo(t *testing.T) {
	results := loadFixture(t, embeddedFixture)
	jsonPath, err := Write(t.TempDir(), results)
	if err != nil {
		t.Fatal(err)
	}
	page, err := WriteDashboardNextTo(jsonPath, results)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSuffix(jsonPath, ".json") + ".html"; page != want {
		t.Errorf("page at %s, want %s", page, want)
	}
	data, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(data), results.RunID) {
		t.Errorf("page %s unreadable or without the run id: %v", page, err)
	}
}

func TestRenderDashboardRejectsBadInput(t *testing.T) {
	results := loadFixture(t, embeddedFixture)
	cases := map[string][]*Results{"none": nil, "nil results": {results, nil}, "nil run": {{RunID: "x", Runs: []*Run{nil}}}}
	for name, input := range cases {
		if err := RenderDashboard(io.Discard, DashboardOptions{}, input...); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
	if err := WriteDashboard("", results); err == nil {
		t.Error("WriteDashboard with no path succeeded")
	}
	// A file with no runs at all still renders, saying so.
	empty := &Results{SchemaVersion: SchemaVersion, Tool: "exactly loadgen", RunID: "0000000000000000"}
	page := renderFixtures(t, empty)
	if !strings.Contains(page, "no runs") || !strings.Contains(page, "No transactional run") {
		t.Errorf("empty results page lacks its notes")
	}
}

// TestDashboardFaultMatrix: under a fault plan, counts the expectation
// allows (at-least-once duplicates under lost acks) are not violations,
// counts it forbids are; fired faults are marked on the time series and
// listed, thinned when there are many; verdicts get their own table.
func TestDashboardFaultMatrix(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	samples := []Sample{{ElapsedSeconds: 1, RecordsPerSecond: 900}, {ElapsedSeconds: 2, RecordsPerSecond: 300}, {ElapsedSeconds: 3, RecordsPerSecond: 1000}}
	atLeastOnce, idempotent := results.Runs[2], results.Runs[3]
	for _, run := range []*Run{atLeastOnce, idempotent} {
		run.Name += ":ack-loss"
		run.FaultPlan, run.TimeSeries = "ack-loss", samples
		run.Checks[0].Counts.Duplicated = 5
		run.Checks[0].Violations = run.Checks[0].Counts.Violations(verify.ReadCommitted)
		for index := range 100 {
			run.FaultEvents = append(run.FaultEvents, FaultEvent{ElapsedSeconds: 1 + float64(index)*0.02, Kind: "drop-response",
				Broker: "127.0.0.1:9092", Detail: "Produce"})
		}
		run.FaultsFired = int64(len(run.FaultEvents))
	}
	atLeastOnce.Expectation = &Expectation{Expected: "lost = 0, dup any, reord any; dup > 0 shows the fault acted",
		Observed: "lost 0, dup 5, reord 0", Verdict: StatusPass}
	idempotent.Status = StatusFail
	idempotent.Expectation = &Expectation{Expected: "lost = 0, dup = 0, reord = 0; faults must fire",
		Observed: "lost 0, dup 5, reord 0", Verdict: StatusFail, Why: "dup 5 > 0",
		Offenders: []string{"duplicated: producer 0 seq 7 at partition 1 offsets 3, 4"}}
	page := renderFixtures(t, results)

	allowed := rowFor(t, page, "checks", `data-run="at-least-once:ack-loss"`)
	if strings.Contains(allowed, "violation") || !strings.Contains(allowed, "<td class=\"\">5</td>") || !strings.Contains(allowed, "ack-loss") {
		t.Errorf("allowed duplicates highlighted: %s", allowed)
	}
	forbidden := rowFor(t, page, "checks", `data-run="idempotent:ack-loss"`)
	if !strings.HasPrefix(forbidden, ` class="violation"`) || !strings.Contains(forbidden, `<td class="violation">5</td>`) {
		t.Errorf("forbidden duplicates not highlighted: %s", forbidden)
	}
	verdict := rowFor(t, page, "expectations", `data-run="idempotent:ack-loss"`)
	for _, want := range []string{`class="violation"`, "dup = 0", "status-fail", "duplicated: producer 0 seq 7"} {
		if !strings.Contains(verdict, want) {
			t.Errorf("expectation row lacks %q: %s", want, verdict)
		}
	}
	series := figures(t, page)["timeseries-0"]
	// 100 events 20 ms apart: one tick per tenth of a second per run, in
	// the run's colour: 20 more paths than the line alone.
	for _, run := range []*Run{atLeastOnce, idempotent} {
		colour := "STROKE:" + strings.ToUpper(cssColor(seriesColor(indexOf(results.Runs, run))))
		if got := strings.Count(strings.ToUpper(series), colour); got != 1+20 {
			t.Errorf("%s: %d paths in its colour, want its line and 20 fault ticks", run.Name, got)
		}
	}
	if !strings.Contains(series, "160 fault events not marked") {
		t.Errorf("thinning not noted: %.400s", series[strings.LastIndex(series, "</svg>"):])
	}
	list := page[strings.Index(page, `<table class="fault-events">`):]
	list = list[:strings.Index(list, "</table>")]
	if rows := strings.Count(list, "<tr>"); rows != 1+2*(maxMarkedEvents+1) {
		t.Errorf("fault event list has %d rows, want a header and %d events plus a 'more' row per run", rows, maxMarkedEvents)
	}
	if !strings.Contains(list, "40 more events") {
		t.Error("fault event list does not say how many events it left out")
	}
	summary := rowFor(t, page, "faults", `data-run="idempotent:ack-loss"`)
	for _, want := range []string{"drop-response", "<td>100</td>", "<td>1.000 s</td>", "<td>2.980 s</td>"} {
		if !strings.Contains(summary, want) {
			t.Errorf("fault summary row lacks %q: %s", want, summary)
		}
	}
}

func indexOf(runs []*Run, run *Run) int {
	for index, candidate := range runs {
		if candidate == run {
			return index
		}
	}
	return -1
}
