package broker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/metrics"
)

// startMetricsBroker starts a broker with metrics on, closed at the end
// of the test.
func startMetricsBroker(t *testing.T, properties map[string]string) (*Broker, *metrics.Broker) {
	t.Helper()
	m := metrics.New()
	b, err := Start(context.Background(), Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: t.TempDir(), Properties: properties, Metrics: m})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return b, m
}

// txnLoad is a short transactional load: commits then aborts
// transactions of recordsPerPartition records on each of partitions
// partitions of topic.
type txnLoad struct {
	topic               string
	partitions          int32
	commits, aborts     int
	recordsPerPartition int
	transactionalID     string
}

// run creates the topic and runs the transactions, failing the test on
// any error.
func (l txnLoad) run(t *testing.T, addr string) {
	t.Helper()
	ctx := testContext(t, 60*time.Second)
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopic(t, admin, l.topic, l.partitions, nil)
	producer := newTxnProducer(t, addr, l.transactionalID)
	for i := 0; i < l.commits+l.aborts; i++ {
		var records []*kgo.Record
		for p := int32(0); p < l.partitions; p++ {
			for r := 0; r < l.recordsPerPartition; r++ {
				records = append(records, &kgo.Record{Topic: l.topic, Partition: p, Value: []byte(fmt.Sprintf("txn %d record %d", i, r))})
			}
		}
		if err := runTransaction(ctx, producer, records, i < l.commits); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
	}
}

// metricValue is the value of the named metric whose labels include
// labels (counter, gauge, or a histogram's sample count); found is false
// when no such series exists.
func metricValue(t *testing.T, m *metrics.Broker, name string, labels map[string]string) (value float64, found bool) {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, metric := range family.GetMetric() {
			if !hasLabels(metric, labels) {
				continue
			}
			switch {
			case metric.Counter != nil:
				return metric.Counter.GetValue(), true
			case metric.Gauge != nil:
				return metric.Gauge.GetValue(), true
			case metric.Histogram != nil:
				return float64(metric.Histogram.GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func hasLabels(metric *dto.Metric, labels map[string]string) bool {
	matched := 0
	for _, pair := range metric.GetLabel() {
		if want, ok := labels[pair.GetName()]; ok && want == pair.GetValue() {
			matched++
		}
	}
	return matched == len(labels)
}

// mustMetric is metricValue failing the test when the series is missing.
func mustMetric(t *testing.T, m *metrics.Broker, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := metricValue(t, m, name, labels)
	if !ok {
		t.Fatalf("metric %s%v missing", name, labels)
	}
	return v
}

// TestMetricsAfterTransactionalLoad runs a short transactional load
// through franz-go and checks the counters the broker kept: the
// transaction lifecycle, markers (one per partition per transaction),
// requests and their time split, produce data, log figures per
// partition, connections.
func TestMetricsAfterTransactionalLoad(t *testing.T) {
	properties := txnTestProperties("2")
	properties["log.fsync"] = "always"
	b, m := startMetricsBroker(t, properties)
	load := txnLoad{topic: "metrics-txn", partitions: 2, commits: 4, aborts: 2, recordsPerPartition: 3, transactionalID: "metrics-txn"}
	load.run(t, b.Addr())
	transactions := load.commits + load.aborts

	exact := func(name string, labels map[string]string, want float64) {
		t.Helper()
		if got := mustMetric(t, m, name, labels); got != want {
			t.Errorf("%s%v = %v, want %v", name, labels, got, want)
		}
	}
	exact("exactly_transactions_committed_total", nil, float64(load.commits))
	exact("exactly_transactions_aborted_total", nil, float64(load.aborts))
	exact("exactly_transactions_begun_total", nil, float64(transactions))
	exact("exactly_transactions_timed_out_total", nil, 0)
	exact("exactly_transactions_open", nil, 0)
	exact("exactly_transaction_markers_written_total", nil, float64(transactions*int(load.partitions)))
	exact("exactly_requests_total", map[string]string{"api": "EndTxn"}, float64(transactions))
	exact("exactly_end_txn_seconds", nil, float64(transactions))
	records := float64(transactions * int(load.partitions) * load.recordsPerPartition)
	exact("exactly_produce_records_total", map[string]string{"topic": load.topic}, records)
	for p := int32(0); p < load.partitions; p++ {
		labels := map[string]string{"topic": load.topic, "partition": strconv.Itoa(int(p))}
		// Each transaction wrote its records and one marker here.
		exact("exactly_log_end_offset", labels, float64(transactions*(load.recordsPerPartition+1)))
		exact("exactly_log_segments", labels, 1)
		exact("exactly_partition_lso_lag_records", labels, 0)
		if size := mustMetric(t, m, "exactly_log_size_bytes", labels); size <= 0 {
			t.Errorf("exactly_log_size_bytes%v = %v, want > 0", labels, size)
		}
	}

	produces := mustMetric(t, m, "exactly_requests_total", map[string]string{"api": "Produce"})
	if produces < float64(transactions) {
		t.Errorf("Produce requests = %v, want at least %d", produces, transactions)
	}
	for _, histogram := range []string{"exactly_request_queue_seconds", "exactly_request_local_seconds",
		"exactly_request_durability_wait_seconds", "exactly_request_send_seconds", "exactly_request_total_seconds"} {
		// Every Produce was answered (acks=all), so each has one observation.
		exact(histogram, map[string]string{"api": "Produce"}, produces)
	}
	if batches := mustMetric(t, m, "exactly_produce_batches_total", map[string]string{"topic": load.topic}); batches < float64(transactions*int(load.partitions)) {
		t.Errorf("produce batches = %v, want at least %d", batches, transactions*int(load.partitions))
	}
	if in := mustMetric(t, m, "exactly_topic_bytes_in_total", map[string]string{"topic": load.topic}); in <= 0 {
		t.Errorf("bytes in = %v, want > 0", in)
	}
	if opened := mustMetric(t, m, "exactly_connections_opened_total", nil); opened < 1 {
		t.Errorf("connections opened = %v, want at least 1", opened)
	}
	if open := mustMetric(t, m, "exactly_connections_open", nil); open < 1 {
		t.Errorf("connections open = %v, want at least 1 (the producer's)", open)
	}
	fsyncs := mustMetric(t, m, "exactly_fsync_total", nil)
	exact("exactly_fsync_seconds", nil, fsyncs)
}

// TestMetricsFsyncFollowsPolicy checks the fsync counter against the
// configured log.fsync: with always, every transaction syncs at least
// three times (its acks=all data on each partition before the answer, the
// PrepareCommit record before EndTxn proceeds); never syncs nothing while
// the load runs (no segment rolls); an interval syncs, but at most once
// per interval and log (the load writes 2 data partitions and the 5
// __transaction_state partitions; the 5 __consumer_offsets ones are idle).
func TestMetricsFsyncFollowsPolicy(t *testing.T) {
	const interval = 50 * time.Millisecond
	const logs = 2 + 5 + 5
	for _, tc := range []struct {
		policy string
		check  func(fsyncs float64, transactions int, elapsed time.Duration) bool
		want   string
	}{
		{"always", func(f float64, n int, _ time.Duration) bool { return f >= float64(3*n) }, "at least 3 per transaction"},
		{"never", func(f float64, _ int, _ time.Duration) bool { return f == 0 }, "0"},
		{"interval:" + interval.String(), func(f float64, _ int, elapsed time.Duration) bool {
			return f > 0 && f <= float64(logs*(int(elapsed/interval)+2))
		}, "> 0 and at most one per interval and log"},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			properties := txnTestProperties("2")
			properties["log.fsync"] = tc.policy
			started := time.Now()
			b, m := startMetricsBroker(t, properties)
			load := txnLoad{topic: "fsync", partitions: 2, commits: 3, recordsPerPartition: 2, transactionalID: "fsync"}
			load.run(t, b.Addr())
			fsyncs := mustMetric(t, m, "exactly_fsync_total", nil)
			if elapsed := time.Since(started); !tc.check(fsyncs, load.commits, elapsed) {
				t.Errorf("log.fsync=%s: %v fsyncs after %d transactions in %v, want %s", tc.policy, fsyncs, load.commits, elapsed, tc.want)
			}
		})
	}
}

// TestMetricsGroupsAndErrors checks the group metrics after a consumer
// group consumed and committed, and that a response error code is
// counted per API and Kafka error name.
func TestMetricsGroupsAndErrors(t *testing.T) {
	b, m := startMetricsBroker(t, groupTestProperties())
	ctx := testContext(t, 60*time.Second)
	producer := newTestClient(t, b, kgo.DefaultProduceTopic("metrics-group"), kgo.AllowAutoTopicCreation())
	for i := 0; i < 10; i++ {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumer := newTestClient(t, b, kgo.ConsumerGroup("metrics-group"), kgo.ConsumeTopics("metrics-group"),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for seen := 0; seen < 10; {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 10: %v", seen, err)
		}
		seen += fetches.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustMetric(t, m, "exactly_group_rebalances_total", nil); got < 1 {
		t.Errorf("rebalances = %v, want at least 1", got)
	}
	if got := mustMetric(t, m, "exactly_group_members", map[string]string{"group": "metrics-group"}); got != 1 {
		t.Errorf("group members = %v, want 1", got)
	}
	lag := func() float64 {
		t.Helper()
		families, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		sum, series := 0.0, 0
		for _, family := range families {
			if family.GetName() != "exactly_group_lag_records" {
				continue
			}
			for _, metric := range family.Metric {
				labels := map[string]string{}
				for _, pair := range metric.Label {
					labels[pair.GetName()] = pair.GetValue()
				}
				if labels["group"] == "metrics-group" && labels["topic"] == "metrics-group" {
					sum += metric.Gauge.GetValue()
					series++
				}
			}
		}
		if series == 0 {
			t.Fatal("no exactly_group_lag_records series for metrics-group")
		}
		return sum
	}
	if got := lag(); got != 0 {
		t.Errorf("group lag after committing everything = %v, want 0", got)
	}
	for i := 10; i < 15; i++ {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i)), Partition: 0}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if got := lag(); got != 5 {
		t.Errorf("group lag after 5 more records = %v, want 5", got)
	}
	if got := mustMetric(t, m, "exactly_group_offsets_committed_total", nil); got < 1 {
		t.Errorf("offsets committed = %v, want at least 1", got)
	}
	if got := mustMetric(t, m, "exactly_topic_bytes_out_total", map[string]string{"topic": "metrics-group"}); got <= 0 {
		t.Errorf("bytes out = %v, want > 0", got)
	}

	// ListOffsets for a partition that does not exist.
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "metrics-group"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 99, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Sent to the broker directly: franz-go's sharding would answer it
	// without asking, knowing the partition does not exist.
	if _, err := producer.Broker(1).Request(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := mustMetric(t, m, "exactly_request_errors_total", map[string]string{"api": "ListOffsets", "error": "UNKNOWN_TOPIC_OR_PARTITION"}); got != 1 {
		t.Errorf("ListOffsets UNKNOWN_TOPIC_OR_PARTITION errors = %v, want 1", got)
	}
}

// TestMetricsOpenTransactionLag checks the open-transaction gauge and the
// LSO lag while a transaction is open.
func TestMetricsOpenTransactionLag(t *testing.T) {
	b, m := startMetricsBroker(t, txnTestProperties("2"))
	ctx := testContext(t, 60*time.Second)
	admin := newTestClient(t, b)
	createTopic(t, admin, "lag", 1, nil)
	producer := newTxnProducer(t, b.Addr(), "lag")
	if err := producer.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var records []*kgo.Record
	for i := 0; i < 5; i++ {
		records = append(records, &kgo.Record{Topic: "lag", Value: []byte("open")})
	}
	if err := producer.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"topic": "lag", "partition": "0"}
	if got := mustMetric(t, m, "exactly_partition_lso_lag_records", labels); got != 5 {
		t.Errorf("LSO lag with 5 uncommitted records = %v, want 5", got)
	}
	if got := mustMetric(t, m, "exactly_transactions_open", nil); got != 1 {
		t.Errorf("open transactions = %v, want 1", got)
	}
	if err := producer.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := mustMetric(t, m, "exactly_partition_lso_lag_records", labels); got != 0 {
		t.Errorf("LSO lag after commit = %v, want 0", got)
	}
}

// requireTool finds an external tool: a test skips without it, except in
// CI (EXACTLY_CI=1), where it must be there.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("EXACTLY_CI") == "1" {
			t.Fatalf("%s not found (ci/prometheus.sh installs it): %v", name, err)
		}
		t.Skipf("%s not installed (Debian package prometheus; ci/prometheus.sh installs it)", name)
	}
	return path
}

// TestMetricsPromtoolClean serves the metrics over HTTP after a load and
// runs `promtool check metrics` on the scrape: no lint problem.
func TestMetricsPromtoolClean(t *testing.T) {
	promtool := requireTool(t, "promtool")
	properties := txnTestProperties("2")
	b, m := startMetricsBroker(t, properties)
	server, err := metrics.Serve("127.0.0.1:0", m, b.Ready)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	txnLoad{topic: "promtool", partitions: 2, commits: 2, aborts: 1, recordsPerPartition: 2, transactionalID: "promtool"}.run(t, b.Addr())
	scrape := httpGet(t, server.URL())
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if body := httpGet(t, "http://"+server.Addr()+path); len(body) == 0 {
			t.Errorf("%s: empty body", path)
		}
	}
}

// httpGet fetches url, failing the test unless it answers 200.
func httpGet(t *testing.T, url string) []byte {
	t.Helper()
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body
}
