package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// SummaryCSVHeader is the header row of WriteSummaryCSV: the wide
// summary's columns, with units in the names.
var SummaryCSVHeader = []string{"run", "mode", "fault_plan", "status", "records_per_second", "megabytes_per_second", "ratio_to_baseline",
	"ack_p50_ms", "ack_p99_ms", "ack_p999_ms", "ack_max_ms", "uncorrected_ack_p999_ms", "uncorrected_ack_max_ms",
	"e2e_p50_ms", "e2e_p99_ms", "sent", "acknowledged", "lost", "duplicated", "reordered",
	"aborted_read_committed", "aborted_read_uncommitted", "inconsistent_offsets", "poll_skips", "poll_moves_back",
	"ambiguous_present", "reason"}

// WriteSummaryCSV writes the runs of results as CSV: SummaryCSVHeader,
// then one row per run with every column of the wide summary. A figure
// that was not measured (no consumers, no such reader, unpaced) is an
// empty cell, not "-".
func WriteSummaryCSV(w io.Writer, results *Results) error {
	out := csv.NewWriter(w)
	if err := out.Write(SummaryCSVHeader); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	for _, run := range results.Runs {
		produce, endToEnd := run.Latency[LatencyProduceAck], run.Latency[LatencyEndToEnd]
		uncorrected := run.Latency[LatencyProduceAckUncorrected]
		t := checkTotals(run.Checks)
		count := func(n uint64, judged bool) string {
			if !judged {
				return ""
			}
			return strconv.FormatUint(n, 10)
		}
		row := []string{run.Name, run.Mode, run.FaultPlan, run.Status,
			csvNumber(run.Throughput.RecordsPerSecond, 1), csvNumber(run.Throughput.MegabytesPerSecond, 3), csvNumber(run.Throughput.RatioToBaseline, 4),
			csvMillis(produce.Percentile(50)), csvMillis(produce.Percentile(99)), csvMillis(produce.Percentile(99.9)), csvMillis(produce.Percentile(100)),
			csvMillis(uncorrected.Percentile(99.9)), csvMillis(uncorrected.Percentile(100)),
			csvMillis(endToEnd.Percentile(50)), csvMillis(endToEnd.Percentile(99)),
			strconv.FormatUint(run.Producers.Sent, 10), strconv.FormatUint(run.Producers.Acknowledged, 10),
			csvCount(t.lost), csvCount(t.duplicated), csvCount(t.reordered),
			count(t.committedAborted, t.sawCommitted || t.sawPolls), count(t.uncommittedAborted, t.sawUncommitted),
			csvCount(t.inconsistent), count(t.skips, t.sawPolls), count(t.backs, t.sawPolls),
			csvCount(t.ambiguous), run.Reason}
		if err := out.Write(row); err != nil {
			return fmt.Errorf("write csv: %w", err)
		}
	}
	out.Flush()
	if err := out.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// csvNumber is value with decimals, or empty when not measured.
func csvNumber(value float64, decimals int) string {
	if value <= 0 {
		return ""
	}
	return strconv.FormatFloat(value, 'f', decimals, 64)
}

// csvMillis is a latency in ms, or empty when not measured.
func csvMillis(value float64) string {
	if value < 0 {
		return ""
	}
	return strconv.FormatFloat(value, 'f', 3, 64)
}

// csvCount is a count the checker always judges.
func csvCount(n uint64) string { return strconv.FormatUint(n, 10) }
