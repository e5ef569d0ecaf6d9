// Package findmax is the search of `exactly loadgen --find-max` for the
// sustainable rate of a delivery mode: the highest offered rate that holds,
// meaning that a fixed-rate run at that rate achieved it (within a
// tolerance, 1 % by default) and kept its p99 acknowledgement latency under a
// bound.
//
// Search is a pure function over a callback that runs one step (a bounded
// fixed-rate run) and returns what it measured: it starts at a low rate,
// doubles while the rate holds, then bisects between the highest rate that
// held and the lowest that failed until they are within a precision (5 %
// by default), bounded in steps and in time.
//
// Short steps can hold by luck, or by fitting in a buffer: a rate that
// kept its p99 for a few seconds may not for half a minute (the page cache
// fills and the kernel starts writing back, a garbage collection lands).
// Confirm therefore runs the rate the search found once more as a long
// step and, when that fails, steps down until a long step holds, then
// bisects between the long steps, a bounded number of times; the
// sustainable rate reported is one a long step held.
//
// The answer is always a rate that was itself measured as held, never an
// extrapolation or a rate between steps: OpenMessaging Benchmark's max-rate
// mode reports the rate its controller was aiming at, which can be above
// anything the cluster achieved; this search cannot overshoot that way.
package findmax

import (
	"context"
	"fmt"
	"time"
)

// Config bounds and judges a search. The zero value of a field means its
// default (see Defaults).
type Config struct {
	// Start is the first rate tried, records/s.
	Start int
	// Tolerance is how far under its target a step's achieved rate may be
	// and still hold: held needs achieved >= (1-Tolerance) × target.
	Tolerance float64
	// MaxP99 is the p99 acknowledgement latency a held step stays under
	// (at or under it holds).
	MaxP99 time.Duration
	// Precision ends the bisection once the lowest failed rate is within
	// Precision × the highest held rate of it.
	Precision float64
	// MaxSteps bounds the steps of one search, retries included.
	MaxSteps int
	// Retries is how many times a failed step is run again at the same
	// rate before the rate counts as failed (a rate holds when any of its
	// attempts held): one p99 spike from a neighbour on a shared machine
	// should not end the doubling. Negative: none; 0: the default, 1.
	Retries int
	// Budget bounds the time of one search: no step starts when the
	// longest step so far would end after it. 0: no time bound.
	Budget time.Duration
	// MaxRate caps the doubling, records/s: a rate that holds at MaxRate
	// ends the search there.
	MaxRate int
	// Confirmations bounds Confirm's long steps (see Confirm). Negative:
	// no confirmation (the searched rate is reported as it is); 0: the
	// default, 5.
	Confirmations int
	// StepDown is the fraction a rate is lowered by after its long step
	// failed while none has held yet (0: the default, 0.2).
	StepDown float64
	// Now is the clock of the budget (nil: time.Now), for tests.
	Now func() time.Time
}

// Defaults is the configuration of `exactly loadgen --find-max` without
// flags: start at 1000 records/s, 1 % tolerance, p99 under 50 ms, 5 %
// precision, one retry of a failed step, at most 16 steps, 4 minutes,
// 10 million records/s; up to 5 long confirmation steps, stepping down by
// 20 % until one holds, then bisecting.
func Defaults() Config {
	return Config{Start: 1000, Tolerance: 0.01, MaxP99: 50 * time.Millisecond, Precision: 0.05, MaxSteps: 16,
		Retries: 1, Budget: 4 * time.Minute, MaxRate: 10_000_000, Confirmations: 5, StepDown: 0.2}
}

// withDefaults fills the zero fields of c from Defaults.
func (c Config) withDefaults() Config {
	d := Defaults()
	if c.Start <= 0 {
		c.Start = d.Start
	}
	if c.Tolerance <= 0 {
		c.Tolerance = d.Tolerance
	}
	if c.MaxP99 <= 0 {
		c.MaxP99 = d.MaxP99
	}
	if c.Precision <= 0 {
		c.Precision = d.Precision
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = d.MaxSteps
	}
	if c.MaxRate <= 0 {
		c.MaxRate = d.MaxRate
	}
	switch {
	case c.Retries == 0:
		c.Retries = d.Retries
	case c.Retries < 0:
		c.Retries = 0
	}
	switch {
	case c.Confirmations == 0:
		c.Confirmations = d.Confirmations
	case c.Confirmations < 0:
		c.Confirmations = 0
	}
	if c.StepDown <= 0 || c.StepDown >= 1 {
		c.StepDown = d.StepDown
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Measurement is what one step measured.
type Measurement struct {
	// Achieved is the rate the step achieved, records/s.
	Achieved float64
	// P99 is its p99 acknowledgement latency.
	P99 time.Duration
	// Failure, when not empty, says why the step cannot count as held
	// whatever its rate (the run failed its checks, or errored).
	Failure string
}

// StepFunc runs one bounded fixed-rate step at rate records/s. An error
// ends the search (the target cannot be used, or ctx ended); a step that
// ran but went wrong reports it in Measurement.Failure instead.
type StepFunc func(ctx context.Context, rate int) (Measurement, error)

// Step is one step of a search as judged.
type Step struct {
	// Target is the offered rate, records/s.
	Target int
	// Attempt is 1 for a rate's first step, 2 for its first retry, ….
	Attempt int
	// Confirmation says the step was one of Confirm's long steps.
	Confirmation bool
	Measurement
	// Held says the step held: its rate achieved, its p99 under the bound,
	// no failure.
	Held bool
	// Why says why a step failed (empty when it held).
	Why string
	// Took is how long the step took, set-up and checks included.
	Took time.Duration
}

// Why a search stopped.
const (
	StoppedPrecision = "precision" // the failed rate is within Precision of the held one
	StoppedMaxRate   = "max-rate"  // the rate held at MaxRate
	StoppedMaxSteps  = "max-steps" // MaxSteps steps ran
	StoppedBudget    = "budget"    // another step would exceed Budget
	StoppedNoneHeld  = "none-held" // no rate held, down to 1 record/s or the step bound
	StoppedError     = "error"     // a step returned an error
	// StoppedUnconfirmed: no long step held, down to the last rate Confirm
	// tried, so no rate is reported as sustainable.
	StoppedUnconfirmed = "unconfirmed"
)

// Result is the outcome of one search.
type Result struct {
	// Sustainable is the highest target of a held step, records/s; 0 when
	// none held. After Confirm it is the target of the long step that
	// held (0 when none did).
	Sustainable int
	// Searched is the rate the search found before Confirm (0 before it).
	Searched int
	// Confirmed says a long step held at Sustainable.
	Confirmed bool
	// Failed is the lowest target of a failed step above Sustainable
	// (0: none failed above it, so the capacity may be higher still).
	Failed int
	// Steps lists every step, in order.
	Steps []Step
	// Stopped says why the search ended (one of the Stopped constants).
	Stopped string
	// Err is the error that ended the search (Stopped == StoppedError).
	Err error
}

// Judge says whether m, measured at target, held under c, and if not why.
func (c Config) Judge(target int, m Measurement) (held bool, why string) {
	c = c.withDefaults()
	switch {
	case m.Failure != "":
		return false, m.Failure
	case m.Achieved < (1-c.Tolerance)*float64(target):
		return false, fmt.Sprintf("achieved %.0f records/s, under %.0f (%.0f %% of the target)",
			m.Achieved, (1-c.Tolerance)*float64(target), 100*(1-c.Tolerance))
	case m.P99 > c.MaxP99:
		return false, fmt.Sprintf("p99 %s over %s", roundDuration(m.P99), c.MaxP99)
	}
	return true, ""
}

// Search looks for the sustainable rate under c with step, calling
// observe (if not nil) after each step. Invariants: every rate tried after
// the first lies strictly between the highest held rate and the lowest
// failed rate so far (a retry repeats the rate that just failed), and the
// answer (Result.Sustainable) is the target of a step that held, or 0.
func Search(ctx context.Context, c Config, step StepFunc, observe func(Step)) Result {
	c = c.withDefaults()
	s := &search{config: c, step: step, observe: observe, started: c.Now()}
	rate := min(c.Start, c.MaxRate)
	for {
		held, ran, stopped := s.try(ctx, rate)
		if !held && ran {
			s.result.Failed = rate // below any failed rate, as every rate tried is
		}
		if stopped != "" {
			s.result.Stopped = stopped
			break
		}
		if held {
			s.result.Sustainable = max(s.result.Sustainable, rate)
		}
		next, stopped := nextRate(c, s.result.Sustainable, s.result.Failed)
		if stopped != "" {
			s.result.Stopped = stopped
			break
		}
		rate = next
	}
	return s.result
}

// Confirm runs the long steps of result, a finished Search's result:
// confirm (a longer step than the search's) at the sustainable rate found;
// while long steps fail, at StepDown under the rate that failed; once one
// has held below one that failed, at the midpoint between the two, until
// they are within twice Precision of each other — at most Confirmations
// long steps in all. It returns result with Sustainable the highest rate a
// long step held (Confirmed) and Failed the lowest long step above it that
// failed, or Sustainable 0 with Stopped = StoppedUnconfirmed when no long
// step held. A search that found nothing, or ended in an error, is
// returned as it is; so is every result when Confirmations is negative.
// Long steps are bounded by their count, not by MaxSteps or Budget (which
// bound the search).
func Confirm(ctx context.Context, c Config, result Result, confirm StepFunc, observe func(Step)) Result {
	c = c.withDefaults()
	result.Searched = result.Sustainable
	if c.Confirmations == 0 || result.Sustainable <= 0 || result.Stopped == StoppedError {
		return result
	}
	heldLong, failedLong := 0, 0
	rate := result.Sustainable
	for range c.Confirmations {
		started := c.Now()
		measured, err := confirm(ctx, rate)
		if err != nil {
			result.Err, result.Stopped = err, StoppedError
			result.Sustainable = 0
			return result
		}
		one := Step{Target: rate, Attempt: 1, Confirmation: true, Measurement: measured, Took: c.Now().Sub(started)}
		one.Held, one.Why = c.Judge(rate, measured)
		result.Steps = append(result.Steps, one)
		if observe != nil {
			observe(one)
		}
		if one.Held {
			heldLong = rate
		} else {
			failedLong = rate
		}
		next, done := nextLongRate(c, heldLong, failedLong)
		if done {
			break
		}
		rate = next
	}
	if failedLong > 0 {
		result.Failed = failedLong
	}
	if heldLong == 0 {
		result.Sustainable, result.Stopped = 0, StoppedUnconfirmed
		return result
	}
	result.Sustainable, result.Confirmed = heldLong, true
	return result
}

// nextLongRate is the rate of Confirm's next long step after the highest
// long step that held (0: none yet) and the lowest that failed above it (0:
// none), or done when the answer is known: the first long step held, or
// held and failed are within twice Precision, or no rate lies between.
func nextLongRate(c Config, held, failed int) (next int, done bool) {
	switch {
	case failed == 0:
		return 0, true // the found rate held over a long step
	case held == 0:
		next = int(float64(failed) * (1 - c.StepDown))
		return next, next < 1 || next >= failed
	case float64(failed-held) <= 2*c.Precision*float64(held):
		return 0, true
	}
	next = held + (failed-held)/2
	return next, next <= held || next >= failed
}

// search is the state of one Search.
type search struct {
	config  Config
	step    StepFunc
	observe func(Step)
	started time.Time
	longest time.Duration // the longest step so far, for the budget
	result  Result
}

// try runs rate's attempts: the first, and retries while they fail. It
// says whether one held, whether any ran, and why the search must stop
// (a bound, or an error) if it must.
func (s *search) try(ctx context.Context, rate int) (held, ran bool, stopped string) {
	c := s.config
	for attempt := 1; attempt <= 1+c.Retries; attempt++ {
		if len(s.result.Steps) >= c.MaxSteps {
			return false, ran, StoppedMaxSteps
		}
		if c.Budget > 0 && len(s.result.Steps) > 0 && c.Now().Sub(s.started)+s.longest > c.Budget {
			return false, ran, StoppedBudget
		}
		stepStarted := c.Now()
		measured, err := s.step(ctx, rate)
		if err != nil {
			s.result.Err = err
			return false, ran, StoppedError
		}
		ran = true
		one := Step{Target: rate, Attempt: attempt, Measurement: measured, Took: c.Now().Sub(stepStarted)}
		one.Held, one.Why = c.Judge(rate, measured)
		s.longest = max(s.longest, one.Took)
		s.result.Steps = append(s.result.Steps, one)
		if s.observe != nil {
			s.observe(one)
		}
		if one.Held {
			return true, true, ""
		}
	}
	return false, ran, ""
}

// nextRate is the rate to try after the highest held rate held and the
// lowest failed rate failed (0: none yet), or why the search is over.
func nextRate(c Config, held, failed int) (int, string) {
	switch {
	case failed == 0 && held >= c.MaxRate:
		return 0, StoppedMaxRate
	case failed == 0:
		return min(2*held, c.MaxRate), "" // doubling
	case held == 0 && failed <= 1:
		return 0, StoppedNoneHeld
	case held == 0:
		return failed / 2, "" // the start rate failed: halve down
	case float64(failed-held) <= c.Precision*float64(held):
		return 0, StoppedPrecision
	}
	middle := held + (failed-held)/2
	if middle <= held || middle >= failed {
		return 0, StoppedPrecision // adjacent integers: nothing lies between
	}
	return middle, ""
}

// roundDuration rounds d for messages: to 0.1 ms under a second.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
