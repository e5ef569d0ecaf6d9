package broker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/metrics"
)

// scrapeMetrics serves m over HTTP for the test and returns one scrape
// function.
func scrapeMetrics(t *testing.T, b *Broker, m *metrics.Broker) func() []byte {
	t.Helper()
	server, err := metrics.Serve("127.0.0.1:0", m, b.Ready)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return func() []byte { return httpGet(t, server.URL()) }
}

// bucketLines counts family's _bucket lines of api in a scrape: finite
// bounds, and the +Inf bucket apart.
func bucketLines(scrape []byte, family, api string) (finite, inf int) {
	prefix := fmt.Sprintf("%s_bucket{api=%q,le=", family, api)
	for _, line := range strings.Split(string(scrape), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if strings.HasPrefix(rest, `"+Inf"`) {
				inf++
			} else {
				finite++
			}
		}
	}
	return finite, inf
}

// TestMetricsLineBudget: /metrics stays short by default. Idle (no
// request yet) it is the fixed families: HELP and TYPE lines, ~45 Go
// runtime and process lines, the fsync and EndTxn histograms (23 lines
// each): 230 lines, budget 300. A request-time series without buckets is
// 3 lines (+Inf, _sum, _count), with buckets 23; an API has 4 such series
// (Produce 5, with its durability wait) and its request count, so a hot
// API (buckets on its total time) costs 33 lines, any other 13. The
// transactional load below uses 4 hot APIs (Produce, InitProducerID,
// AddPartitionsToTxn, EndTxn) and 4 others (ApiVersions, Metadata,
// CreateTopics, FindCoordinator); with the new families' HELP and TYPE
// and 4 lines per partition it makes about 460 lines, budget 600. Before
// metrics.request.histograms (every series with buckets, a durability
// wait for every API: 116 lines per API) the same load made about 1,200.
func TestMetricsLineBudget(t *testing.T) {
	b, m := startMetricsBroker(t, txnTestProperties("2"))
	scrape := scrapeMetrics(t, b, m)
	lines := func(s []byte) int { return bytes.Count(s, []byte("\n")) }
	idle := scrape()
	if lines(idle) >= 300 {
		t.Errorf("idle /metrics is %d lines, want under 300:\n%s", lines(idle), idle)
	}
	txnLoad{topic: "budget", partitions: 2, commits: 2, aborts: 1, recordsPerPartition: 2, transactionalID: "budget"}.run(t, b.Addr())
	loaded := scrape()
	t.Logf("/metrics: %d lines idle, %d after the load", lines(idle), lines(loaded))
	if lines(loaded) >= 600 {
		t.Errorf("/metrics after a transactional load is %d lines, want under 600:\n%s", lines(loaded), loaded)
	}
	for _, tc := range []struct {
		family, api string
		finite      int
	}{
		{"exactly_request_total_seconds", "Produce", 20},
		{"exactly_request_total_seconds", "EndTxn", 20},
		{"exactly_request_total_seconds", "ApiVersions", 0},
		{"exactly_request_total_seconds", "Metadata", 0},
		{"exactly_request_queue_seconds", "Produce", 0},
		{"exactly_request_durability_wait_seconds", "Produce", 0},
	} {
		if finite, inf := bucketLines(loaded, tc.family, tc.api); finite != tc.finite || inf != 1 {
			t.Errorf("%s{api=%q}: %d finite and %d +Inf buckets, want %d and 1", tc.family, tc.api, finite, inf, tc.finite)
		}
	}
	if _, inf := bucketLines(loaded, "exactly_request_durability_wait_seconds", "EndTxn"); inf != 0 {
		t.Errorf("EndTxn has a durability wait series; only Produce waits")
	}
}

// TestMetricsRequestHistogramsAll: metrics.request.histograms=all gives
// every API's time and stages their buckets back.
func TestMetricsRequestHistogramsAll(t *testing.T) {
	properties := groupTestProperties()
	properties["metrics.request.histograms"] = "all"
	b, m := startMetricsBroker(t, properties)
	scrape := scrapeMetrics(t, b, m)
	client := newTestClient(t, b)
	if err := client.Ping(testContext(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	loaded := scrape()
	for _, family := range []string{"exactly_request_total_seconds", "exactly_request_queue_seconds", "exactly_request_send_seconds"} {
		if finite, inf := bucketLines(loaded, family, "ApiVersions"); finite != 20 || inf != 1 {
			t.Errorf("%s{api=\"ApiVersions\"}: %d finite and %d +Inf buckets, want 20 and 1", family, finite, inf)
		}
	}
}
