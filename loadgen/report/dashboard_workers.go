package report

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// workersTable is the dashboard's load-workers section for one results
// file: each run whose producers ran in worker processes, the merged
// figures first, then each worker's share.
type workersTable struct {
	File *fileView
	Runs []workersRun
}

// workersRun is one run's merged row and its workers' rows.
type workersRun struct {
	Run, Status              string
	Rate, Target, Acked, P99 string
	Workers                  []workerRow
	Behind, Died             int
}

// workerRow is one worker's share of a run.
type workerRow struct {
	Index                                      int
	Where, Producers, Status, Note             string
	Rate, Target, Acked, P99, CPU, StreamShare string
	Flagged                                    bool
}

// workersTables builds the section for every file with a run of load
// workers.
func workersTables(files []*fileView) []workersTable {
	var tables []workersTable
	for _, file := range files {
		table := workersTable{File: file}
		for _, run := range file.Results.Runs {
			if len(run.Workers) == 0 {
				continue
			}
			merged := workersRun{Run: run.Name, Status: run.Status, Rate: number(run.Throughput.RecordsPerSecond, 0),
				Acked: fmt.Sprint(run.Producers.Acknowledged), P99: p99Text(run.Latency[LatencyProduceAck])}
			var target float64
			for _, share := range run.Workers {
				target += share.TargetRecordsPerSecond
				row := workerRow{Index: share.Index, Where: share.Host, Producers: ProducerRange(share.Producers), Status: share.Status,
					Note: share.Note, Rate: number(share.RecordsPerSecond, 0), Target: targetText(share.TargetRecordsPerSecond),
					Acked: fmt.Sprint(share.Acknowledged), P99: p99Text(share.ProduceAck), CPU: orDash(""), StreamShare: orDash(""),
					Flagged: share.Status != WorkerOK}
				if row.Where == "" {
					row.Where = share.Command
				}
				if share.CPUSeconds > 0 {
					row.CPU = number(share.CPUSeconds, 1)
					row.StreamShare = fmt.Sprintf("%.2f%%", 100*share.StreamCPUShare)
				}
				switch share.Status {
				case WorkerBehind:
					merged.Behind++
				case WorkerDied:
					merged.Died++
				}
				merged.Workers = append(merged.Workers, row)
			}
			merged.Target = targetText(target)
			table.Runs = append(table.Runs, merged)
		}
		if len(table.Runs) > 0 {
			tables = append(tables, table)
		}
	}
	return tables
}

func p99Text(h *Histogram) string {
	return millis(h.Percentile(99))
}

func targetText(rate float64) string {
	if rate <= 0 {
		return "unpaced"
	}
	return number(rate, 0)
}

// ProducerRange names a contiguous share of producers: "3" or "3–5".
func ProducerRange(producers []uint32) string {
	switch len(producers) {
	case 0:
		return "–"
	case 1:
		return fmt.Sprint(producers[0])
	}
	return fmt.Sprintf("%d–%d", producers[0], producers[len(producers)-1])
}

// WriteWorkers prints, for each run whose producers ran in load workers,
// the merged figures and each worker's share (nothing for other results).
func WriteWorkers(w io.Writer, results *Results) error {
	tables := workersTables([]*fileView{{Results: results}})
	if len(tables) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nload workers: merged figures, then each worker's share")
	table := tabwriter.NewWriter(&lineTrimmer{w: w}, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "run / worker\twhere\tproducers\tstatus\trecords/s\ttarget\tacknowledged\tack p99 ms\tcpu s\treports' cpu")
	for _, run := range tables[0].Runs {
		status := run.Status
		if run.Behind > 0 {
			status += fmt.Sprintf(", %d behind", run.Behind)
		}
		if run.Died > 0 {
			status += fmt.Sprintf(", %d died", run.Died)
		}
		fmt.Fprintf(table, "%s (merged)\t\t\t%s\t%s\t%s\t%s\t%s\t\t\n", run.Run, status, run.Rate, run.Target, run.Acked, run.P99)
		for _, worker := range run.Workers {
			fmt.Fprintf(table, "  worker %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", worker.Index, worker.Where, worker.Producers, worker.Status,
				worker.Rate, worker.Target, worker.Acked, worker.P99, worker.CPU, worker.StreamShare)
		}
	}
	if err := table.Flush(); err != nil {
		return fmt.Errorf("write workers: %w", err)
	}
	for _, run := range tables[0].Runs {
		for _, worker := range run.Workers {
			if worker.Note != "" {
				fmt.Fprintf(w, "%s worker %d: %s\n", run.Run, worker.Index, worker.Note)
			}
		}
	}
	return nil
}
