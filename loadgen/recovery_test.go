package loadgen

import (
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// steadyTimeline is n steps of perStep acknowledged records each.
func steadyTimeline(n int, perStep int64) []int64 {
	timeline := make([]int64, n)
	for i := range timeline {
		timeline[i] = perStep
	}
	return timeline
}

func mustPlan(t *testing.T, name string) faults.Plan {
	t.Helper()
	plan, err := faults.LoadPlan(name)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestRecoveryAfterAKill: 100 records a step, nothing for 1.5 s after a
// kill at 4 s, then steady again: the run is back 1.5 s after the kill
// (the first full window at the old level), the lowest window empty.
func TestRecoveryAfterAKill(t *testing.T) {
	t.Parallel()
	timeline := steadyTimeline(100, 100) // 10 s
	for i := 40; i < 55; i++ {
		timeline[i] = 0
	}
	events := []report.FaultEvent{{ElapsedSeconds: 4.0, Kind: string(faults.KindKill)},
		{ElapsedSeconds: 5.0, Kind: string(faults.KindRestart)}}
	recovery := recoveryOf(mustPlan(t, "broker-restart"), timeline, events, 10*time.Second)
	if len(recovery.Faults) != 1 {
		t.Fatalf("faults %+v: want the kill only (a restart is its end, not a fault)", recovery.Faults)
	}
	got := recovery.Faults[0]
	if got.Seconds != 1.5 || recovery.WorstSeconds != 1.5 || got.BeforeRecordsPerSecond != 1000 || got.LowestRecordsPerSecond != 0 {
		t.Errorf("recovery %+v (worst %v): want 1.5 s from 1000 rec/s down to 0", got, recovery.WorstSeconds)
	}
	if text := recovery.Text(); text != "1.5 s" {
		t.Errorf("text %q", text)
	}
}

// TestRecoveryWithoutADip: a fault the throughput never noticed recovers
// in 0; one it never came back from by the end of the load is "not back"
// (-1), and the flush after the load's end is not a dip.
func TestRecoveryWithoutADip(t *testing.T) {
	t.Parallel()
	plan := mustPlan(t, "broker-restart")
	events := []report.FaultEvent{{ElapsedSeconds: 4.0, Kind: string(faults.KindKill)}}
	timeline := append(steadyTimeline(80, 100), steadyTimeline(20, 0)...) // load ends at 8 s, then nothing
	if recovery := recoveryOf(plan, timeline, events, 8*time.Second); recovery.WorstSeconds != 0 || recovery.Faults[0].Seconds != 0 {
		t.Errorf("no dip: %+v", recovery)
	}
	down := steadyTimeline(80, 100)
	for i := 40; i < 80; i++ {
		down[i] = 50 // half the level until the end of the load
	}
	recovery := recoveryOf(plan, down, events, 8*time.Second)
	if recovery.WorstSeconds != -1 || recovery.Text() != "not back" {
		t.Errorf("never back: %+v", recovery)
	}
}

// TestRecoveryOfContinuousAndConsumeSideFaults: lost acks have no moment
// to recover from; a crashed consumer does not touch the producers;
// without faults there is nothing to say.
func TestRecoveryOfContinuousAndConsumeSideFaults(t *testing.T) {
	t.Parallel()
	timeline := steadyTimeline(50, 100)
	drops := []report.FaultEvent{{ElapsedSeconds: 1, Kind: string(faults.KindDropResponse)}}
	if recovery := recoveryOf(mustPlan(t, "ack-loss"), timeline, drops, 5*time.Second); !recovery.Continuous || recovery.Text() != "continuous" {
		t.Errorf("ack-loss: %+v", recovery)
	}
	crash := []report.FaultEvent{{ElapsedSeconds: 3, Kind: string(faults.KindConsumerCrash)}}
	if recovery := recoveryOf(mustPlan(t, "consumer-crash"), timeline, crash, 5*time.Second); !recovery.ConsumeSide {
		t.Errorf("consumer-crash: %+v", recovery)
	}
	if recovery := recoveryOf(mustPlan(t, "none"), timeline, nil, 5*time.Second); recovery != nil {
		t.Errorf("no faults: %+v", recovery)
	}
}

// TestCountAbove counts the values of a histogram above a limit.
func TestCountAbove(t *testing.T) {
	t.Parallel()
	histogram := report.NewLatencyHistogram()
	for _, micros := range []int64{500, 900_000, 1_200_000, 3_000_000, 3_000_000} {
		if err := histogram.RecordValue(micros); err != nil {
			t.Fatal(err)
		}
	}
	if got := countAbove(histogram, time.Second); got != 3 {
		t.Errorf("count above 1 s: %d, want 3", got)
	}
}
