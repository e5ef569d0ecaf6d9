package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteBrokerSideOtherFlavour: against Kafka's names the table has
// the Produce breakdown, says the times are medians, prints the figures
// only other brokers publish and the notes, and shows "-", not 0, for
// what Kafka does not publish.
func TestWriteBrokerSideOtherFlavour(t *testing.T) {
	bytesIn, underReplicated := 20e6, 2.0
	results := &Results{Runs: []*Run{{Name: "transactional:none", BrokerMetrics: &BrokerMetrics{
		URL: "http://kafka:7071/metrics", Flavour: "kafka-jmx", Seconds: 10,
		Notes:   []string{"Apache Kafka publishes no count of fsyncs"},
		APIs:    []APITime{{API: "Produce", Requests: 1900, QueueMs: 1, LocalMs: 2, DurabilityMs: 7, SendMs: 1, TotalMs: 12, Statistic: "median"}},
		BytesIn: &bytesIn, UnderReplicatedPartitions: &underReplicated,
	}}}}
	var out bytes.Buffer
	if err := WriteBrokerSideWith(&out, results, true); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"1.00 / 2.00 / 7.00 / 1.00", "kafka-jmx broker's metric names; times are the broker's medians",
		"bytes in 2.00 MB/s", "under-replicated partitions 2", "note: Apache Kafka publishes no count of fsyncs",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	row := newBrokerRow(nil, results.Runs[0], false)
	if row.Markers != "-" || row.Fsyncs != "-" || row.Duplicates != "-" || row.Transactions != "-" {
		t.Errorf("figures Kafka does not publish: markers %q fsyncs %q duplicates %q transactions %q, want -",
			row.Markers, row.Fsyncs, row.Duplicates, row.Transactions)
	}
}
