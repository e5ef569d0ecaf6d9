package findmax

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// capacityStep is a fake cluster that sustains exactly capacity records/s:
// at or under it a step achieves its rate with a low p99; above it the
// step falls behind (achieves capacity) and queues (p99 200 ms).
func capacityStep(capacity int, calls *[]int) StepFunc {
	return func(_ context.Context, rate int) (Measurement, error) {
		*calls = append(*calls, rate)
		if rate <= capacity {
			return Measurement{Achieved: float64(rate), P99: 5 * time.Millisecond}, nil
		}
		return Measurement{Achieved: float64(capacity), P99: 200 * time.Millisecond}, nil
	}
}

// checkInvariants checks what every search must keep: the answer is the
// target of a held step and the highest one; every step after the first
// was strictly between the highest held and the lowest failed rate
// before it; Failed is the lowest failed rate above the answer.
func checkInvariants(t *testing.T, result Result) {
	t.Helper()
	held, failed := 0, 0
	answerHeld := result.Sustainable == 0
	for i, step := range result.Steps {
		retry := step.Attempt > 1
		if retry && (step.Target != result.Steps[i-1].Target || result.Steps[i-1].Held || step.Attempt != result.Steps[i-1].Attempt+1) {
			t.Errorf("step %d: attempt %d at %d after %+v", i, step.Attempt, step.Target, result.Steps[i-1])
		}
		if !retry && i > 0 && (step.Target <= held || (failed != 0 && step.Target >= failed)) {
			t.Errorf("step %d tried %d, outside (%d, %d)", i, step.Target, held, failed)
		}
		// A rate fails once its last attempt failed: when the next step is
		// not a retry of it.
		lastAttempt := i+1 == len(result.Steps) || result.Steps[i+1].Attempt == 1
		if step.Held {
			held = max(held, step.Target)
			if step.Target == result.Sustainable {
				answerHeld = true
			}
		} else if lastAttempt && (failed == 0 || step.Target < failed) {
			failed = step.Target
		}
	}
	if !answerHeld || held != result.Sustainable {
		t.Errorf("answer %d is not the highest held step (%d): %+v", result.Sustainable, held, result.Steps)
	}
	if failed != result.Failed {
		t.Errorf("Failed %d, want the lowest failed step %d", result.Failed, failed)
	}
}

func TestSearchFindsCapacityWithinPrecisionNeverAbove(t *testing.T) {
	for _, capacity := range []int{1, 7, 999, 1000, 1001, 1500, 4096, 37_000, 123_456, 2_000_001} {
		var calls []int
		config := Config{Start: 1000, Precision: 0.05, MaxSteps: 64, MaxP99: 50 * time.Millisecond}
		result := Search(context.Background(), config, capacityStep(capacity, &calls), nil)
		checkInvariants(t, result)
		if result.Sustainable > capacity {
			t.Errorf("capacity %d: reported %d, above the capacity (steps %v)", capacity, result.Sustainable, calls)
		}
		if float64(result.Sustainable) < float64(capacity)/1.05 {
			t.Errorf("capacity %d: reported %d, more than 5 %% under it (steps %v)", capacity, result.Sustainable, calls)
		}
		if result.Stopped != StoppedPrecision {
			t.Errorf("capacity %d: stopped %q, want %q", capacity, result.Stopped, StoppedPrecision)
		}
		if len(result.Steps) != len(calls) {
			t.Errorf("capacity %d: %d steps recorded for %d calls", capacity, len(result.Steps), len(calls))
		}
	}
}

func TestSearchStaysWithinDefaultStepBound(t *testing.T) {
	// From 1000 records/s, a capacity up to ~100 000 needs 7 doublings and
	// at most 5 bisections to reach 5 %: the default 12 steps suffice.
	for _, capacity := range []int{3000, 45_000, 100_000} {
		var calls []int
		result := Search(context.Background(), Config{}, capacityStep(capacity, &calls), nil)
		checkInvariants(t, result)
		if result.Stopped != StoppedPrecision || len(result.Steps) > Defaults().MaxSteps {
			t.Errorf("capacity %d: stopped %q after %d steps %v", capacity, result.Stopped, len(result.Steps), calls)
		}
	}
}

func TestSearchLatencyBoundAlone(t *testing.T) {
	// The rate is always achieved, but p99 passes the bound above 6000.
	step := func(_ context.Context, rate int) (Measurement, error) {
		p99 := 10 * time.Millisecond
		if rate > 6000 {
			p99 = 51 * time.Millisecond
		}
		return Measurement{Achieved: float64(rate), P99: p99}, nil
	}
	result := Search(context.Background(), Config{MaxSteps: 64}, step, nil)
	checkInvariants(t, result)
	if result.Sustainable > 6000 || result.Sustainable < 5715 {
		t.Errorf("sustainable %d, want in [5715, 6000]", result.Sustainable)
	}
}

func TestSearchNoisyStepReportsOnlyHeldRates(t *testing.T) {
	// Around the capacity the outcome flaps at random: the answer must still
	// be a rate measured as held, with the search's invariants.
	random := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		capacity := 500 + random.IntN(200_000)
		step := func(_ context.Context, rate int) (Measurement, error) {
			noisy := float64(capacity) * (0.8 + 0.4*random.Float64())
			if float64(rate) <= noisy {
				return Measurement{Achieved: float64(rate), P99: time.Millisecond}, nil
			}
			return Measurement{Achieved: noisy, P99: time.Second}, nil
		}
		result := Search(context.Background(), Config{MaxSteps: 20}, step, nil)
		checkInvariants(t, result)
		if float64(result.Sustainable) > 1.2*float64(capacity) {
			t.Errorf("trial %d: %d above anything that could hold (capacity %d)", trial, result.Sustainable, capacity)
		}
	}
}

func TestSearchBounds(t *testing.T) {
	t.Run("steps", func(t *testing.T) {
		var calls []int
		result := Search(context.Background(), Config{MaxSteps: 3}, capacityStep(1_000_000, &calls), nil)
		checkInvariants(t, result)
		if len(calls) != 3 || result.Stopped != StoppedMaxSteps || result.Sustainable != 4000 || result.Failed != 0 {
			t.Errorf("steps %v, stopped %q, sustainable %d, failed %d", calls, result.Stopped, result.Sustainable, result.Failed)
		}
	})
	t.Run("budget", func(t *testing.T) {
		// Each step takes 10 s of a fake clock; with 35 s, a fourth step
		// would end at 40 s: three run.
		now := time.Unix(0, 0)
		clock := func() time.Time { return now }
		var calls []int
		inner := capacityStep(1_000_000, &calls)
		step := func(ctx context.Context, rate int) (Measurement, error) {
			now = now.Add(10 * time.Second)
			return inner(ctx, rate)
		}
		result := Search(context.Background(), Config{Budget: 35 * time.Second, Now: clock}, step, nil)
		if len(calls) != 3 || result.Stopped != StoppedBudget || result.Steps[0].Took != 10*time.Second {
			t.Errorf("steps %v, stopped %q, took %v", calls, result.Stopped, result.Steps[0].Took)
		}
	})
	t.Run("max rate", func(t *testing.T) {
		var calls []int
		result := Search(context.Background(), Config{MaxRate: 5000}, capacityStep(1_000_000, &calls), nil)
		if result.Sustainable != 5000 || result.Stopped != StoppedMaxRate {
			t.Errorf("steps %v, stopped %q, sustainable %d", calls, result.Stopped, result.Sustainable)
		}
	})
	t.Run("none held", func(t *testing.T) {
		var calls []int
		result := Search(context.Background(), Config{MaxSteps: 64}, capacityStep(0, &calls), nil)
		checkInvariants(t, result)
		if result.Sustainable != 0 || result.Stopped != StoppedNoneHeld || calls[len(calls)-1] != 1 {
			t.Errorf("steps %v, stopped %q, sustainable %d", calls, result.Stopped, result.Sustainable)
		}
	})
	t.Run("error", func(t *testing.T) {
		boom := errors.New("target gone")
		step := func(_ context.Context, rate int) (Measurement, error) {
			if rate > 2000 {
				return Measurement{}, boom
			}
			return Measurement{Achieved: float64(rate)}, nil
		}
		var observed []Step
		result := Search(context.Background(), Config{}, step, func(s Step) { observed = append(observed, s) })
		if !errors.Is(result.Err, boom) || result.Stopped != StoppedError || result.Sustainable != 2000 || len(observed) != 2 {
			t.Errorf("err %v, stopped %q, sustainable %d, observed %d", result.Err, result.Stopped, result.Sustainable, len(observed))
		}
	})
}

func TestSearchRetriesAFailedStepOnce(t *testing.T) {
	// 2000 fails on its first attempt only (a p99 spike), capacity 8000.
	spiked := false
	var calls []int
	inner := capacityStep(8000, &calls)
	step := func(ctx context.Context, rate int) (Measurement, error) {
		m, err := inner(ctx, rate)
		if rate == 2000 && !spiked {
			spiked, m.P99 = true, time.Second
		}
		return m, err
	}
	result := Search(context.Background(), Config{MaxSteps: 64}, step, nil)
	checkInvariants(t, result)
	if result.Sustainable != 8000 || calls[1] != 2000 || calls[2] != 2000 || result.Steps[2].Attempt != 2 {
		t.Errorf("steps %v, sustainable %d: the retry of 2000 should hold and the search go on to 8000", calls, result.Sustainable)
	}
	// Without retries the spike ends the doubling at 1000.
	spiked, calls = false, nil
	result = Search(context.Background(), Config{MaxSteps: 64, Retries: -1}, step, nil)
	checkInvariants(t, result)
	if result.Sustainable >= 2000 {
		t.Errorf("without retries: steps %v, sustainable %d, want under 2000", calls, result.Sustainable)
	}
}

func TestJudge(t *testing.T) {
	config := Config{Tolerance: 0.01, MaxP99: 50 * time.Millisecond}
	for _, c := range []struct {
		m    Measurement
		held bool
	}{
		{Measurement{Achieved: 990, P99: 50 * time.Millisecond}, true},
		{Measurement{Achieved: 989, P99: time.Millisecond}, false},
		{Measurement{Achieved: 1000, P99: 50*time.Millisecond + 1}, false},
		{Measurement{Achieved: 1000, P99: time.Millisecond, Failure: "lost 3 records"}, false},
	} {
		held, why := config.Judge(1000, c.m)
		if held != c.held || (why == "") != held {
			t.Errorf("Judge(1000, %+v) = %v %q, want held %v", c.m, held, why, c.held)
		}
	}
}

// longCapacityStep is the long step of a cluster whose capacity over a
// long step is capacity records/s (lower than over a short one).
func longCapacityStep(capacity int, calls *[]int) StepFunc {
	return capacityStep(capacity, calls)
}

func TestConfirmStepsDownToALongHeldRate(t *testing.T) {
	for _, tc := range []struct {
		short, long   int
		wantLong      []int // the long steps' rates, in order
		wantRate      int
		wantFailed    int
		wantStopped   string
		wantConfirmed bool
	}{
		// The short steps find 1000; a long step holds only 850: 1000
		// fails, 800 holds, then bisection: 900 fails, 850 holds, and
		// 850..900 is within 2 × 5 %.
		{short: 1000, long: 850, wantLong: []int{1000, 800, 900, 850}, wantRate: 850, wantFailed: 900,
			wantStopped: StoppedPrecision, wantConfirmed: true},
		// The long step holds what the short ones found.
		{short: 5000, long: 5000, wantLong: []int{5000}, wantRate: 5000, wantStopped: StoppedPrecision, wantConfirmed: true},
		// Nothing a long step tries holds: no rate is reported.
		{short: 4000, long: 100, wantLong: []int{4000, 3200, 2560, 2048, 1638}, wantFailed: 1638, wantStopped: StoppedUnconfirmed},
	} {
		var searchCalls, confirmCalls []int
		config := Config{MaxSteps: 64}
		searched := Search(context.Background(), config, capacityStep(tc.short, &searchCalls), nil)
		if searched.Sustainable != tc.short {
			t.Fatalf("%+v: the search found %d", tc, searched.Sustainable)
		}
		result := Confirm(context.Background(), config, searched, longCapacityStep(tc.long, &confirmCalls), nil)
		if result.Searched != tc.short {
			t.Errorf("%+v: Searched %d, want the search's %d", tc, result.Searched, tc.short)
		}
		if !slices.Equal(confirmCalls, tc.wantLong) || result.Sustainable != tc.wantRate || result.Confirmed != tc.wantConfirmed ||
			result.Stopped != tc.wantStopped {
			t.Errorf("%+v: got rate %d confirmed %v stopped %q after long steps %v", tc, result.Sustainable, result.Confirmed,
				result.Stopped, confirmCalls)
		}
		if result.Sustainable > tc.long {
			t.Errorf("%+v: reported %d, above what a long step sustains", tc, result.Sustainable)
		}
		if tc.wantFailed != 0 && result.Failed != tc.wantFailed {
			t.Errorf("%+v: Failed %d, want %d", tc, result.Failed, tc.wantFailed)
		}
		long := result.Steps[len(searchCalls):]
		if len(long) != len(confirmCalls) {
			t.Fatalf("%+v: %d confirmation steps recorded for %d calls", tc, len(long), len(confirmCalls))
		}
		for i, step := range long {
			if !step.Confirmation || step.Target != confirmCalls[i] || step.Held != (step.Target <= tc.long) {
				t.Errorf("%+v: confirmation step %d = %+v", tc, i, step)
			}
		}
	}
}

func TestConfirmAnswersAHeldLongStep(t *testing.T) {
	// Whatever the long capacity, the answer is the highest long step that
	// held, never above the capacity, and within 10 % of it when one held
	// and a failed one bounds it.
	random := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		short := 1000 + random.IntN(200_000)
		long := 1 + random.IntN(short)
		var searchCalls, confirmCalls []int
		searched := Search(context.Background(), Config{MaxSteps: 64}, capacityStep(short, &searchCalls), nil)
		result := Confirm(context.Background(), Config{}, searched, capacityStep(long, &confirmCalls), nil)
		highest := 0
		for _, rate := range confirmCalls {
			if rate <= long {
				highest = max(highest, rate)
			}
		}
		if result.Sustainable != highest || result.Sustainable > long || len(confirmCalls) > Defaults().Confirmations {
			t.Fatalf("short %d long %d: answer %d after long steps %v", short, long, result.Sustainable, confirmCalls)
		}
		if result.Confirmed && result.Failed > 0 && float64(result.Failed-result.Sustainable) > 0.1*float64(result.Sustainable) &&
			len(confirmCalls) < Defaults().Confirmations {
			t.Fatalf("short %d long %d: stopped at %d with %d failed, wider than 10 %%: %v", short, long,
				result.Sustainable, result.Failed, confirmCalls)
		}
	}
}

func TestConfirmLeavesAlone(t *testing.T) {
	never := func(context.Context, int) (Measurement, error) {
		t.Fatal("a long step ran")
		return Measurement{}, nil
	}
	// Confirmation off: the searched rate stands, unconfirmed.
	var calls []int
	searched := Search(context.Background(), Config{}, capacityStep(3000, &calls), nil)
	result := Confirm(context.Background(), Config{Confirmations: -1}, searched, never, nil)
	if result.Sustainable != searched.Sustainable || result.Confirmed || len(result.Steps) != len(searched.Steps) {
		t.Errorf("confirmation off changed the result: %+v", result)
	}
	// A search that held nothing, or ended in an error, has nothing to confirm.
	for _, searched := range []Result{{Stopped: StoppedNoneHeld}, {Sustainable: 5, Stopped: StoppedError, Err: errors.New("gone")}} {
		if result := Confirm(context.Background(), Config{}, searched, never, nil); result.Confirmed || result.Stopped != searched.Stopped {
			t.Errorf("Confirm(%+v) = %+v", searched, result)
		}
	}
}

func TestConfirmStepError(t *testing.T) {
	var calls []int
	searched := Search(context.Background(), Config{}, capacityStep(3000, &calls), nil)
	gone := errors.New("target gone")
	result := Confirm(context.Background(), Config{}, searched, func(context.Context, int) (Measurement, error) {
		return Measurement{}, gone
	}, nil)
	if result.Sustainable != 0 || result.Stopped != StoppedError || !errors.Is(result.Err, gone) {
		t.Errorf("a failing long step: %+v", result)
	}
}
