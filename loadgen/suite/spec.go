// Package suite runs what one `exactly loadgen` invocation asks for: a
// workload's suite in one [loadgen.Run] (its fault matrix, cost rounds or
// comparison of group protocols), the sustainable-rate search of
// --find-max with the runs at fractions of the rate it finds, the runs at
// fractions of a given rate, or the security workload over each security
// protocol. Each prints its progress and tables and writes the results
// file, its dashboard and the CSV file with one writer.
//
// The command (cmd/exactly) parses and checks the flags, maps them to a
// [Spec] and calls [Run]; the targets, and the embedded broker's
// listeners of the security workload, come from it, so that this package
// does not link the broker.
package suite

import (
	"context"
	"fmt"
	"time"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/findmax"
	"github.com/exactly-eos/exactly/loadgen/livemetrics"
)

// Kind is which suite a [Spec] runs.
type Kind int

const (
	// Matrix runs the workload in one [loadgen.Run] on the first target:
	// every mode under its fault matrix, then its cost rounds or its
	// comparison of group protocols, with the expectations table.
	Matrix Kind = iota
	// FindMax searches the sustainable rate of every mode of the workload
	// on each target in turn, then, with [Search.Fractions], runs
	// [Search.Latency] at those fractions of at-least-once's rate on the
	// first target.
	FindMax
	// Fractions runs the workload at [Search.Fractions] of
	// [Search.SustainableRate] on the first target.
	Fractions
	// Security runs every mode of the workload over each protocol of its
	// security section, then measures each protocol's consume cost.
	Security
)

// Spec is what one invocation runs and where it writes.
type Spec struct {
	// Kind is the suite to run.
	Kind Kind
	// Workload is the workload, with the command line's settings applied.
	Workload loadgen.Workload
	// Targets are the clusters to run against: a FindMax searches each in
	// turn, the other kinds use the first. Security uses its Kind,
	// Bootstrap, DataDir and Security: an existing cluster over the
	// protocol of Security, or the embedded broker's listeners
	// ([Spec.StartListeners]).
	Targets []loadgen.TargetConfig
	// Self starts the exactly binary again (launched brokers, workers).
	Self loadgen.SelfCommand
	// Database is the application database of the database stages ("":
	// an SQLite file in a temporary directory).
	Database string
	// BrokerMetrics is --broker-metrics: the target broker's /metrics
	// URL ("": the embedded broker's, when it serves them; see
	// [loadgen.BrokerMetricsURL]).
	BrokerMetrics string
	// Metrics receives the load's counts for the loadgen's own /metrics
	// (nil: off).
	Metrics *livemetrics.Loadgen
	// FaultHooks are the --fault-exec commands of a Matrix (nil: none).
	FaultHooks *faults.Hooks
	// Workers is where the load's producers run (--workers,
	// --worker-exec, --worker-hosts; Count 0: in process).
	Workers loadgen.WorkerTransport
	// Profile, when not nil, profiles the load generator during a Matrix's
	// run into dir (profiles/loadgen-<run id>, which the dashboard links)
	// and returns what stops it (--profile).
	Profile func(dir string) (stop func(), err error)
	// Search is the sustainable-rate search and the rate fractions.
	Search Search
	// StartListeners starts the embedded broker with a listener per
	// protocol of the security workload (Security on the embedded target).
	StartListeners StartListeners
	// Output is where the suite prints and writes.
	Output Output
}

// Search holds the settings of the sustainable-rate search and of the
// runs at fractions of a rate.
type Search struct {
	// Config bounds and judges each mode's search.
	Config findmax.Config
	// Confirm is the measured time of a confirmation step (0: none).
	Confirm time.Duration
	// Fractions are the fractions of at-least-once's sustainable rate the
	// runs of a FindMax (none: no such runs) or a Fractions run at.
	Fractions []float64
	// Latency is the workload a FindMax runs at Fractions.
	Latency loadgen.Workload
	// SustainableRate is at-least-once's sustainable rate when given
	// (--sustainable-rate; 0: search it where needed).
	SustainableRate int
	// Load returns the named workload with the command line's settings
	// applied: the find-max workload whose search gives the cost rounds at
	// fractions of the rate (overhead.fractions) their rate.
	Load func(name string) (loadgen.Workload, error)
}

// Listener is one protocol the security workload runs over: a target
// that connects with it, and how the broker sends fetched records over it
// (for the consume cost table; "" when not known).
type Listener struct {
	Protocol  string
	Target    loadgen.Target
	FetchPath string
}

// StartListeners starts the security workload's broker in dataDir ("": a
// temporary directory) and returns a listener per protocol of spec, in
// spec's order, the parent target (the results' header) and what stops
// it.
type StartListeners func(ctx context.Context, dataDir string, spec loadgen.SecuritySpec) ([]Listener, loadgen.Target, func() error, error)

// Run runs the suite spec says, prints its progress and tables, and
// writes its results file, dashboard and CSV file (see [Output]). The
// error says why it did not pass: a run failed its checks, it was
// interrupted, or it could not run.
func Run(ctx context.Context, spec Spec) error {
	switch spec.Kind {
	case Matrix:
		return runMatrix(ctx, spec)
	case FindMax:
		return runFindMax(ctx, spec)
	case Fractions:
		return runFractions(ctx, spec)
	case Security:
		return runSecurity(ctx, spec)
	}
	return fmt.Errorf("suite kind %d: not a suite", spec.Kind)
}

// options are the [loadgen.Options] of a run of workload on target.
func (s Spec) options(workload loadgen.Workload, target loadgen.Target) loadgen.Options {
	return loadgen.Options{Workload: workload, Target: target, Self: s.Self, Database: s.Database,
		Metrics: s.Metrics, Workers: s.Workers, BrokerMetrics: loadgen.BrokerMetricsURL(s.BrokerMetrics, target)}
}
