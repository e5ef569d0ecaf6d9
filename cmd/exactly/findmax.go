package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/findmax"
)

// findMaxFlags are the settings of `exactly loadgen --find-max`.
type findMaxFlags struct {
	enabled   bool
	p99       time.Duration
	steps     int
	retries   int
	start     int
	precision float64
	budget    time.Duration
	confirm   time.Duration
	targets   string
	// fractions (--rate-fraction) and sustainable (--sustainable-rate):
	// run the latency workload at fractions of at-least-once's
	// sustainable rate, searched or given.
	fractions   string
	sustainable int
}

func (f *findMaxFlags) register(fs *flag.FlagSet) {
	d := findmax.Defaults()
	fs.BoolVar(&f.enabled, "find-max", false, "search each mode's sustainable rate: the highest offered rate whose fixed-rate run achieves it within 1 % "+
		"with ack p99 under --find-max-p99 (start low, double while it holds, then bisect); each step is a fault-free run "+
		"of --warmup + --duration on fresh topics (default workload: find-max)")
	fs.DurationVar(&f.p99, "find-max-p99", d.MaxP99, "--find-max: p99 acknowledgement latency a held step stays under")
	fs.IntVar(&f.steps, "find-max-steps", d.MaxSteps, "--find-max: at most this many steps per mode, retries included")
	fs.IntVar(&f.retries, "find-max-retries", d.Retries, "--find-max: run a failed step again this many times before its rate counts as failed (0: never)")
	fs.IntVar(&f.start, "find-max-start", d.Start, "--find-max: first rate tried, records/s")
	fs.Float64Var(&f.precision, "find-max-precision", d.Precision, "--find-max: stop once the first failed rate is within this fraction of the highest held rate")
	fs.DurationVar(&f.budget, "find-max-budget", d.Budget, "--find-max: time bound of each mode's search (no step starts that would end after it)")
	fs.DurationVar(&f.confirm, "find-max-confirm", 20*time.Second, "--find-max: measured time of a confirmation step: the rate the short steps found is run once more this long, "+
		"stepping down 20 % until a long step holds, then bisecting (at most 5 long steps); the rate reported is the highest a long step held "+
		"(0: no confirmation)")
	fs.StringVar(&f.targets, "targets", "", "--find-max only: comma-separated targets to search one after the other in this run (embedded, kfake), "+
		"with their rates side by side; replaces --target")
	fs.StringVar(&f.fractions, "rate-fraction", "", "comma-separated fractions (e.g. 0.5,0.8): run the latency workload's cells (--mode applies) once per fraction, "+
		"every mode at that fraction of at-least-once's sustainable rate, so modes are compared at equal offered load; "+
		"the rate is --find-max's (on its first target) or --sustainable-rate's")
	fs.IntVar(&f.sustainable, "sustainable-rate", 0, "with --rate-fraction and without --find-max: at-least-once's sustainable rate, records/s (e.g. from an earlier --find-max)")
}

// config is the search configuration the flags say.
func (f *findMaxFlags) config() findmax.Config {
	c := findmax.Defaults()
	c.MaxP99, c.MaxSteps, c.Start, c.Precision, c.Budget = f.p99, f.steps, f.start, f.precision, f.budget
	c.Retries = f.retries
	if f.retries == 0 {
		c.Retries = -1 // findmax.Config's "none"
	}
	if f.confirm <= 0 {
		c.Confirmations = -1
	}
	return c
}

// targetConfigs are the targets to search: --targets, else the one of
// --target or --bootstrap (started with self).
func (f *findMaxFlags) targetConfigs(flags loadgenFlags, self loadgen.SelfCommand) ([]loadgen.TargetConfig, error) {
	if f.targets == "" {
		kind, bootstrap := flags.targetKind()
		return []loadgen.TargetConfig{{Kind: kind, Bootstrap: bootstrap, DataDir: flags.dataDir, StartEmbedded: startEmbedded, Self: self,
			Security: flags.security}}, nil
	}
	if flags.bootstrap != "" {
		return nil, errors.New("--targets names targets the load generator starts (embedded, kfake); use --bootstrap alone for an existing cluster")
	}
	var configs []loadgen.TargetConfig
	for _, kind := range strings.Split(f.targets, ",") {
		kind = strings.TrimSpace(kind)
		if kind != loadgen.TargetEmbedded && kind != loadgen.TargetKfake {
			return nil, fmt.Errorf("--targets: %q is not embedded or kfake", kind)
		}
		configs = append(configs, loadgen.TargetConfig{Kind: kind, DataDir: flags.dataDir, StartEmbedded: startEmbedded})
	}
	return configs, nil
}

// fractionWorkload is the workload --rate-fraction runs unless --workload
// names another (without --find-max, where --workload is the search's).
const fractionWorkload = "latency"

// parseFractions parses --rate-fraction: comma-separated fractions in (0, 1].
func parseFractions(text string) ([]float64, error) {
	if text == "" {
		return nil, nil
	}
	var fractions []float64
	for _, field := range strings.Split(text, ",") {
		fraction, err := strconv.ParseFloat(strings.TrimSpace(field), 64)
		if err != nil || fraction <= 0 || fraction > 1 {
			return nil, fmt.Errorf("--rate-fraction %s: must be fractions in (0, 1] (e.g. 0.5,0.8)", strings.TrimSpace(field))
		}
		fractions = append(fractions, fraction)
	}
	return fractions, nil
}
