package loadgen

import (
	"fmt"
	"io"
	"time"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// progress prints a live status line about once per second and samples the
// run's throughput time series. Its fields are owned by the goroutine
// running run; series may be read after run returns.
type progress struct {
	out      io.Writer // nil: no live line, only sampling
	terminal bool      // rewrite one line with \r instead of printing lines
	name     string
	start    time.Time
	planned  time.Duration
	metrics  *runMetrics
	faults   func() int64 // faults fired so far (shared, safe to call)
	series   []report.Sample
}

// run samples every second until stop is closed, then prints a final line.
func (p *progress) run(stop <-chan struct{}) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	lastTick, lastRecords, lastBytes := p.start, int64(0), int64(0)
	for {
		select {
		case <-stop:
			if p.out != nil && p.terminal {
				fmt.Fprint(p.out, "\r\033[K")
			}
			return
		case now := <-ticker.C:
			records, bytes := p.metrics.ackedAll.Load(), p.metrics.ackedAllBytes.Load()
			seconds := now.Sub(lastTick).Seconds()
			sample := report.Sample{
				ElapsedSeconds:     now.Sub(p.start).Seconds(),
				RecordsPerSecond:   float64(records-lastRecords) / seconds,
				MegabytesPerSecond: float64(bytes-lastBytes) / seconds / 1e6,
				P99Milliseconds:    p.metrics.takeWindowP99(),
			}
			p.series = append(p.series, sample)
			lastTick, lastRecords, lastBytes = now, records, bytes
			p.print(sample)
		}
	}
}

func (p *progress) print(sample report.Sample) {
	if p.out == nil {
		return
	}
	line := fmt.Sprintf("[%s] %5.1fs/%.0fs  %9.0f rec/s  %7.1f MB/s  p99 %7.2f ms  errors %d  retries %d  faults %d",
		p.name, sample.ElapsedSeconds, p.planned.Seconds(), sample.RecordsPerSecond, sample.MegabytesPerSecond,
		sample.P99Milliseconds, p.metrics.errors.Load(), p.metrics.retries.Load(), p.faultCount())
	if p.terminal {
		fmt.Fprint(p.out, "\r\033[K"+line)
		return
	}
	fmt.Fprintln(p.out, line)
}

func (p *progress) faultCount() int64 {
	if p.faults == nil {
		return 0
	}
	return p.faults()
}
