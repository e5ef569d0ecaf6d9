// Package progress shows where a load-generator suite is while it runs:
// a header naming the target, the workload, the number of cells and the
// expected duration; one permanent line per finished cell (its verdict and
// what the checker counted); and, on a terminal, one live line that
// rewrites itself with the current cell's number of the total, its phase
// against that phase's budget, the PASS/FAIL counts so far, the elapsed
// time and an estimate of the time left.
//
// The runner (package loadgen) reports events through Reporter; Printer
// renders them in one of three styles: Terminal (the live line rewritten in
// place), Plain (lines only, for logs and pipes) and JSON (one JSON object
// per line, for scripts). The package knows nothing of Kafka.
package progress

import "time"

// Phase is what the current cell is doing.
type Phase string

// A cell goes through these phases in order; a cell that cannot start goes
// from setting up straight to finished.
const (
	// PhaseSettingUp: starting the fault environment (proxy, launched
	// broker), creating topics, starting the consume stage and waiting for
	// its group to assign every partition.
	PhaseSettingUp Phase = "setting-up"
	// PhaseProducing: producers send, faults fire; the budget is the
	// warm-up plus the measured duration.
	PhaseProducing Phase = "producing"
	// PhaseFlushing: the producing time is over and producers flush what
	// they buffered and end their last transaction; the budget is the
	// drain time.
	PhaseFlushing Phase = "flushing"
	// PhaseDraining: consumers and the consume stage catch up with what
	// was produced; the budget is the drain time.
	PhaseDraining Phase = "draining"
	// PhaseVerifying: every topic of the cell is read back and every
	// record checked.
	PhaseVerifying Phase = "verifying"
)

// Suite describes a suite about to run.
type Suite struct {
	// RunID names the invocation (results file, topics).
	RunID string
	// Target is the kind of cluster (embedded, kfake, bootstrap) and
	// TargetDescription where it is.
	Target, TargetDescription string
	// Workload is the workload's name.
	Workload string
	// Cells are the planned cells, in the order they run.
	Cells []Cell
	// Notes are lines on how the suite fits the target (a drain
	// lengthened for the broker's session timeout), printed after the
	// header.
	Notes []string
}

// Cell is one planned cell of the suite: a delivery mode under a fault plan.
type Cell struct {
	// Index is the cell's number, from 1.
	Index int
	// Name is "<mode>:<plan>" (or the mode alone without a fault matrix).
	Name string
	// Load is the planned producing time (warm-up plus duration); Drain the
	// time allowed for flushing and catching up afterwards.
	Load, Drain time.Duration
	// NotApplicable, when set, is why the cell will not run.
	NotApplicable string
}

// Status is the running cell's state, reported about once a second.
type Status struct {
	// Cell is the running cell's Index.
	Cell int
	// Phase is what the cell is doing, Elapsed how long it has been at it
	// and Budget what that phase is allowed (0: no fixed budget).
	Phase   Phase
	Elapsed time.Duration
	Budget  time.Duration
	// Measured says a second of producing has been measured: before it
	// the figures below are zero and the status shows none.
	Measured bool
	// Throughput and latency over the last second of producing (zero
	// outside the producing phases).
	RecordsPerSecond   float64
	MegabytesPerSecond float64
	P99Milliseconds    float64
	// Errors, retries and faults fired so far in the cell.
	Errors, Retries, Faults int64
}

// Overrun is how far the phase has run past its budget (0: within it, or
// no budget).
func (s Status) Overrun() time.Duration {
	if s.Budget <= 0 || s.Elapsed <= s.Budget {
		return 0
	}
	return s.Elapsed - s.Budget
}

// Finished is a cell's outcome.
type Finished struct {
	// Cell is the finished cell's Index.
	Cell int
	// Verdict is pass, fail, untestable, unsupported, not-applicable or
	// error.
	Verdict string
	// Elapsed is the cell's wall-clock time, setup to verdict.
	Elapsed time.Duration
	// RecordsPerSecond is the measured throughput (0: none).
	RecordsPerSecond float64
	// Observed is the checker's counts in words; Why explains a verdict
	// other than pass.
	Observed, Why string
}

// Reporter receives a suite's progress. The runner calls SuiteStarted
// once, then CellStarted, Status (from another goroutine) and CellFinished
// for each cell in order, then SuiteFinished; implementations must be safe
// for Status to race with the others.
type Reporter interface {
	SuiteStarted(Suite)
	CellStarted(cell int)
	Status(Status)
	CellFinished(Finished)
	SuiteFinished(Outcome)
}

// Outcome is how the suite ended, with where its results were written.
type Outcome struct {
	// Passed: every cell met its expectation.
	Passed bool
	// Interrupted: the suite was stopped before its last cell.
	Interrupted bool
	// ResultsPath, DashboardPath and CSVPath are the files written
	// (empty: none).
	ResultsPath, DashboardPath, CSVPath string
}

// Discard is a Reporter that shows nothing (--quiet).
type Discard struct{}

// SuiteStarted does nothing.
func (Discard) SuiteStarted(Suite) {}

// CellStarted does nothing.
func (Discard) CellStarted(int) {}

// Status does nothing.
func (Discard) Status(Status) {}

// CellFinished does nothing.
func (Discard) CellFinished(Finished) {}

// SuiteFinished does nothing.
func (Discard) SuiteFinished(Outcome) {}
