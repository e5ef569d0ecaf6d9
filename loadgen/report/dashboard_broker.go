package report

import (
	"fmt"
	"strings"
)

// brokerRow is one run's broker-side figures (its BrokerMetrics) beside
// its client-side ones, in the dashboard's broker-side table.
type brokerRow struct {
	File        *fileView
	Name        string
	FirstOfName bool
	// RecordsPerSecond and AckP99 are the client's view, for comparison.
	RecordsPerSecond, AckP99 string
	// Produce is the mean time per Produce request, split into Parts
	// (queue, local append, durability wait, send) with a bar whose
	// segments are the parts' shares.
	ProduceRequests, ProduceTotal string
	Parts                         []brokerPart
	// Other APIs' mean time per request, "-" without requests.
	EndTxn, AddPartitions, TxnOffsetCommit, Fetch string
	// Markers, MarkersPerCommit, Fsyncs (per second), Duplicates and
	// Transactions ("committed / aborted") are the broker's counts.
	Markers, MarkersPerCommit, Fsyncs, Duplicates, Transactions string
	// Flavour is whose metric names were read ("exactly", "kafka-jmx",
	// "redpanda"); Statistic is "median" when the times are the broker's
	// medians rather than means over the cell. Other is the figures only
	// other brokers publish (bytes in/out, under-replicated), "" without.
	Flavour, Statistic, Other string
	Notes, Warnings           []string
}

// brokerPart is one part of a request's time.
type brokerPart struct {
	Name, Class string
	Millis      string
	// Percent is the part's share of the bar, 0 to 100.
	Percent float64
}

// brokerPartNames name the parts of a request's time in the table.
var brokerPartNames = []struct{ name, class string }{
	{"queue", "queue"}, {"local append", "local"}, {"durability wait", "durability"}, {"send", "send"}}

// brokerRows lists the runs that carry broker metrics, grouped by run
// name like the throughput table; none when no run does.
func brokerRows(files []*fileView, names []string) []brokerRow {
	var rows []brokerRow
	for _, name := range names {
		first := true
		for _, file := range files {
			run := file.run(name)
			if run == nil || run.BrokerMetrics == nil {
				continue
			}
			rows = append(rows, newBrokerRow(file, run, first))
			first = false
		}
	}
	return rows
}

func newBrokerRow(file *fileView, run *Run, first bool) brokerRow {
	metrics := run.BrokerMetrics
	flavour := metrics.Flavour
	if flavour == "" {
		flavour = "exactly"
	}
	row := brokerRow{File: file, Name: run.Name, FirstOfName: first, Warnings: metrics.Warnings,
		Flavour: flavour, Notes: metrics.Notes,
		RecordsPerSecond: number(run.Throughput.RecordsPerSecond, 0), AckP99: percentiles(run.Latency[LatencyProduceAck], 99),
		ProduceRequests: "-", ProduceTotal: "-", EndTxn: "-", AddPartitions: "-", TxnOffsetCommit: "-", Fetch: "-",
		Markers: "-", MarkersPerCommit: "-", Fsyncs: "-", Duplicates: "-", Transactions: "-"}
	if metrics.Seconds <= 0 {
		return row // no figures: the warnings say why
	}
	for _, api := range metrics.APIs {
		if !api.Mean() {
			row.Statistic = api.Statistic
		}
		switch api.API {
		case "Produce":
			row.ProduceRequests, row.ProduceTotal = fmt.Sprintf("%.0f", api.Requests), shortMillis(api.TotalMs)
			if !api.TotalOnly {
				row.Parts = produceParts(api)
			}
		case "EndTxn":
			row.EndTxn = shortMillis(api.TotalMs)
		case "AddPartitionsToTxn":
			row.AddPartitions = shortMillis(api.TotalMs)
		case "TxnOffsetCommit":
			row.TxnOffsetCommit = shortMillis(api.TotalMs)
		case "Fetch":
			row.Fetch = shortMillis(api.TotalMs)
		}
	}
	row.Markers = optional("%.0f", metrics.MarkersWritten)
	row.MarkersPerCommit = optional("%.2f", metrics.MarkersPerCommit)
	row.Fsyncs = optional("%.1f", metrics.FsyncsPerSecond)
	row.Duplicates = optional("%.0f", metrics.DuplicatesDropped)
	if metrics.TransactionsCommitted != nil && metrics.TransactionsAborted != nil {
		row.Transactions = fmt.Sprintf("%.0f / %.0f", *metrics.TransactionsCommitted, *metrics.TransactionsAborted)
	}
	row.Other = otherFigures(metrics)
	return row
}

// optional formats x, "-" when it is absent.
func optional(format string, x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf(format, *x)
}

// otherFigures lists the figures only other brokers publish, as
// "bytes in 1.2 MB/s, out 0.4 MB/s, under-replicated partitions 0"; ""
// without any.
func otherFigures(metrics *BrokerMetrics) string {
	var parts []string
	if metrics.BytesIn != nil {
		parts = append(parts, fmt.Sprintf("bytes in %.2f MB/s", *metrics.BytesIn/metrics.Seconds/1e6))
	}
	if metrics.BytesOut != nil {
		parts = append(parts, fmt.Sprintf("bytes out %.2f MB/s", *metrics.BytesOut/metrics.Seconds/1e6))
	}
	if metrics.UnderReplicatedPartitions != nil {
		parts = append(parts, fmt.Sprintf("under-replicated partitions %.0f", *metrics.UnderReplicatedPartitions))
	}
	if metrics.UnderReplicatedReplicas != nil {
		parts = append(parts, fmt.Sprintf("under-replicated replicas %.0f", *metrics.UnderReplicatedReplicas))
	}
	return strings.Join(parts, ", ")
}

// produceParts splits a Produce request's mean time into its parts, each
// with its share of their sum.
func produceParts(api APITime) []brokerPart {
	values := []float64{api.QueueMs, api.LocalMs, api.DurabilityMs, api.SendMs}
	sum := 0.0
	for _, value := range values {
		sum += max(value, 0)
	}
	parts := make([]brokerPart, len(values))
	for i, value := range values {
		parts[i] = brokerPart{Name: brokerPartNames[i].name, Class: brokerPartNames[i].class, Millis: shortMillis(value)}
		if sum > 0 {
			parts[i].Percent = 100 * max(value, 0) / sum
		}
	}
	return parts
}

// PartsText is the parts as "queue 0.10 / local append 0.50 / …" ms.
func (r brokerRow) PartsText() string {
	if len(r.Parts) == 0 {
		return "-"
	}
	texts := make([]string, len(r.Parts))
	for i, part := range r.Parts {
		texts[i] = part.Millis
	}
	return strings.Join(texts, " / ")
}
