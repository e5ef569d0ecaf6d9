package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/shlex"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/suite"
)

// suiteSpec maps the flags to the suite they ask for, of workload (loaded,
// with the flags applied), printing and writing as --out, --csv, --wide,
// --quiet and --json-progress say, with the --fault-exec hooks: a search
// with --find-max, runs at fractions of a rate with --rate-fraction (or a
// workload with an equal_load section and no --rate), the security
// workload over each protocol, else the workload's suite in one run. It
// refuses what cannot run with the workload, before anything starts.
func (f *loadgenFlags) suiteSpec(workload loadgen.Workload, hooks *faults.Hooks, stdout io.Writer) (suite.Spec, error) {
	spec := suite.Spec{Kind: suite.Matrix, Workload: workload, Database: f.database, BrokerMetrics: f.brokerMetrics,
		Metrics: f.live, FaultHooks: hooks,
		Search: suite.Search{Config: f.findMax.config(), Confirm: f.findMax.confirm, SustainableRate: f.findMax.sustainable,
			Load: f.workloadNamed},
		StartListeners: startListeners,
		Output:         suite.Output{Stdout: stdout, Dir: f.out, CSV: f.csv, Wide: f.wide, Quiet: f.quiet, JSONProgress: f.jsonProgress}}
	var err error
	if spec.Workers, err = f.workerTransport(); err != nil {
		return spec, err
	}
	if f.profile != "" {
		spec.Profile = func(dir string) (func(), error) { return startProfileIn(f.profile, dir) }
	}
	switch {
	case f.findMax.enabled:
		spec.Kind = suite.FindMax
		if spec.Search.Fractions, err = parseFractions(f.findMax.fractions); err != nil {
			return spec, err
		}
		if len(spec.Search.Fractions) > 0 {
			if !slices.Contains(workload.Modes, modes.Baseline()) {
				return spec, fmt.Errorf("--rate-fraction takes fractions of %s's sustainable rate: add it to --mode", modes.Baseline())
			}
			if spec.Search.Latency, err = f.workloadNamed(fractionWorkload); err != nil {
				return spec, err
			}
		}
	case f.findMax.fractions != "":
		spec.Kind = suite.Fractions
		if spec.Search.Fractions, err = parseFractions(f.findMax.fractions); err != nil {
			return spec, err
		}
		if f.findMax.sustainable <= 0 {
			return spec, errors.New("--rate-fraction needs --find-max, or at-least-once's sustainable rate in --sustainable-rate")
		}
	case workload.EqualLoad != nil && f.rate < 0:
		// Every mode at each fraction of at-least-once's sustainable rate:
		// --sustainable-rate's, or searched first with the section's search
		// workload (its modes reduced to at-least-once) on the same target.
		spec.Search.Fractions = workload.EqualLoad.Fractions
		if f.findMax.sustainable > 0 {
			spec.Kind = suite.Fractions
			break
		}
		search, err := f.workloadNamed(workload.EqualLoad.SearchWorkload())
		if err != nil {
			return spec, err
		}
		search.Modes, search.Faults = []string{modes.Baseline()}, nil
		if err := search.Validate(); err != nil {
			return spec, fmt.Errorf("workload %s: %w", search.Name, err)
		}
		spec.Kind, spec.Workload, spec.Search.Latency = suite.FindMax, search, workload
	case workload.Security != nil:
		spec.Kind = suite.Security
	}
	self, selfErr := selfCommand()
	switch spec.Kind {
	case suite.FindMax, suite.Fractions:
		// An error from selfCommand: StartTarget finds the binary itself.
		if spec.Targets, err = f.findMax.targetConfigs(*f, self); err != nil {
			return spec, err
		}
	case suite.Matrix:
		kind, bootstrap := f.targetKind()
		properties := loadgen.LaunchedBrokerProperties(workload)
		spec.Targets = []loadgen.TargetConfig{{Kind: kind, Bootstrap: bootstrap, DataDir: f.dataDir,
			StartEmbedded: embeddedFor(properties), Self: self, BrokerProperties: properties,
			PartitionProxies: loadgen.NeedsPartitionProxies(workload), Security: f.security}}
	case suite.Security:
		kind, bootstrap := f.targetKind()
		spec.Targets = []loadgen.TargetConfig{{Kind: kind, Bootstrap: bootstrap, DataDir: f.dataDir, Security: f.security}}
	}
	if selfErr != nil {
		return spec, selfErr
	}
	spec.Self = self
	return spec, nil
}

// targetKind is the kind of target the flags name, with the bootstrap
// addresses of --bootstrap (which implies an existing cluster).
func (f *loadgenFlags) targetKind() (kind string, bootstrap []string) {
	if f.bootstrap != "" {
		return loadgen.TargetBootstrap, strings.Split(f.bootstrap, ",")
	}
	return f.target, nil
}

// workloadNamed loads the workload named name with the flags applied.
func (f *loadgenFlags) workloadNamed(name string) (loadgen.Workload, error) {
	workload, err := loadgen.LoadWorkload(name)
	if err != nil {
		return loadgen.Workload{}, err
	}
	// A workload the suite loads itself (the sustainable-rate search of
	// cost rounds at fractions) takes the load's shape from the flags but
	// not --rounds: those are the named workload's rounds.
	flags := *f
	flags.rounds = 0
	if err := flags.apply(&workload); err != nil {
		return loadgen.Workload{}, fmt.Errorf("workload %s: %w", workload.Name, err)
	}
	return workload, nil
}

// workerTransport is where --workers, --worker-exec and --worker-hosts
// put the load's producers.
func (f *loadgenFlags) workerTransport() (loadgen.WorkerTransport, error) {
	transport := loadgen.WorkerTransport{Count: f.workers}
	if f.workerExec != "" {
		words, err := shlex.Split(f.workerExec)
		if err != nil || len(words) == 0 {
			return transport, fmt.Errorf("--worker-exec %q: not a command (%v)", f.workerExec, err)
		}
		transport.Exec = words
	}
	for _, host := range strings.Split(f.workerHosts, ",") {
		if host = strings.TrimSpace(host); host != "" {
			transport.Hosts = append(transport.Hosts, host)
		}
	}
	return transport, nil
}
