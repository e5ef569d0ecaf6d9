package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/internal/suggest"
	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// flagRule is a check of one numeric flag's value: ok reports whether
// the value is usable, want says what is ("1..10000", "0 or more").
type flagRule struct {
	name string
	ok   func() bool
	want string
}

// checkFlagRules returns a usageErr for the first rule, in order, whose
// flag was given on the command line with a value it refuses:
// "--partitions 0: must be 1..10000". Flags left unset are not checked
// (their defaults stand for "the workload's").
func checkFlagRules(flags *flag.FlagSet, rules []flagRule) error {
	for _, rule := range rules {
		if !flagSet(flags, rule.name) || rule.ok() {
			continue
		}
		return usageError("--%s %s: must be %s", rule.name, flags.Lookup(rule.name).Value.String(), rule.want)
	}
	return nil
}

// intIn reports whether lo <= v <= hi.
func intIn[T int | int64](v, lo, hi T) func() bool { return func() bool { return lo <= v && v <= hi } }

// atLeast reports whether v >= lo.
func atLeast[T int | int64 | time.Duration | float64](v *T, lo T) func() bool {
	return func() bool { return *v >= lo }
}

// above reports whether v > lo.
func above[T int | int64 | time.Duration | float64](v *T, lo T) func() bool {
	return func() bool { return *v > lo }
}

// checkChoice returns a usageErr unless value is one of allowed: with a
// did-you-mean when one is close, else the allowed list.
func checkChoice(name, value, what string, allowed []string) error {
	for _, candidate := range allowed {
		if value == candidate {
			return nil
		}
	}
	if best := suggest.Closest(value, allowed); best != "" {
		return usageError("--%s %s: not %s; did you mean %s?", name, value, what, best)
	}
	return usageError("--%s %s: not %s (one of %s)", name, value, what, strings.Join(allowed, ", "))
}

// checkNameOrFile is checkChoice for a flag that also takes a file path:
// an existing file, or anything with a path separator or a .yaml suffix,
// is left for its loader to read.
func checkNameOrFile(name, value, what string, allowed []string) error {
	if _, err := os.Stat(value); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil // the loader reports what is wrong with the file
	}
	trimmed := strings.TrimSuffix(value, ".yaml")
	for _, candidate := range allowed {
		if trimmed == candidate {
			return nil
		}
	}
	if strings.ContainsRune(value, os.PathSeparator) || strings.HasSuffix(value, ".yaml") {
		return usageError("--%s %s: no such file", name, value)
	}
	if best := suggest.Closest(trimmed, allowed); best != "" {
		return usageError("--%s %s: not %s or a file; did you mean %s?", name, value, what, best)
	}
	return usageError("--%s %s: not %s (one of %s) or a file", name, value, what, strings.Join(allowed, ", "))
}

// loadgenFlagRules are the ranges of the numeric flags of
// `exactly loadgen`, the same as a workload file's (Workload.Validate).
func (f *loadgenFlags) rules() []flagRule {
	m := &f.findMax
	return []flagRule{
		{"records", atLeast(&f.records, 1), "1 or more"},
		{"duration", above(&f.duration, 0), "more than 0s (e.g. 10s)"},
		{"warmup", atLeast(&f.warmup, 0), "0s or more (e.g. 2s)"},
		{"drain", above(&f.drain, 0), "more than 0s (e.g. 20s)"},
		{"record-size", intIn(f.recordSize, verify.HeaderSize, 1<<20), fmt.Sprintf("%d..%d bytes", verify.HeaderSize, 1<<20)},
		{"partitions", intIn(f.partitions, 1, 10_000), "1..10000"},
		{"replication-factor", intIn(f.replication, 1, 32), "1..32"},
		{"producers", intIn(f.producers, 1, 256), "1..256"},
		{"consumers", intIn(f.consumers, 0, 256), "0..256"},
		{"rate", atLeast(&f.rate, 0), "0 (as fast as acknowledged) or more records/s"},
		{"pipeline-workers", intIn(f.pipelineWorkers, 1, 64), "1..64"},
		{"workers", intIn(f.workers, 1, 256), "1..256"},
		{"commit-records", atLeast(&f.commitRecords, 0), "0 (no cap) or more"},
		{"abort-share", func() bool { return f.abortShare >= 0 && f.abortShare <= 1 }, "a fraction in 0..1"},
		{"dedup-window", atLeast(&f.dedupWindow, 1), "1 or more offsets"},
		{"share-release-every", atLeast(&f.shareReleaseEvery, 1), "1 or more records"},
		{"rounds", atLeast(&f.rounds, 1), "1 or more"},
		{"fault-exec-timeout", above(&f.faultExecTimeout, 0), "more than 0s"},
		{"fault-recovery-timeout", above(&f.faultRecoveryTimeout, 0), "more than 0s"},
		{"find-max-p99", above(&m.p99, 0), "more than 0s (e.g. 50ms)"},
		{"find-max-steps", atLeast(&m.steps, 1), "1 or more"},
		{"find-max-retries", atLeast(&m.retries, 0), "0 (never) or more"},
		{"find-max-start", atLeast(&m.start, 1), "1 or more records/s"},
		{"find-max-precision", func() bool { return m.precision > 0 && m.precision < 1 }, "a fraction between 0 and 1 (e.g. 0.05)"},
		{"find-max-budget", above(&m.budget, 0), "more than 0s (e.g. 2m)"},
		{"find-max-confirm", atLeast(&m.confirm, 0), "0s (no confirmation) or more"},
		{"sustainable-rate", atLeast(&m.sustainable, 1), "1 or more records/s"},
	}
}

// check refuses, before anything starts, a numeric flag out of its range
// and a name that is not one of the choices (mode, fault plan, workload,
// target, group protocol, key distribution, profile), each as one line.
func (f *loadgenFlags) check(flags *flag.FlagSet) error {
	if err := checkFlagRules(flags, f.rules()); err != nil {
		return err
	}
	if f.modes != "" {
		for _, mode := range strings.Split(f.modes, ",") {
			if err := checkChoice("mode", strings.TrimSpace(mode), "a delivery mode", modes.Names()); err != nil {
				return err
			}
		}
	}
	if f.faultPlans != "" {
		for _, plan := range strings.Split(f.faultPlans, ",") {
			if err := checkNameOrFile("faults", strings.TrimSpace(plan), "a fault plan", faults.PlanNames()); err != nil {
				return err
			}
		}
	}
	if err := checkNameOrFile("workload", f.workload, "a workload", loadgen.WorkloadNames()); err != nil {
		return err
	}
	if err := checkChoice("target", f.target, "a target", []string{loadgen.TargetEmbedded, loadgen.TargetKfake, loadgen.TargetCluster}); err != nil {
		return err
	}
	if f.findMax.targets != "" {
		for _, target := range strings.Split(f.findMax.targets, ",") {
			if err := checkChoice("targets", strings.TrimSpace(target), "a target --find-max starts", []string{loadgen.TargetEmbedded, loadgen.TargetKfake}); err != nil {
				return err
			}
		}
	}
	if f.groupProtocol != "" {
		allowed := []string{loadgen.GroupProtocolClassic, loadgen.GroupProtocolConsumer, loadgen.GroupProtocolBoth}
		if err := checkChoice("group-protocol", f.groupProtocol, "a group protocol", allowed); err != nil {
			return err
		}
	}
	if f.keys != "" {
		if err := checkChoice("keys", f.keys, "a key distribution", []string{"none", "uniform", "zipf"}); err != nil {
			return err
		}
	}
	if f.profile != "" {
		if err := checkChoice("profile", f.profile, "a profile", []string{"cpu", "mem", "block", "mutex", "trace"}); err != nil {
			return err
		}
	}
	if _, err := parseFractions(f.findMax.fractions); err != nil {
		return usageError("%s", err.Error())
	}
	switch {
	case f.findMax.targets != "" && !f.findMax.enabled:
		return usageError("--targets is for --find-max only; use --target for one target")
	case f.findMax.targets != "" && f.bootstrap != "":
		return usageError("--targets names targets the load generator starts (embedded, kfake); use --bootstrap alone for an existing cluster")
	case f.findMax.fractions != "" && !f.findMax.enabled && f.findMax.sustainable == 0:
		return usageError("--rate-fraction needs --find-max, or at-least-once's sustainable rate in --sustainable-rate")
	}
	return nil
}
