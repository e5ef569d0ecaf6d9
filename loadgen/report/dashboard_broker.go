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
	Warnings                                                    []string
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
	row := brokerRow{File: file, Name: run.Name, FirstOfName: first, Warnings: metrics.Warnings,
		RecordsPerSecond: number(run.Throughput.RecordsPerSecond, 0), AckP99: percentiles(run.Latency[LatencyProduceAck], 99),
		ProduceRequests: "-", ProduceTotal: "-", EndTxn: "-", AddPartitions: "-", TxnOffsetCommit: "-", Fetch: "-",
		Markers: "-", MarkersPerCommit: "-", Fsyncs: "-", Duplicates: "-", Transactions: "-"}
	if metrics.Seconds <= 0 {
		return row // no figures: the warnings say why
	}
	for _, api := range metrics.APIs {
		switch api.API {
		case "Produce":
			row.ProduceRequests, row.ProduceTotal = fmt.Sprintf("%.0f", api.Requests), shortMillis(api.TotalMs)
			row.Parts = produceParts(api)
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
	row.Markers = fmt.Sprintf("%.0f", metrics.MarkersWritten)
	if metrics.MarkersPerCommit != nil {
		row.MarkersPerCommit = fmt.Sprintf("%.2f", *metrics.MarkersPerCommit)
	}
	if metrics.FsyncsPerSecond != nil {
		row.Fsyncs = fmt.Sprintf("%.1f", *metrics.FsyncsPerSecond)
	}
	row.Duplicates = fmt.Sprintf("%.0f", metrics.DuplicatesDropped)
	row.Transactions = fmt.Sprintf("%.0f / %.0f", metrics.TransactionsCommitted, metrics.TransactionsAborted)
	return row
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
