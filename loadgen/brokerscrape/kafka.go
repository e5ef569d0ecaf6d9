package brokerscrape

import (
	"sort"
	"strconv"
	"strings"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// Apache Kafka's metrics as the Prometheus JMX exporter publishes them
// with the widely used rule set: the exporter's example
// example_configs/kafka-2_0_0.yml, which Strimzi's kafka-metrics.yaml
// copied until it dropped RequestMetrics. Kafka's request metrics are
// kafka.network:type=RequestMetrics,name=<Name>,request=<API>: a meter
// RequestsPerSec (also keyed by version) and Yammer histograms
// RequestQueueTimeMs, LocalTimeMs, RemoteTimeMs, ResponseQueueTimeMs,
// ResponseSendTimeMs and TotalTimeMs. The rules publish a meter's Count
// as <name>_total and a histogram's Count as <name>_count (jmx_exporter
// 1.x appends _total to that: <name>_count_total) and its percentiles as
// gauges <name>{quantile="0.50"…"0.999"}; no sum and no mean. Confluent's
// jmx-monitoring-stacks rules publish the Counts untyped, without a
// suffix: requestspersec{request,version} and totaltimems{request} beside
// its quantile gauges.
const (
	kafkaRequestMetrics  = "kafka_network_requestmetrics_"
	kafkaServerPrefix    = "kafka_server_"
	kafkaCoordinator     = "kafka_coordinator_"
	kafkaUnderReplicated = "kafka_server_replicamanager_underreplicatedpartitions"
)

// kafkaRequestCounts are the families counting requests per API, as the
// rule sets name them, in the order tried.
var kafkaRequestCounts = []string{
	kafkaRequestMetrics + "requests_total",       // kafka-2_0_0.yml, jmx_exporter 0.x and 1.x
	kafkaRequestMetrics + "requestspersec_count", // rules publishing the meter's Count as a _count
	kafkaRequestMetrics + "requestspersec",       // Confluent's jmx-monitoring-stacks (untyped)
}

// kafkaBytesIn and the other broker-wide meters: the series without a
// topic label is the meter over all topics.
var (
	kafkaBytesIn    = []string{"kafka_server_brokertopicmetrics_bytesin_total", "kafka_server_brokertopicmetrics_bytesinpersec_count", "kafka_server_brokertopicmetrics_bytesinpersec"}
	kafkaBytesOut   = []string{"kafka_server_brokertopicmetrics_bytesout_total", "kafka_server_brokertopicmetrics_bytesoutpersec_count", "kafka_server_brokertopicmetrics_bytesoutpersec"}
	kafkaMessagesIn = []string{"kafka_server_brokertopicmetrics_messagesin_total", "kafka_server_brokertopicmetrics_messagesinpersec_count", "kafka_server_brokertopicmetrics_messagesinpersec"}
	allTopics       = map[string]string{"topic": ""}
)

// kafkaRequestLabel is the request label Kafka gives an API's metrics:
// its name, except that Fetch is also counted as FetchConsumer (from
// clients) or FetchFollower (replication), and a client's is wanted.
func kafkaRequestLabel(api string) string {
	if api == "Fetch" {
		return "FetchConsumer"
	}
	return api
}

// fillKafka sets the figures from Kafka's JMX exporter names.
func fillKafka(out *report.BrokerMetrics, d *deltas) {
	timed := false
	for _, api := range BreakdownAPIs {
		time, ok := kafkaAPITime(d, api)
		if ok {
			out.APIs = append(out.APIs, time)
			timed = timed || time.Statistic != ""
		}
	}
	out.BytesIn = optional(d.firstCount(kafkaBytesIn, allTopics))
	out.BytesOut = optional(d.firstCount(kafkaBytesOut, allTopics))
	out.RecordsIn = optional(d.firstCount(kafkaMessagesIn, allTopics))
	out.UnderReplicatedPartitions = optional(d.level(kafkaUnderReplicated, nil))
	for _, list := range [][]series{d.gauges, d.untyped} {
		for _, s := range list {
			if strings.HasPrefix(s.family, kafkaCoordinator) {
				if out.Gauges == nil {
					out.Gauges = map[string]float64{}
				}
				out.Gauges[keyOf(s)] = s.after
			}
		}
	}
	if !anyPrefix(d.families, kafkaRequestMetrics) {
		out.Notes = append(out.Notes, "no kafka_network_requestmetrics_ series: the exporter's rules drop Kafka's RequestMetrics "+
			"(Strimzi's current kafka-metrics.yaml does), so there is no per-request breakdown")
	} else if timed {
		out.Notes = append(out.Notes,
			"Kafka's JMX exporter publishes request times as percentiles of Kafka's own recent sample (a Yammer histogram biased to "+
				"the last five minutes), not as sums: the times are the broker's medians read after the load, the p99 its 99th percentile; "+
				"the request counts are the change between the scrapes",
			"durability wait is Kafka's RemoteTimeMs (waiting for the in-sync replicas); send is ResponseQueueTimeMs + ResponseSendTimeMs "+
				"(a sum of two medians); Fetch is Kafka's FetchConsumer (replication fetches excluded)")
	}
	out.Notes = append(out.Notes, "Apache Kafka publishes no count of fsyncs, transaction markers, committed or aborted transactions "+
		"or dropped duplicates: those figures are absent (EndTxn and WriteTxnMarkers request counts are among the counters)")
}

// kafkaAPITime is api's requests and times; ok is false when it served no
// request between the scrapes or its times are not published.
func kafkaAPITime(d *deltas, api string) (report.APITime, bool) {
	want := map[string]string{"request": kafkaRequestLabel(api)}
	requests, found := d.firstCount(kafkaRequestCounts, want)
	if !found {
		requests, found = kafkaHistogramCount(d, "totaltimems", want)
	}
	if !found || requests <= 0 {
		return report.APITime{}, false
	}
	median := func(name string) (float64, bool) { return kafkaQuantile(d, name, want, 0.5) }
	total, timed := median("totaltimems")
	if !timed {
		return report.APITime{}, false
	}
	out := report.APITime{API: api, Requests: tidy(requests), TotalMs: total, Statistic: "median"}
	out.QueueMs, _ = median("requestqueuetimems")
	out.LocalMs, _ = median("localtimems")
	out.DurabilityMs, _ = median("remotetimems")
	responseQueue, _ := median("responsequeuetimems")
	responseSend, _ := median("responsesendtimems")
	out.SendMs = responseQueue + responseSend
	out.TotalP99Ms, _ = kafkaQuantile(d, "totaltimems", want, 0.99)
	return out, true
}

// kafkaHistogramCount is the change of a Kafka histogram's Count: name's
// _count (jmx_exporter 0.x), _count_total (1.x), or the series of name
// itself without a quantile label (Confluent's untyped Count).
func kafkaHistogramCount(d *deltas, name string, want map[string]string) (float64, bool) {
	family := kafkaRequestMetrics + name
	if total, found := d.firstCount([]string{family + "_count", family + "_count_total"}, want); found {
		return total, true
	}
	withoutQuantile := map[string]string{"quantile": ""}
	for label, value := range want {
		withoutQuantile[label] = value
	}
	return d.count(family, withoutQuantile)
}

// kafkaQuantile is the q-quantile gauge of a Kafka histogram as read
// after the load (summed over series that differ in other labels would be
// wrong: the largest is taken).
func kafkaQuantile(d *deltas, name string, want map[string]string, q float64) (float64, bool) {
	family := kafkaRequestMetrics + name
	var values []float64
	for _, list := range [][]series{d.gauges, d.untyped} {
		for _, s := range list {
			if !s.matches(family, want) {
				continue
			}
			quantile, err := strconv.ParseFloat(s.labels["quantile"], 64)
			if err == nil && quantile == q {
				values = append(values, s.after)
			}
		}
	}
	if len(values) == 0 {
		return 0, false
	}
	sort.Float64s(values)
	return values[len(values)-1], true
}

// anyPrefix reports whether a family name starts with prefix.
func anyPrefix(families map[string]bool, prefix string) bool {
	for name := range families {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}
