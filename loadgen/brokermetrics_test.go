package loadgen

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/exactly-eos/exactly/loadgen/livemetrics"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// countingBroker serves a broker's /metrics whose fsync counter grows by
// 10 and whose Produce requests grow by 4 (1 ms each, all in the queue)
// on every scrape.
func countingBroker(t *testing.T) *httptest.Server {
	t.Helper()
	var scrapes atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := scrapes.Add(1)
		fmt.Fprintf(w, "# HELP exactly_fsync_total Fsyncs.\n# TYPE exactly_fsync_total counter\nexactly_fsync_total %d\n", 10*n)
		fmt.Fprintf(w, "# HELP exactly_request_queue_seconds Queue time.\n# TYPE exactly_request_queue_seconds histogram\n"+
			"exactly_request_queue_seconds_bucket{api=\"Produce\",le=\"0.001\"} %d\n"+
			"exactly_request_queue_seconds_bucket{api=\"Produce\",le=\"+Inf\"} %d\n"+
			"exactly_request_queue_seconds_sum{api=\"Produce\"} %g\n"+
			"exactly_request_queue_seconds_count{api=\"Produce\"} %d\n", 4*n, 4*n, 0.004*float64(n), 4*n)
	}))
	t.Cleanup(server.Close)
	return server
}

// gathered returns the value of the series of name whose labels include
// want, from registry (counter, gauge or histogram count), and whether
// it exists.
func gathered(t *testing.T, live *livemetrics.Loadgen, name string, want map[string]string) (float64, bool) {
	t.Helper()
	families, err := live.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
	metrics:
		for _, metric := range family.GetMetric() {
			for _, pair := range metric.GetLabel() {
				if value, asked := want[pair.GetName()]; asked && value != pair.GetValue() {
					continue metrics
				}
			}
			switch family.GetType() {
			case dto.MetricType_COUNTER:
				return metric.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return metric.GetGauge().GetValue(), true
			case dto.MetricType_HISTOGRAM:
				return float64(metric.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// TestRunScrapesBrokerMetricsAndFeedsLiveMetrics runs two modes against
// kfake with the loadgen's metrics on and a broker /metrics that moves
// between scrapes: every cell's results carry the broker's deltas, and
// the loadgen's counters agree with the ledgers.
func TestRunScrapesBrokerMetricsAndFeedsLiveMetrics(t *testing.T) {
	t.Parallel()
	broker := countingBroker(t)
	workload := smokeWorkload(t)
	workload.Modes = []string{BaselineMode, "transactional"}
	live := livemetrics.New()
	results := runSuiteWith(t, Options{Workload: workload, Target: newKfakeTarget(t), Metrics: live, BrokerMetrics: broker.URL + "/metrics"})
	if len(results.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(results.Runs))
	}
	for _, run := range results.Runs {
		if run.Status != report.StatusPass {
			t.Errorf("%s: %s (%s)", run.Name, run.Status, run.Reason)
		}
		got := run.BrokerMetrics
		if got == nil {
			t.Fatalf("%s: no broker_metrics", run.Name)
		}
		if len(got.Warnings) != 0 || got.Counters["exactly_fsync_total"] != 10 || got.Seconds <= 0 {
			t.Errorf("%s: broker metrics %+v, want 10 fsyncs between two scrapes, no warning", run.Name, got)
		}
		if len(got.APIs) != 1 || got.APIs[0].API != "Produce" || got.APIs[0].Requests != 4 || got.APIs[0].QueueMs < 0.999 || got.APIs[0].QueueMs > 1.001 {
			t.Errorf("%s: API breakdown %+v, want 4 Produce requests of 1 ms queue", run.Name, got.APIs)
		}
		mode := map[string]string{"mode": run.Mode}
		for name, want := range map[string]uint64{
			"exactly_loadgen_records_sent_total":  run.Producers.Sent,
			"exactly_loadgen_records_acked_total": run.Producers.Acknowledged,
			"exactly_loadgen_ack_latency_seconds": run.Producers.Acknowledged,
		} {
			if value, ok := gathered(t, live, name, mode); !ok || value != float64(want) || want == 0 {
				t.Errorf("%s: %s = %v (present %v), want %d from the ledger", run.Name, name, value, ok, want)
			}
		}
		for _, verdict := range []string{livemetrics.VerdictLost, livemetrics.VerdictDuplicated, livemetrics.VerdictAbortedRead} {
			if value, ok := gathered(t, live, "exactly_loadgen_checker_records", map[string]string{"mode": run.Mode, "verdict": verdict}); !ok || value != 0 {
				t.Errorf("%s: checker %s = %v (present %v), want a 0 series", run.Name, verdict, value, ok)
			}
		}
	}
	promtoolCheck(t, live)
}

// promtoolCheck lints live's /metrics after a real run with `promtool
// check metrics`; without promtool it skips (fails with EXACTLY_CI=1).
func promtoolCheck(t *testing.T, live *livemetrics.Loadgen) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("EXACTLY_CI") == "1" {
			t.Fatal("promtool not found (install Debian's prometheus package)")
		}
		t.Log("promtool not found: /metrics not linted")
		return
	}
	server, err := livemetrics.Serve("127.0.0.1:0", live)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	response, err := http.Get(server.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(response.Body)
	response.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	command := exec.Command(promtool, "check", "metrics")
	command.Stdin = bytes.NewReader(body)
	if output, err := command.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, output)
	}
}

// TestRunWithUnreachableBrokerMetricsWarns: a /metrics that cannot be
// scraped is a warning in broker_metrics, and the run passes as usual.
func TestRunWithUnreachableBrokerMetricsWarns(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL + "/metrics"
	closed.Close()
	workload := smokeWorkload(t)
	workload.Modes = []string{BaselineMode}
	results := runSuiteWith(t, Options{Workload: workload, Target: newKfakeTarget(t), BrokerMetrics: url})
	run := results.Runs[0]
	if run.Status != report.StatusPass || !results.Passed {
		t.Errorf("run %s (%s), passed %v: a failed scrape must not fail it", run.Status, run.Reason, results.Passed)
	}
	if run.BrokerMetrics == nil || len(run.BrokerMetrics.Warnings) == 0 || !strings.Contains(run.BrokerMetrics.Warnings[0], url) ||
		run.BrokerMetrics.Counters != nil {
		t.Errorf("broker metrics = %+v, want a warning naming %s and no figures", run.BrokerMetrics, url)
	}
}

// urlTarget is a target offering a metrics address.
type urlTarget struct {
	Target
	url string
}

func (t urlTarget) MetricsURL() string { return t.url }

func TestBrokerMetricsURL(t *testing.T) {
	t.Parallel()
	plain := &bootstrapTarget{addresses: []string{"127.0.0.1:1"}}
	offering := urlTarget{Target: plain, url: "http://127.0.0.1:2/metrics"}
	for _, test := range []struct {
		explicit string
		target   Target
		want     string
	}{
		{"", plain, ""},
		{"", offering, "http://127.0.0.1:2/metrics"},
		{"http://127.0.0.1:3/metrics", offering, "http://127.0.0.1:3/metrics"},
		{"http://127.0.0.1:3/metrics", plain, "http://127.0.0.1:3/metrics"},
	} {
		if got := BrokerMetricsURL(test.explicit, test.target); got != test.want {
			t.Errorf("BrokerMetricsURL(%q, %T) = %q, want %q", test.explicit, test.target, got, test.want)
		}
	}
}
