package loadgen

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// remoteWorkload is the smoke workload for runs with load workers: 3000
// records of 3 producers, at a fixed rate so that each worker has a
// share of it to keep.
func remoteWorkload(t *testing.T, modeNames ...string) Workload {
	workload := smokeWorkload(t)
	workload.Modes = modeNames
	workload.Producers = 3
	workload.Rate = 1500
	return workload
}

// TestThreeWorkersThroughACommandTransport runs the load's producers in 3
// worker processes started through --worker-exec: two run the binary
// directly, the third through a `sh -c` wrapper script (the transport is
// only a command). Every mode passes the same checks as in process, and
// the merged figures are the sums of the workers' parts: acknowledged
// records, measured records and the produce-ack histogram's count.
func TestThreeWorkersThroughACommandTransport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Each launch notes itself in launched: the plain launcher execs the
	// binary, the other wraps it in sh -c.
	launched, direct, viaShell := filepath.Join(dir, "launched"), filepath.Join(dir, "direct"), filepath.Join(dir, "via-sh-c")
	scripts := map[string]string{
		direct:   fmt.Sprintf("#!/bin/sh\necho direct >> %s\nexec %s \"$@\"\n", launched, os.Args[0]),
		viaShell: fmt.Sprintf("#!/bin/sh\necho sh-c >> %s\nexec sh -c 'exec \"$0\" \"$@\"' %s \"$@\"\n", launched, os.Args[0]),
	}
	for path, script := range scripts {
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	workload := remoteWorkload(t, ModeAtLeastOnce, ModeIdempotent, ModeTransactional, ModeEOSPipeline, ModeConsumerDedup)
	transport := WorkerTransport{Count: 3, Exec: []string{"{host}", "loadgen", "worker"}, Hosts: []string{direct, direct, viaShell}}
	results := runSuiteWith(t, Options{Workload: workload,
		Target: newQuickGroupsEmbedded(t), Self: testSelf(), Workers: transport})
	for _, run := range results.Runs {
		if run.Status != report.StatusPass {
			t.Errorf("%s: %s: %s", run.Name, run.Status, run.Reason)
			continue
		}
		if run.Mode != ModeConsumerDedup { // its checks are the table's
			assertRunVerdict(t, run)
			liveChecked := slices.ContainsFunc(run.Checks, func(check report.Check) bool {
				return check.Reader == report.PollReader && check.Consumers == consumersLive && check.Counts.Read > 0
			})
			if e2e := run.Latency[report.LatencyEndToEnd]; !liveChecked || e2e == nil || e2e.Count == 0 {
				t.Errorf("%s: the live consumers in workers: polls checked %v, end-to-end latency %+v", run.Name, liveChecked, e2e)
			}
		}
		if len(run.Workers) != 3 {
			t.Fatalf("%s: %d worker shares, want 3", run.Name, len(run.Workers))
		}
		var acked, measured, histogram int64
		var producers []uint32
		for _, share := range run.Workers {
			if share.Status != report.WorkerOK || share.Acknowledged == 0 || share.ProduceAck == nil || share.TargetRecordsPerSecond != 500 {
				t.Errorf("%s: worker %d: %+v", run.Name, share.Index, share)
				continue
			}
			acked += share.Acknowledged
			measured += share.Measured
			histogram += share.ProduceAck.Count
			producers = append(producers, share.Producers...)
		}
		if !strings.HasSuffix(run.Workers[2].Command, "via-sh-c loadgen worker") {
			t.Errorf("%s: worker 2 ran %q, want the sh -c wrapper", run.Name, run.Workers[2].Command)
		}
		if slices.Sort(producers); !slices.Equal(producers, []uint32{0, 1, 2}) {
			t.Errorf("%s: the workers ran producers %v, want 0, 1 and 2 once each", run.Name, producers)
		}
		merged := run.Latency[report.LatencyProduceAck]
		if uint64(acked) != run.Producers.Acknowledged || merged == nil || histogram != merged.Count || measured != merged.Count {
			t.Errorf("%s: workers acked %d, measured %d, histogram counts %d; merged: ledger acked %d, histogram %+v",
				run.Name, acked, measured, histogram, run.Producers.Acknowledged, merged)
		}
	}
	// 3 load workers a mode, the consume stages' workers (eos-pipeline,
	// consumer-dedup) and the live consumers (every mode but
	// consumer-dedup's, which measures at its database commits) through
	// the same transport: 2 of every 3 direct.
	text, err := os.ReadFile(launched)
	if err != nil {
		t.Fatal(err)
	}
	want := 3*len(workload.Modes) + 2*workload.Pipeline.Workers + (len(workload.Modes)-1)*min(workload.Consumers, workload.Partitions)
	if lines := strings.Count(string(text), "\n"); lines != want || strings.Count(string(text), "sh-c") < len(workload.Modes) {
		t.Errorf("%d launches through the transport (%d through sh -c), want %d", lines, strings.Count(string(text), "sh-c"), want)
	}
}

// A load worker killed mid-run is reported, by number and command, and
// fails the run: its records after its last report are unknown.
func TestKilledLoadWorkerIsReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	workload := remoteWorkload(t, ModeIdempotent)
	workload.Rate = 300 // 10 s at 300/s for the 3000 records: time to kill one
	workload.Duration = Duration(10 * time.Second)
	// The wrapper notes its pid, then becomes the worker (exec keeps it).
	transport := WorkerTransport{Count: 2, Exec: []string{"sh", "-c", `echo $$ > ` + dir + `/pid-{i}; exec "$0" loadgen worker`, os.Args[0]}}
	go func() {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			text, err := os.ReadFile(filepath.Join(dir, "pid-1"))
			if err != nil || !strings.HasSuffix(string(text), "\n") {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(text)))
			if err != nil {
				t.Errorf("pid file %q", text)
				return
			}
			time.Sleep(3 * time.Second) // mid-run
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return
		}
		t.Error("worker 1 never started")
	}()
	results := runSuiteWith(t, Options{Workload: workload, Target: newQuickGroupsEmbedded(t), Self: testSelf(), Workers: transport})
	run := results.Runs[0]
	if run.Status == report.StatusPass || !strings.Contains(run.Reason, "load worker 1, running producers 2, died") ||
		!strings.Contains(run.Reason, "signal: killed") {
		t.Errorf("status %s, reason %q: want the killed worker named", run.Status, run.Reason)
	}
	if len(run.Workers) != 2 || run.Workers[1].Status != report.WorkerDied || run.Workers[0].Status != report.WorkerOK {
		t.Errorf("worker shares %+v", run.Workers)
	}
}

// The checker judges the union of the workers' ledgers: a duplicate that
// one worker writes is caught.
func TestDuplicateFromOneWorkerIsCaught(t *testing.T) {
	t.Parallel()
	results := runSuiteWith(t, Options{Workload: remoteWorkload(t, ModeIdempotent), Target: newQuickGroupsEmbedded(t),
		Self: testSelf(), Workers: WorkerTransport{Count: 2}, duplicateOnce: true})
	run := results.Runs[0]
	var duplicated []uint64
	for _, check := range run.Checks {
		if check.Reader != report.PollReader {
			duplicated = append(duplicated, check.Counts.Duplicated)
		}
	}
	if run.Status != report.StatusFail || len(duplicated) == 0 || slices.ContainsFunc(duplicated, func(n uint64) bool { return n != 1 }) {
		t.Errorf("status %s (%s), duplicated per read-back %v: want a failed run with 1 duplicate", run.Status, run.Reason, duplicated)
	}
}

// A worker that cannot keep its share of a fixed rate is flagged as the
// limit of the run: here one worker is asked for far more than any
// client on this machine sends.
func TestWorkerBehindItsShareIsFlagged(t *testing.T) {
	t.Parallel()
	workload := remoteWorkload(t, ModeAtLeastOnce)
	workload.Rate, workload.Records, workload.Duration = 5_000_000, 20_000_000, Duration(2*time.Second)
	results := runSuiteWith(t, Options{Workload: workload, Target: newQuickGroupsEmbedded(t), Self: testSelf(), Workers: WorkerTransport{Count: 1}})
	run := results.Runs[0]
	if len(run.Workers) != 1 {
		t.Fatalf("status %s (%s): %d worker shares", run.Status, run.Reason, len(run.Workers))
	}
	share := run.Workers[0]
	if run.Status != report.StatusPass || share.Status != report.WorkerBehind || !strings.Contains(share.Note, "the limit was this client, not the cluster") {
		t.Errorf("run %s (%s), worker %+v: want it flagged behind", run.Status, run.Reason, share)
	}
}

// A summary with a histogram that does not decode is refused whole:
// none of its counts are added.
func TestCorruptSummaryAddsNothing(t *testing.T) {
	metrics := newRunMetrics(time.Now())
	good := newRunMetrics(time.Now())
	good.recordAck(ackTimes{sent: time.Now().Add(time.Second)}, time.Now().Add(2*time.Second), 100)
	summary := good.takeSummary()
	summary.Histograms[summaryCommit] = []byte{1, 2}
	if _, err := metrics.mergeSummary(summary); err == nil || !strings.Contains(err.Error(), "commit histogram does not decode") {
		t.Fatalf("merge: %v", err)
	}
	if metrics.ackedAll.Load() != 0 || metrics.produceAck.TotalCount() != 0 {
		t.Errorf("a refused summary added %d acks, %d latencies", metrics.ackedAll.Load(), metrics.produceAck.TotalCount())
	}
	delete(summary.Histograms, summaryCommit)
	if _, err := metrics.mergeSummary(summary); err != nil || metrics.ackedAll.Load() != 1 || metrics.produceAck.TotalCount() != 1 {
		t.Errorf("the good summary: %v, %d acks, %d latencies", err, metrics.ackedAll.Load(), metrics.produceAck.TotalCount())
	}
}
