package brokerscrape

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// compareFiles parses a before and an after scrape from testdata and
// compares them as ten seconds apart.
func compareFiles(t *testing.T, beforePath, afterPath string) *report.BrokerMetrics {
	t.Helper()
	read := func(path string) *Snapshot {
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		families, err := Parse(file)
		if err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		return &Snapshot{Families: families}
	}
	before, after := read(beforePath), read(afterPath)
	before.At = time.Unix(1000, 0)
	after.At = before.At.Add(10 * time.Second)
	return Compare("test", before, after, nil, nil)
}

// figure is one expected number of a comparison.
type figure struct {
	name      string
	got, want float64
}

func checkFigures(t *testing.T, figures []figure) {
	t.Helper()
	for _, f := range figures {
		if !near(f.got, f.want) {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
}

// apiByName indexes a comparison's per-API times.
func apiByName(metrics *report.BrokerMetrics) map[string]report.APITime {
	apis := map[string]report.APITime{}
	for _, api := range metrics.APIs {
		apis[api.API] = api
	}
	return apis
}

// TestCompareKafkaJMX reads the JMX exporter fixture: counts are the
// change between the scrapes, times the medians (quantile 0.50) after.
func TestCompareKafkaJMX(t *testing.T) {
	got := compareFiles(t, "testdata/kafka-jmx-before.txt", "testdata/kafka-jmx-after.txt")
	if got.Flavour != "kafka-jmx" || len(got.Warnings) != 0 {
		t.Fatalf("flavour %q, warnings %v; want kafka-jmx and none", got.Flavour, got.Warnings)
	}
	apis := apiByName(got)
	if len(got.APIs) != 4 || got.APIs[0].API != "Produce" {
		t.Fatalf("APIs = %+v, want Produce, EndTxn, AddPartitionsToTxn, Fetch", got.APIs)
	}
	produce, endTxn, add, fetch := apis["Produce"], apis["EndTxn"], apis["AddPartitionsToTxn"], apis["Fetch"]
	checkFigures(t, []figure{
		// Produce: versions 9 (+1900) and 8 (+0).
		{"Produce requests", produce.Requests, 1900}, {"Produce queue", produce.QueueMs, 1}, {"Produce local", produce.LocalMs, 2},
		{"Produce durability (RemoteTimeMs)", produce.DurabilityMs, 7}, {"Produce send (response queue 0 + send 1)", produce.SendMs, 1},
		{"Produce total", produce.TotalMs, 12}, {"Produce total p99", produce.TotalP99Ms, 48},
		{"EndTxn requests", endTxn.Requests, 40}, {"EndTxn total", endTxn.TotalMs, 9}, {"EndTxn local", endTxn.LocalMs, 8},
		{"EndTxn p99", endTxn.TotalP99Ms, 30},
		{"AddPartitionsToTxn requests", add.Requests, 40}, {"AddPartitionsToTxn total", add.TotalMs, 3},
		// Fetch is FetchConsumer (+600), not Fetch (+1200) nor FetchFollower.
		{"Fetch requests", fetch.Requests, 600}, {"Fetch total", fetch.TotalMs, 501}, {"Fetch durability", fetch.DurabilityMs, 500},
		{"bytes in (all topics)", value(got.BytesIn), 20e6}, {"bytes out (all topics)", value(got.BytesOut), 10e6},
		{"records in", value(got.RecordsIn), 200000}, {"under-replicated partitions", value(got.UnderReplicatedPartitions), 2},
		{"groups", got.Gauges["kafka_coordinator_group_groupmetadatamanager_numgroups"], 4},
	})
	if produce.Statistic != "median" || produce.TotalOnly {
		t.Errorf("Produce statistic %q total-only %v, want median with parts", produce.Statistic, produce.TotalOnly)
	}
	if got.MarkersWritten != nil || got.TransactionsCommitted != nil || got.FsyncsPerSecond != nil || got.DuplicatesDropped != nil {
		t.Errorf("figures Kafka does not publish are present: %+v", got)
	}
	if got.UnderReplicatedReplicas != nil {
		t.Error("Kafka counts partitions, not replicas")
	}
	if _, kept := got.Gauges["jmx_scrape_duration_seconds"]; kept {
		t.Error("an unknown gauge is among the coordinator gauges")
	}
	notes := strings.Join(got.Notes, "\n")
	for _, want := range []string{"percentiles", "medians", "RemoteTimeMs", "no count of fsyncs"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

// TestCompareRedpanda reads the public_metrics fixture: the handler
// latency histograms, not the older request latency beside them.
func TestCompareRedpanda(t *testing.T) {
	got := compareFiles(t, "testdata/redpanda-before.txt", "testdata/redpanda-after.txt")
	if got.Flavour != "redpanda" || len(got.Warnings) != 0 {
		t.Fatalf("flavour %q, warnings %v; want redpanda and none", got.Flavour, got.Warnings)
	}
	apis := apiByName(got)
	if len(got.APIs) != 2 {
		t.Fatalf("APIs = %+v, want Produce and Fetch", got.APIs)
	}
	produce, fetch := apis["Produce"], apis["Fetch"]
	checkFigures(t, []figure{
		// Produce: +2000 requests, +6 s: 3 ms each; p99 rank 1980 in
		// (4.095, 8.191] ms holding 100 after 1900: 4.095 + 4.096 × 0.8.
		{"Produce requests", produce.Requests, 2000}, {"Produce mean", produce.TotalMs, 3},
		{"Produce p99", produce.TotalP99Ms, 4.095 + 4.096*0.8},
		// Fetch: +600 requests, +300 s: 500 ms each; p99 rank 594 of 600
		// in (262.143, 524.287] ms.
		{"Fetch requests", fetch.Requests, 600}, {"Fetch mean", fetch.TotalMs, 500},
		{"Fetch p99", fetch.TotalP99Ms, 262.143 + 262.144*594/600},
		{"bytes in", value(got.BytesIn), 20e6}, {"bytes out", value(got.BytesOut), 10e6},
		{"records in", value(got.RecordsIn), 200000}, {"under-replicated replicas", value(got.UnderReplicatedReplicas), 3},
	})
	if !produce.TotalOnly || !produce.Mean() {
		t.Errorf("Produce total-only %v statistic %q, want a mean of the whole request only", produce.TotalOnly, produce.Statistic)
	}
	if got.MarkersWritten != nil || got.TransactionsAborted != nil || got.UnderReplicatedPartitions != nil {
		t.Errorf("figures Redpanda does not publish are present: %+v", got)
	}
	if h := got.Histograms[`redpanda_kafka_handler_latency_seconds{handler="produce"}`]; h.Count != 2000 {
		t.Errorf("produce handler histogram = %+v, want 2000 observations", h)
	}
	if notes := strings.Join(got.Notes, "\n"); !strings.Contains(notes, "no queue / local / durability / send split") ||
		!strings.Contains(notes, "replicas, not partitions") {
		t.Errorf("notes = %s", notes)
	}
}

// TestRedpandaOlderRequestLatency: without the handler histograms, the
// older request latency is read and the note says so.
func TestRedpandaOlderRequestLatency(t *testing.T) {
	parse := func(text string) *Snapshot {
		families, err := Parse(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return &Snapshot{Families: families}
	}
	histogramText := func(count, sum int) string {
		return "# TYPE redpanda_kafka_request_latency_seconds histogram\n" +
			"redpanda_kafka_request_latency_seconds_sum{redpanda_request=\"produce\"} " + strconv.Itoa(sum) + "\n" +
			"redpanda_kafka_request_latency_seconds_count{redpanda_request=\"produce\"} " + strconv.Itoa(count) + "\n" +
			"redpanda_kafka_request_latency_seconds_bucket{le=\"1.048575\",redpanda_request=\"produce\"} " + strconv.Itoa(count) + "\n" +
			"redpanda_kafka_request_latency_seconds_bucket{le=\"+Inf\",redpanda_request=\"produce\"} " + strconv.Itoa(count) + "\n"
	}
	before, after := parse(histogramText(10, 1)), parse(histogramText(30, 3))
	after.At = before.At.Add(time.Second)
	got := Compare("test", before, after, nil, nil)
	if len(got.APIs) != 1 || got.APIs[0].Requests != 20 || !near(got.APIs[0].TotalMs, 100) {
		t.Errorf("APIs = %+v, want Produce: 20 requests of 100 ms", got.APIs)
	}
	if !strings.Contains(strings.Join(got.Notes, "\n"), "older") {
		t.Errorf("notes = %v, want one about the older request latency", got.Notes)
	}
}

// TestDetectFlavour: each flavour by its names; a scrape of none is a
// warning, not an error, and unknown families beside a flavour's are
// ignored.
func TestDetectFlavour(t *testing.T) {
	for _, test := range []struct {
		text, want string
	}{
		{"# TYPE exactly_fsync_total counter\nexactly_fsync_total 1\n# TYPE go_goroutines gauge\ngo_goroutines 7\n", "exactly"},
		{"# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge\nkafka_server_replicamanager_underreplicatedpartitions 0.0\n", "kafka-jmx"},
		{"# TYPE redpanda_cluster_brokers gauge\nredpanda_cluster_brokers{} 3.000000\n", "redpanda"},
		{"# TYPE node_load1 gauge\nnode_load1 0.5\n# TYPE http_requests_total counter\nhttp_requests_total{code=\"200\"} 4\n", ""},
	} {
		families, err := Parse(strings.NewReader(test.text))
		if err != nil {
			t.Fatalf("parse %q: %v", test.text, err)
		}
		start := time.Now()
		got := Compare("test", &Snapshot{At: start, Families: families}, &Snapshot{At: start.Add(time.Second), Families: families}, nil, nil)
		if got.Flavour != test.want {
			t.Errorf("flavour of %q = %q, want %q", test.text, got.Flavour, test.want)
		}
		if test.want == "" && (len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "not a broker's")) {
			t.Errorf("warnings for unknown names = %v", got.Warnings)
		}
		if test.want != "" && len(got.Warnings) != 0 {
			t.Errorf("warnings for %s = %v", test.want, got.Warnings)
		}
	}
}

// TestCounterResetEachFlavour: a counter lower after than before (the
// broker restarted) is a warning, and its value after counts from zero.
func TestCounterResetEachFlavour(t *testing.T) {
	for _, test := range []struct {
		flavour, before, after string
		requests               float64
	}{
		{"kafka-jmx",
			"# TYPE kafka_network_requestmetrics_requests_total counter\nkafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"9\",} 500.0\n",
			"# TYPE kafka_network_requestmetrics_requests_total counter\nkafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"9\",} 40.0\n", 40},
		{"kafka-jmx", // Confluent's rules: untyped counts
			"kafka_network_requestmetrics_requestspersec{request=\"Produce\",version=\"9\"} 500.0\n",
			"kafka_network_requestmetrics_requestspersec{request=\"Produce\",version=\"9\"} 40.0\n", 40},
		{"redpanda",
			"# TYPE redpanda_kafka_handler_latency_seconds histogram\nredpanda_kafka_handler_latency_seconds_sum{handler=\"produce\"} 5\nredpanda_kafka_handler_latency_seconds_count{handler=\"produce\"} 500\nredpanda_kafka_handler_latency_seconds_bucket{handler=\"produce\",le=\"+Inf\"} 500\n",
			"# TYPE redpanda_kafka_handler_latency_seconds histogram\nredpanda_kafka_handler_latency_seconds_sum{handler=\"produce\"} 0.4\nredpanda_kafka_handler_latency_seconds_count{handler=\"produce\"} 40\nredpanda_kafka_handler_latency_seconds_bucket{handler=\"produce\",le=\"+Inf\"} 40\n", 40},
	} {
		before, err := Parse(strings.NewReader(test.before))
		if err != nil {
			t.Fatal(err)
		}
		after, err := Parse(strings.NewReader(test.after))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got := Compare("test", &Snapshot{At: start, Families: before}, &Snapshot{At: start.Add(time.Second), Families: after}, nil, nil)
		if got.Flavour != test.flavour {
			t.Errorf("flavour = %q, want %q", got.Flavour, test.flavour)
		}
		if !strings.Contains(strings.Join(got.Warnings, "\n"), "backwards") {
			t.Errorf("%s: warnings = %v, want one about the reset", test.flavour, got.Warnings)
		}
		if test.flavour == "redpanda" {
			if len(got.APIs) != 1 || got.APIs[0].Requests != test.requests {
				t.Errorf("%s: APIs after a restart = %+v, want %v requests", test.flavour, got.APIs, test.requests)
			}
		} else {
			// The fixtures publish no times, so there is no API row: read
			// the count as the API row would.
			d := diff(before, after)
			if requests, _ := d.firstCount(kafkaRequestCounts, map[string]string{"request": "Produce"}); requests != test.requests {
				t.Errorf("%s: requests after a restart = %v, want %v", test.flavour, requests, test.requests)
			}
		}
	}
}
