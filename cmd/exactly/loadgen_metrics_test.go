package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// TestLoadgenMetricsFlags runs one cell with --metrics-listen and
// --broker-metrics pointing at a /metrics whose counters move between
// scrapes: the loadgen says where its metrics are, the results carry the
// cell's broker_metrics and the dashboard shows the broker-side table.
func TestLoadgenMetricsFlags(t *testing.T) {
	t.Parallel()
	var scrapes atomic.Int64
	broker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := scrapes.Add(1)
		fmt.Fprintf(w, "# HELP exactly_fsync_total Fsyncs.\n# TYPE exactly_fsync_total counter\nexactly_fsync_total %d\n", 5*n)
		fmt.Fprintf(w, "# HELP exactly_requests_total Requests.\n# TYPE exactly_requests_total counter\nexactly_requests_total{api=\"Produce\"} %d\n", 7*n)
	}))
	defer broker.Close()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"loadgen", "--mode", "at-least-once", "--faults", "none", "--duration", "1s", "--rate", "500", "--drain", "10s",
		"--out", out, "--quiet", "--metrics-listen", "127.0.0.1:0", "--broker-metrics", broker.URL + "/metrics"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "loadgen metrics: http://127.0.0.1:") {
		t.Errorf("stderr does not say where the loadgen's metrics are:\n%s", stderr.String())
	}
	files, err := filepath.Glob(filepath.Join(out, "loadgen-*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("results files %v, %v", files, err)
	}
	results, err := report.Read(files[0])
	if err != nil {
		t.Fatal(err)
	}
	got := results.Runs[0].BrokerMetrics
	if got == nil || got.Counters["exactly_fsync_total"] != 5 || len(got.APIs) != 1 || got.APIs[0].Requests != 7 {
		t.Fatalf("broker_metrics = %+v, want 5 fsyncs and 7 Produce requests between the two scrapes", got)
	}
	page, err := os.ReadFile(strings.TrimSuffix(files[0], ".json") + ".html")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`<section id="broker-side">`)) {
		t.Error("the dashboard has no broker-side section")
	}
}

// TestLoadgenMetricsListenRefusesABadAddress: an address that cannot be
// listened on is an error before any load.
func TestLoadgenMetricsListenRefusesABadAddress(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"loadgen", "--mode", "at-least-once", "--faults", "none", "--metrics-listen", "256.0.0.1:1", "--out", t.TempDir()}, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "--metrics-listen") {
		t.Errorf("exit %d, stderr:\n%s\nwant a --metrics-listen error", code, stderr.String())
	}
}
