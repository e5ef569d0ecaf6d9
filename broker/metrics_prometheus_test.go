package broker

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/metrics"
)

// TestPrometheusScrapesBroker is the end-to-end check against a real
// Prometheus server (ci/prometheus.sh starts it, scraping every second
// the targets in the file EXACTLY_PROMETHEUS_TARGETS names): the test
// starts a broker with log.fsync=always and its metrics on loopback,
// points Prometheus at it, runs a short transactional load and asks
// Prometheus's HTTP API for the transactions committed, the Produce
// request p99 and the fsync counter.
func TestPrometheusScrapesBroker(t *testing.T) {
	promURL, targets := prometheusServer(t)
	properties := txnTestProperties("2")
	properties["log.fsync"] = "always"
	b, m := startMetricsBroker(t, properties)
	server, err := metrics.Serve("127.0.0.1:0", m, b.Ready)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	instance := server.Addr()
	writeTargets(t, targets, instance)
	t.Cleanup(func() { os.WriteFile(targets, []byte("[]\n"), 0o644) })

	selector := fmt.Sprintf(`{instance=%q}`, instance)
	waitForQuery(t, promURL, "up"+selector, 30*time.Second, func(v float64) bool { return v == 1 })

	const commits = 5
	txnLoad{topic: "prometheus", partitions: 2, commits: commits, recordsPerPartition: 3, transactionalID: "prometheus"}.run(t, b.Addr())

	// Prometheus sees the counters at its next scrape (1 s).
	waitForQuery(t, promURL, "exactly_transactions_committed_total"+selector, 30*time.Second,
		func(v float64) bool { return v == commits })
	p99 := fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (exactly_request_total_seconds_bucket{instance=%q,api="Produce"}))`, instance)
	waitForQuery(t, promURL, p99, 30*time.Second, func(v float64) bool { return !math.IsNaN(v) && v > 0 })
	// log.fsync=always: at least 3 fsyncs per committed transaction (the
	// acks=all data on both partitions, the PrepareCommit record), each
	// timed once in the histogram.
	waitForQuery(t, promURL, "exactly_fsync_total"+selector, 30*time.Second, func(v float64) bool { return v >= 3*commits })
	consistent := fmt.Sprintf(`exactly_fsync_total{instance=%q} - exactly_fsync_seconds_count{instance=%q}`, instance, instance)
	waitForQuery(t, promURL, consistent, 30*time.Second, func(v float64) bool { return v == 0 })
}

// prometheusServer returns the Prometheus server ci/prometheus.sh started
// (its URL and its file_sd targets file), skipping the test without one
// outside CI and failing it in CI.
func prometheusServer(t *testing.T) (promURL, targets string) {
	t.Helper()
	promURL, targets = os.Getenv("EXACTLY_PROMETHEUS_URL"), os.Getenv("EXACTLY_PROMETHEUS_TARGETS")
	if promURL == "" || targets == "" {
		if os.Getenv("EXACTLY_CI") == "1" {
			t.Fatal("EXACTLY_PROMETHEUS_URL / EXACTLY_PROMETHEUS_TARGETS unset (ci/test.sh sources ci/prometheus.sh)")
		}
		t.Skip("no Prometheus server: run `source ci/prometheus.sh; exactly_prometheus_start` first")
	}
	return promURL, targets
}

// writeTargets points Prometheus's file service discovery at instance.
func writeTargets(t *testing.T, path, instance string) {
	t.Helper()
	data, err := json.Marshal([]map[string]any{{"targets": []string{instance}, "labels": map[string]string{"test": t.Name()}}})
	if err != nil {
		t.Fatal(err)
	}
	// Written whole and renamed, so Prometheus never reads half a file.
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// waitForQuery polls Prometheus's instant query API until the query's
// first sample satisfies ok, failing the test at the deadline with the
// last answer.
func waitForQuery(t *testing.T, promURL, query string, timeout time.Duration, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		value, found, err := queryPrometheus(t, promURL, query)
		switch {
		case err != nil:
			last = err.Error()
		case !found:
			last = "empty result"
		case ok(value):
			t.Logf("%s = %v", query, value)
			return
		default:
			last = strconv.FormatFloat(value, 'g', -1, 64)
		}
		time.Sleep(200 * time.Millisecond) // poll interval; the deadline bounds the loop
	}
	t.Fatalf("Prometheus query %s: after %v, last answer: %s", query, timeout, last)
}

// queryPrometheus runs an instant query and returns its first sample.
func queryPrometheus(t *testing.T, promURL, query string) (float64, bool, error) {
	body := httpGet(t, promURL+"/api/v1/query?query="+url.QueryEscape(query))
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return 0, false, fmt.Errorf("decode %s: %w", body, err)
	}
	if answer.Status != "success" {
		return 0, false, fmt.Errorf("query failed: %s", answer.Error)
	}
	if len(answer.Data.Result) == 0 {
		return 0, false, nil
	}
	text, _ := answer.Data.Result[0].Value[1].(string)
	value, err := strconv.ParseFloat(text, 64)
	return value, err == nil, err
}

// TestPrometheusUnderReplicatedPartitions: through Prometheus (as an
// on-call person's alert would read it), the leader of an RF-3 partition
// reports exactly_under_replicated_partitions 0, then 1 while a follower
// is stopped, then 0 again once it is back and has rejoined the ISR.
func TestPrometheusUnderReplicatedPartitions(t *testing.T) {
	promURL, targets := prometheusServer(t)
	m := metrics.New()
	c := startClusterWith(t, 3, nil, func(c *testCluster) { c.metrics = map[int32]*metrics.Broker{1: m} })
	c.createTopic("alerted", 1) // partition 0: led by broker 1, followed by 2 and 3
	leader := c.broker(1)
	server, err := metrics.Serve("127.0.0.1:0", m, leader.Ready)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	instance := server.Addr()
	writeTargets(t, targets, instance)
	t.Cleanup(func() { os.WriteFile(targets, []byte("[]\n"), 0o644) })
	query := fmt.Sprintf(`exactly_under_replicated_partitions{instance=%q}`, instance)
	waitForQuery(t, promURL, query, 30*time.Second, func(v float64) bool { return v == 0 })
	c.kill(2)
	waitForQuery(t, promURL, query, 30*time.Second, func(v float64) bool { return v == 1 })
	c.restart(2)
	waitForQuery(t, promURL, query, 60*time.Second, func(v float64) bool { return v == 0 })
	waitForQuery(t, promURL, fmt.Sprintf(`exactly_isr_expands_total{instance=%q}`, instance), 30*time.Second, func(v float64) bool { return v >= 1 })
}
