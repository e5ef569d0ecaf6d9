package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// stallWorkload runs at-least-once and transactional at a fixed rate of
// 1000 records/s for 6 s against a broker subprocess that a plan pauses
// (SIGSTOP) 2 s into the load for 2 s, then resumes (SIGCONT).
func stallWorkload(t *testing.T) Workload {
	t.Helper()
	pausePlan := filepath.Join(t.TempDir(), "pause-2s.yaml")
	plan := "name: pause-2s\nseed: 1\nprocesses:\n  - action: pause\n    after: 2s\n    down: 2s\n"
	if err := os.WriteFile(pausePlan, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	workload, err := LoadWorkload("quick")
	if err != nil {
		t.Fatal(err)
	}
	workload.Rate, workload.Producers, workload.Consumers = 1000, 1, 0
	workload.Records = 100_000 // the duration ends the load, not the budget
	workload.Warmup, workload.Duration = Duration(500*time.Millisecond), Duration(6*time.Second)
	workload.Faults = []MatrixEntry{{Plan: pausePlan, Modes: []string{ModeAtLeastOnce, ModeTransactional}}}
	workload.Overhead = nil // the matrix only, not its cost rounds
	if err := workload.Validate(); err != nil {
		t.Fatal(err)
	}
	return workload
}

// TestStalledBrokerShowsInScheduledLatency: a broker paused for 2 s
// during a fixed-rate run must show in the produce-ack latency counted
// from the scheduled send times: its p99.9 and maximum at least 1.5 s.
// The uncorrected latency (from when each record was handed to the
// client) need not show it: a transactional producer blocked in its
// commit creates the records it owes only after the broker resumes. Both
// figures are logged, and for the transactional run the test asserts that
// the uncorrected figure hides most of the stall: far fewer records at
// 500 ms or more.
func TestStalledBrokerShowsInScheduledLatency(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a broker subprocess for two 6 s runs")
	}
	target, err := StartTarget(t.Context(), TargetConfig{Kind: TargetEmbedded, DataDir: t.TempDir(),
		StartEmbedded: func(ctx context.Context, dataDir string) (Target, error) { return startEmbeddedWith(ctx, dataDir, nil) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The runner launches the broker subprocess for the plan's pause and
	// stops it by its pid when the run ends.
	results, err := Run(ctx, Options{Workload: stallWorkload(t), Target: target, Self: testSelf()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var summary strings.Builder
	if err := report.WriteSummary(&summary, results); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + summary.String())
	const stall = 1500.0 // ms
	for _, run := range results.Runs {
		kinds := map[string]int{}
		for _, event := range run.FaultEvents {
			kinds[event.Kind]++
		}
		if run.Status != report.StatusPass || kinds[string(faults.KindPause)] != 1 || kinds[string(faults.KindResume)] != 1 {
			t.Errorf("%s: %s (%s), fault events %v: want a pass with one pause and one resume", run.Name, run.Status, run.Reason, kinds)
			continue
		}
		corrected, uncorrected := run.Latency[report.LatencyProduceAck], run.Latency[report.LatencyProduceAckUncorrected]
		if corrected == nil || uncorrected == nil {
			t.Errorf("%s: latencies %v: want produce_ack and produce_ack_uncorrected", run.Name, run.Latency)
			continue
		}
		t.Logf("%s: produce-ack p99.9 / max from the scheduled send time %.1f / %.1f ms; uncorrected %.1f / %.1f ms (%d records)",
			run.Name, corrected.Percentile(99.9), corrected.MaxMillis, uncorrected.Percentile(99.9), uncorrected.MaxMillis, corrected.Count)
		if run.LatencyOrigin != report.LatencyFromSchedule {
			t.Errorf("%s: latency origin %q, want %q", run.Name, run.LatencyOrigin, report.LatencyFromSchedule)
		}
		if corrected.Percentile(99.9) < stall || corrected.MaxMillis < stall {
			t.Errorf("%s: p99.9 %.1f ms, max %.1f ms from the scheduled send time: the 2 s stall does not show (want >= %.0f ms)",
				run.Name, corrected.Percentile(99.9), corrected.MaxMillis, stall)
		}
		slowCorrected, slowUncorrected := recordsAtLeast(t, corrected, 500), recordsAtLeast(t, uncorrected, 500)
		t.Logf("%s: records at 500 ms or more: %d from the scheduled send time, %d uncorrected", run.Name, slowCorrected, slowUncorrected)
		if run.Mode == ModeTransactional && slowCorrected < 5*max(slowUncorrected, 1) {
			t.Errorf("%s: %d records at >= 500 ms from the scheduled send time, %d uncorrected: the correction does not count the records the blocked producer owed",
				run.Name, slowCorrected, slowUncorrected)
		}
		if corrected.Count != uncorrected.Count || corrected.MaxMillis < uncorrected.MaxMillis {
			t.Errorf("%s: corrected %d records max %.1f ms, uncorrected %d records max %.1f ms: want the same records, corrected >= uncorrected",
				run.Name, corrected.Count, corrected.MaxMillis, uncorrected.Count, uncorrected.MaxMillis)
		}
	}
}

// recordsAtLeast counts the records of h at ms milliseconds or more, from
// its encoded HdrHistogram.
func recordsAtLeast(t *testing.T, h *report.Histogram, ms float64) int64 {
	t.Helper()
	decoded, err := hdrhistogram.Decode([]byte(h.Encoded))
	if err != nil {
		t.Fatalf("decode histogram: %v", err)
	}
	var count int64
	for _, bar := range decoded.Distribution() {
		if float64(bar.From) >= ms*1000 {
			count += bar.Count
		}
	}
	return count
}

// TestPacerKeepsItsScheduleWhenBehind: a producer that fell behind gets
// the due times of its schedule, not the time it asks, and its records
// carry them; an unpaced producer's records carry their creation time,
// and a record the pacer let go early carries the creation time too.
func TestPacerKeepsItsScheduleWhenBehind(t *testing.T) {
	t.Parallel()
	start := time.Now().Add(-time.Second) // a second behind
	behind := newPacer(1000, start)
	for i := range 5 {
		due, err := behind.wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if want := start.Add(time.Duration(i) * time.Millisecond); !due.Equal(want) {
			t.Fatalf("record %d due %v, want %v: the schedule moved", i, due, want)
		}
		if now := time.Now(); !sendTimeOf(due, now).Equal(due) {
			t.Errorf("record %d: send time %v, want its due time %v", i, sendTimeOf(due, now), due)
		}
	}
	now := time.Now()
	if got := sendTimeOf(time.Time{}, now); !got.Equal(now) {
		t.Errorf("unpaced send time %v, want the creation %v", got, now)
	}
	if early := now.Add(500 * time.Microsecond); !sendTimeOf(early, now).Equal(now) {
		t.Errorf("early record: send time %v, want the creation %v", sendTimeOf(early, now), now)
	}
	var unpaced pacer
	if due, err := unpaced.wait(t.Context()); err != nil || !due.IsZero() || unpaced.paced() {
		t.Errorf("unpaced pacer: due %v, err %v, paced %v", due, err, unpaced.paced())
	}
}
