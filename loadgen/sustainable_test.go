package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/findmax"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// TestFindMaxAgainstKfake runs a short search (three steps per mode) of
// at-least-once and transactional against kfake: every step is a real,
// verified run at its rate; at these low rates each holds, so each
// search doubles twice and reports its last step, and the ratio to
// at-least-once is filled.
func TestFindMaxAgainstKfake(t *testing.T) {
	workload, err := LoadWorkload("find-max")
	if err != nil {
		t.Fatal(err)
	}
	workload.Modes = []string{modes.AtLeastOnce, modes.Transactional}
	workload.Warmup, workload.Duration, workload.Consumers = 0, Duration(time.Second), 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var observed []string
	searched, err := FindMax(ctx, FindMaxOptions{
		Options: Options{Workload: workload, Target: newKfakeTarget(t)},
		Search:  findmax.Config{Start: 100, MaxSteps: 3, MaxP99: time.Second},
		Observe: func(name string, step findmax.Step) { observed = append(observed, name) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if searched.Target.Kind != TargetKfake || len(searched.Modes) != 2 || len(observed) != 6 {
		t.Fatalf("target %s, %d modes, %d steps observed; want kfake, 2, 6", searched.Target.Kind, len(searched.Modes), len(observed))
	}
	for i, name := range []string{modes.AtLeastOnce, modes.Transactional + "@100ms"} {
		mode := searched.Modes[i]
		if mode.Name != name || len(mode.Steps) != 3 || mode.Stopped != findmax.StoppedMaxSteps {
			t.Fatalf("mode %d: %s, %d steps, stopped %q; want %s, 3, max-steps", i, mode.Name, len(mode.Steps), mode.Stopped, name)
		}
		for j, step := range mode.Steps {
			want := 100 << j
			if step.TargetRecordsPerSecond != want || !step.Held || step.Status != report.StatusPass || step.P99Millis <= 0 {
				t.Errorf("%s step %d: %+v; want target %d, held, pass, a p99", name, j, step, want)
			}
			// A producer may send one record at its deadline: up to 2 more
			// per second of the 1 s step.
			if step.AchievedRecordsPerSecond < 0.99*float64(want) || step.AchievedRecordsPerSecond > 1.01*float64(want)+2 {
				t.Errorf("%s step %d: achieved %.1f at target %d", name, j, step.AchievedRecordsPerSecond, want)
			}
		}
		if mode.SustainableRecordsPerSecond != 400 || mode.RatioToBaseline <= 0 {
			t.Errorf("%s: sustainable %d ratio %.2f; want 400 and a ratio", name, mode.SustainableRecordsPerSecond, mode.RatioToBaseline)
		}
	}
}
