package report

import (
	"regexp"
	"strings"
	"testing"
)

func float(x float64) *float64 { return &x }

// brokerResults is a results file of two runs with broker metrics (the
// transactional one with EndTxn and markers) and one whose scrape failed.
func brokerResults() *Results {
	results := &Results{SchemaVersion: SchemaVersion, Tool: "exactly loadgen", RunID: "00000000000000bb",
		Target: Target{Kind: "embedded"}, Passed: true}
	results.Runs = []*Run{
		{Name: "at-least-once", Mode: "at-least-once", Status: StatusPass, Latency: map[string]*Histogram{},
			Throughput: Throughput{RecordsPerSecond: 50000},
			BrokerMetrics: &BrokerMetrics{URL: "http://127.0.0.1:9644/metrics", Seconds: 10, FsyncsPerSecond: float(0),
				APIs: []APITime{{API: "Produce", Requests: 2000, QueueMs: 0.1, LocalMs: 0.3, DurabilityMs: 0, SendMs: 0.1, TotalMs: 0.5}}}},
		{Name: "transactional@100ms", Mode: "transactional", Status: StatusPass, Latency: map[string]*Histogram{},
			Throughput: Throughput{RecordsPerSecond: 40000},
			BrokerMetrics: &BrokerMetrics{URL: "http://127.0.0.1:9644/metrics", Seconds: 10, FsyncsPerSecond: float(12.5),
				MarkersWritten: float(600), MarkersPerCommit: float(3), TransactionsCommitted: float(190), TransactionsAborted: float(10), DuplicatesDropped: float(4),
				APIs: []APITime{{API: "Produce", Requests: 1000, QueueMs: 0.1, LocalMs: 0.4, DurabilityMs: 1.5, SendMs: 0, TotalMs: 2},
					{API: "EndTxn", Requests: 200, TotalMs: 3.25}, {API: "AddPartitionsToTxn", Requests: 200, TotalMs: 0.2}}}},
		{Name: "idempotent", Mode: "idempotent", Status: StatusPass, Latency: map[string]*Histogram{},
			BrokerMetrics: &BrokerMetrics{URL: "http://127.0.0.1:9644/metrics", Warnings: []string{"scrape http://127.0.0.1:9644/metrics: connection refused"}}},
		{Name: "exactly-once", Mode: "exactly-once", Status: StatusPass, Latency: map[string]*Histogram{}},
	}
	return results
}

// brokerSection returns the page's broker-side section and its rows by
// run name.
func brokerSection(t *testing.T, page string) (string, map[string]string) {
	t.Helper()
	start := strings.Index(page, `<section id="broker-side">`)
	if start < 0 {
		return "", nil
	}
	section := page[start:]
	section = section[:strings.Index(section, "</section>")]
	rows := map[string]string{}
	for _, match := range regexp.MustCompile(`(?s)<tr class="[^"]*" data-run="([^"]+)"[^>]*>(.*?)</tr>`).FindAllStringSubmatch(section, -1) {
		rows[match[1]] = match[2]
	}
	return section, rows
}

// TestDashboardShowsBrokerSide: the broker-side table has a row per run
// with broker metrics (and none for a run without), the Produce time
// split with its bar, EndTxn's time, markers per commit and fsyncs/s; a
// failed scrape shows its warning.
func TestDashboardShowsBrokerSide(t *testing.T) {
	page := renderFixtures(t, brokerResults())
	section, rows := brokerSection(t, page)
	if section == "" {
		t.Fatal("no broker-side section")
	}
	if len(rows) != 3 {
		t.Fatalf("rows %v, want at-least-once, transactional@100ms, idempotent", len(rows))
	}
	if _, shown := rows["exactly-once"]; shown {
		t.Error("a run without broker metrics has a row")
	}
	txn := rows["transactional@100ms"]
	for _, want := range []string{"<td>1000</td>", "<td>2.00</td>", "0.10 / 0.40 / 1.50 / 0.00", "<td>3.25</td>", "<td>0.20</td>",
		"<td>600</td>", "<td>3.00</td>", "<td>12.5</td>", "<td>4</td>", "<td>190 / 10</td>", "<td>40000</td>",
		`class="part-durability" style="width: 75.0%"`} {
		if !strings.Contains(txn, want) {
			t.Errorf("transactional row lacks %q:\n%s", want, txn)
		}
	}
	if alo := rows["at-least-once"]; !strings.Contains(alo, "<td>0.0</td>") || !strings.Contains(alo, `class="part-local" style="width: 60.0%"`) {
		t.Errorf("at-least-once row lacks 0 fsyncs/s or its local share of 60%%:\n%s", alo)
	}
	if failed := rows["idempotent"]; !strings.Contains(failed, "warning: scrape http://127.0.0.1:9644/metrics: connection refused") {
		t.Errorf("failed scrape's row lacks its warning:\n%s", failed)
	}
}

// TestDashboardWithoutBrokerMetricsHasNoBrokerSide: files without broker
// metrics (all older files) show no broker-side section.
func TestDashboardWithoutBrokerMetricsHasNoBrokerSide(t *testing.T) {
	results := brokerResults()
	for _, run := range results.Runs {
		run.BrokerMetrics = nil
	}
	if section, _ := brokerSection(t, renderFixtures(t, results)); section != "" {
		t.Errorf("broker-side section without broker metrics:\n%s", section)
	}
}

// TestWriteBrokerSide: the terminal's broker-side table has a line per run
// with broker metrics, the Produce split (--wide) and markers per commit,
// and the failed scrape's warning; nothing without broker metrics. The
// default table leaves the split out.
func TestWriteBrokerSide(t *testing.T) {
	var narrow strings.Builder
	if err := WriteBrokerSide(&narrow, brokerResults()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(narrow.String(), "0.10 / 0.40 / 1.50 / 0.00") || !strings.Contains(narrow.String(), "3.25") {
		t.Errorf("default table:\n%s", narrow.String())
	}
	var text strings.Builder
	if err := WriteBrokerSideWith(&text, brokerResults(), true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	var txn string
	for _, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "transactional@100ms") {
			txn = line
		}
	}
	for _, want := range []string{"0.10 / 0.40 / 1.50 / 0.00", "3.25", "3.00", "12.5"} {
		if !strings.Contains(txn, want) {
			t.Errorf("transactional line %q lacks %q", txn, want)
		}
	}
	if strings.Contains(text.String(), "exactly-once") {
		t.Errorf("a run without broker metrics is listed:\n%s", text.String())
	}
	if !strings.Contains(text.String(), "idempotent: warning: scrape http://127.0.0.1:9644/metrics: connection refused") {
		t.Errorf("no warning line:\n%s", text.String())
	}
	results := brokerResults()
	for _, run := range results.Runs {
		run.BrokerMetrics = nil
	}
	text.Reset()
	if err := WriteBrokerSide(&text, results); err != nil || text.Len() != 0 {
		t.Errorf("without broker metrics: %q, %v", text.String(), err)
	}
}
