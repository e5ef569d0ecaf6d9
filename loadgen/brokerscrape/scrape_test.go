package brokerscrape

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// fixtureServer serves testdata/before.txt on the first scrape and
// testdata/after.txt on every later one, as a broker's /metrics would.
func fixtureServer(t *testing.T) *httptest.Server {
	t.Helper()
	before, err := os.ReadFile("testdata/before.txt")
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile("testdata/after.txt")
	if err != nil {
		t.Fatal(err)
	}
	var scrapes atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if scrapes.Add(1) == 1 {
			w.Write(before)
			return
		}
		w.Write(after)
	}))
	t.Cleanup(server.Close)
	return server
}

// value is *x, NaN when absent (so that no comparison holds).
func value(x *float64) float64 {
	if x == nil {
		return math.NaN()
	}
	return *x
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

func TestCompareFixture(t *testing.T) {
	server := fixtureServer(t)
	scraper := New(server.URL+"/metrics", 5*time.Second)
	before, beforeErr := scraper.Scrape(context.Background())
	after, afterErr := scraper.Scrape(context.Background())
	if beforeErr != nil || afterErr != nil {
		t.Fatalf("scrapes: %v, %v", beforeErr, afterErr)
	}
	after.At = before.At.Add(10 * time.Second) // a cell of ten seconds
	got := Compare(scraper.URL, before, after, nil, nil)
	if len(got.Warnings) != 0 {
		t.Errorf("warnings: %v", got.Warnings)
	}
	if got.Seconds != 10 {
		t.Errorf("seconds = %v, want 10", got.Seconds)
	}
	counters := map[string]float64{
		`exactly_requests_total{api="Produce"}`:                                      200,
		`exactly_requests_total{api="EndTxn"}`:                                       20,
		`exactly_request_errors_total{api="EndTxn",error="CONCURRENT_TRANSACTIONS"}`: 2,
		`exactly_fsync_total`:                                                        20,
	}
	for key, want := range counters {
		if got.Counters[key] != want {
			t.Errorf("counter %s = %v, want %v", key, got.Counters[key], want)
		}
	}
	for _, unchanged := range []string{`exactly_requests_total{api="Metadata"}`, `exactly_request_errors_total{api="Produce",error="NOT_LEADER_OR_FOLLOWER"}`} {
		if _, kept := got.Counters[unchanged]; kept {
			t.Errorf("counter %s did not move but is kept", unchanged)
		}
	}
	if _, kept := got.Counters["go_goroutines"]; kept {
		t.Error("a gauge is kept among the counters")
	}
	total := got.Histograms[`exactly_request_total_seconds{api="Produce"}`]
	if total.Count != 200 || !near(total.Sum, 3.0) || !near(total.P50, 0.01) || !near(total.P99, 0.0982) {
		t.Errorf("Produce total histogram = %+v, want count 200 sum 3 p50 0.01 p99 0.0982", total)
	}
	if fsync := got.Histograms["exactly_fsync_seconds"]; fsync.Count != 20 || !near(fsync.P50, 0.004) {
		t.Errorf("fsync histogram = %+v, want count 20 p50 0.004", fsync)
	}
	if len(got.APIs) != 2 || got.APIs[0].API != "Produce" || got.APIs[1].API != "EndTxn" {
		t.Fatalf("APIs = %+v, want Produce then EndTxn", got.APIs)
	}
	produce := got.APIs[0]
	for _, figure := range []struct {
		name      string
		got, want float64
	}{
		{"requests", produce.Requests, 200}, {"queue", produce.QueueMs, 0.1}, {"local", produce.LocalMs, 0.5},
		{"durability", produce.DurabilityMs, 4}, {"send", produce.SendMs, 0.1}, {"total", produce.TotalMs, 15},
		{"total p99", produce.TotalP99Ms, 98.2},
		{"EndTxn total", got.APIs[1].TotalMs, 20}, {"EndTxn local (none observed)", got.APIs[1].LocalMs, 0},
	} {
		if !near(figure.got, figure.want) {
			t.Errorf("Produce %s = %v ms, want %v", figure.name, figure.got, figure.want)
		}
	}
	if got.FsyncsPerSecond == nil || !near(*got.FsyncsPerSecond, 2) {
		t.Errorf("fsyncs per second = %v, want 2", got.FsyncsPerSecond)
	}
	if got.MarkersPerCommit == nil || !near(*got.MarkersPerCommit, 3) {
		t.Errorf("markers per commit = %v, want 60 / (15 + 5) = 3", got.MarkersPerCommit)
	}
	if value(got.MarkersWritten) != 60 || value(got.TransactionsCommitted) != 15 || value(got.TransactionsAborted) != 5 || value(got.DuplicatesDropped) != 7 {
		t.Errorf("markers %v committed %v aborted %v duplicates %v, want 60 15 5 7",
			value(got.MarkersWritten), value(got.TransactionsCommitted), value(got.TransactionsAborted), value(got.DuplicatesDropped))
	}
	if got.Flavour != "exactly" {
		t.Errorf("flavour = %q, want exactly", got.Flavour)
	}
	if got.EndTxnMeanMs == nil || !near(*got.EndTxnMeanMs, 20) {
		t.Errorf("EndTxn mean = %v, want 20 ms", got.EndTxnMeanMs)
	}
}

func TestCompareFailedScrapeIsAWarning(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer server.Close()
	scraper := New(server.URL+"/metrics", 5*time.Second)
	before, err := scraper.Scrape(context.Background())
	if err == nil || before != nil {
		t.Fatalf("scrape of a 503 = %v, %v; want an error", before, err)
	}
	got := Compare(scraper.URL, before, nil, err, nil)
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "503") {
		t.Errorf("warnings = %v, want the 503", got.Warnings)
	}
	if got.Counters != nil || got.APIs != nil || got.FsyncsPerSecond != nil {
		t.Errorf("figures from a failed scrape: %+v", got)
	}
}

func TestCompareCounterReset(t *testing.T) {
	before, err := Parse(strings.NewReader("# TYPE exactly_fsync_total counter\nexactly_fsync_total 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := Parse(strings.NewReader("# TYPE exactly_fsync_total counter\nexactly_fsync_total 30\n"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := Compare("test", &Snapshot{At: start, Families: before}, &Snapshot{At: start.Add(time.Second), Families: after}, nil, nil)
	if got.Counters["exactly_fsync_total"] != 30 {
		t.Errorf("after a restart fsyncs = %v, want 30 (counted from zero)", got.Counters["exactly_fsync_total"])
	}
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "backwards") {
		t.Errorf("warnings = %v, want one about the reset", got.Warnings)
	}
}

// TestCompareBucketlessTotal: a broker whose Produce total time has no
// buckets (metrics.request.histograms=none) still gives the means; the
// p99 is 0 and a note says it is unknown.
func TestCompareBucketlessTotal(t *testing.T) {
	scrape := func(count, sum float64) map[string]*dto.MetricFamily {
		t.Helper()
		text := fmt.Sprintf("# TYPE exactly_requests_total counter\nexactly_requests_total{api=\"Produce\"} %[1]v\n"+
			"# TYPE exactly_request_total_seconds histogram\nexactly_request_total_seconds_bucket{api=\"Produce\",le=\"+Inf\"} %[1]v\n"+
			"exactly_request_total_seconds_sum{api=\"Produce\"} %[2]v\nexactly_request_total_seconds_count{api=\"Produce\"} %[1]v\n", count, sum)
		families, err := Parse(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return families
	}
	start := time.Now()
	got := Compare("test", &Snapshot{At: start, Families: scrape(10, 0.01)}, &Snapshot{At: start.Add(time.Second), Families: scrape(110, 0.21)}, nil, nil)
	if len(got.APIs) != 1 || got.APIs[0].Requests != 100 || !near(got.APIs[0].TotalMs, 2) || got.APIs[0].TotalP99Ms != 0 {
		t.Fatalf("APIs = %+v, want Produce: 100 requests, 2 ms mean, p99 0", got.APIs)
	}
	if !slices.ContainsFunc(got.Notes, func(note string) bool { return strings.Contains(note, "no p99 for Produce") }) {
		t.Errorf("notes = %v, want one saying Produce has no p99", got.Notes)
	}
}

func TestQuantile(t *testing.T) {
	h := histogram{bounds: []float64{1, 2, 4}, counts: []float64{10, 10, 20}, count: 30}
	// Ranks: 3 in the first bucket, from 0; 15 and 18 past the empty
	// bucket (1,2]; 29.7 in +Inf, which gives the highest finite bound.
	cases := []struct{ q, want float64 }{{0.1, 0.3}, {0.5, 2 + 2*5.0/10}, {0.6, 2 + 2*8.0/10}, {0.99, 4}}
	for _, c := range cases {
		if got := h.quantile(c.q); !near(got, c.want) {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := (histogram{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("quantile of nothing = %v, want NaN", got)
	}
}

func TestTidy(t *testing.T) {
	for _, test := range []struct{ in, want float64 }{
		{3.37 - 2.7, 0.67}, {0, 0}, {-0.30000000000000004, -0.3}, {1e-7 + 2e-7, 3e-7}, {123456789, 123456789},
	} {
		if got := tidy(test.in); got != test.want {
			t.Errorf("tidy(%v) = %v, want %v", test.in, got, test.want)
		}
	}
}
