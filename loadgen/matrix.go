package loadgen

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// MatrixEntry is one row of a workload's fault matrix: delivery modes run
// under one fault plan.
//
//	faults:
//	  - plan: ack-loss               # a shipped plan name or a plan file
//	    modes: [at-least-once, idempotent]   # omitted: the workload's modes
//	    duration: 12s                # omitted: the workload's duration
type MatrixEntry struct {
	// Plan names a shipped fault plan (see faults.PlanNames) or a plan file.
	Plan string `yaml:"plan" json:"plan"`
	// Modes run under the plan; empty means the workload's Modes.
	Modes []string `yaml:"modes" json:"modes,omitempty"`
	// Duration, when set, replaces the workload's duration for these runs
	// (a plan whose first fault fires after 10 s needs a longer run).
	Duration Duration `yaml:"duration" json:"duration,omitempty"`
	// network, set on the entries of a network sweep's rounds, is the
	// step layered on the plan (NetworkSweep).
	network *networkStep
}

// planned reports whether the entry's runs have faults: a plan, or a
// network sweep's step.
func (e MatrixEntry) planned() bool { return e.Plan != "" || e.network != nil }

// load returns the entry's plan with its network step layered on.
func (e MatrixEntry) load() (faults.Plan, error) {
	var plan faults.Plan
	if e.Plan != "" {
		var err error
		if plan, err = faults.LoadPlan(e.Plan); err != nil {
			return faults.Plan{}, err
		}
	}
	if e.network != nil {
		plan = e.network.layer(plan, e.Plan != "")
	}
	return plan, nil
}

// key tells the entries of an overhead workload apart: the plan and the
// network step.
func (e MatrixEntry) key() string {
	if e.network == nil {
		return e.Plan
	}
	return e.Plan + "@" + e.network.path + "/" + e.network.rtt.String()
}

func (e MatrixEntry) validate() error {
	if strings.TrimSpace(e.Plan) == "" {
		return errors.New("plan: a matrix entry needs a fault plan")
	}
	if _, err := faults.LoadPlan(e.Plan); err != nil {
		return err
	}
	if e.Duration < 0 {
		return fmt.Errorf("duration: %s is negative", e.Duration)
	}
	for _, mode := range e.Modes {
		if _, ok := modes.Lookup(mode); !ok {
			return fmt.Errorf("modes: %q is not one of %v", mode, modes.Names())
		}
	}
	return nil
}

// matrixOf returns the workload's fault matrix with its plans loaded: its
// Faults entries, or every mode without faults when there are none.
func matrixOf(workload Workload) ([]MatrixEntry, []faults.Plan, error) {
	entries := workload.Faults
	if len(entries) == 0 {
		entries = []MatrixEntry{{Plan: "none"}}
	}
	plans := make([]faults.Plan, len(entries))
	for i, entry := range entries {
		plan, err := entry.load()
		if err != nil {
			return nil, nil, fmt.Errorf("faults[%d]: %w", i, err)
		}
		plans[i] = plan
	}
	return entries, plans, nil
}

// planRuns expands a workload into runs: for each matrix entry (or once,
// without faults), one per mode, and one per commit interval for a mode
// that sweeps them (named <mode>@<interval>). Runs of a workload without a fault matrix keep bare
// mode names; matrix runs are named "<mode>:<plan>".
func planRuns(workload Workload, runID uint64, bootstrap []string) ([]runPlan, error) {
	entries, plans, err := matrixOf(workload)
	if err != nil {
		return nil, err
	}
	runIDText := fmt.Sprintf("%016x", runID)
	var runs []runPlan
	for i, entry := range entries {
		cellWorkload := workload
		switch {
		case entry.Duration > 0:
			cellWorkload.Duration = entry.Duration
		case plans[i].Duration > 0:
			cellWorkload.Duration = max(workload.Duration, Duration(plans[i].Duration))
			// The plan's faults need the load for all of its duration
			// (leader-kill's second kill comes at 18 s and lasts 5 s):
			// the record budget must not end the run first.
			if workload.Rate > 0 {
				seconds := time.Duration(cellWorkload.Warmup + cellWorkload.Duration).Seconds()
				cellWorkload.Records = max(workload.Records, int64(math.Ceil(float64(workload.Rate)*seconds)))
			}
		}
		cellWorkload.Partitions = max(workload.Partitions, plans[i].Partitions)
		cellModes := entry.Modes
		if len(cellModes) == 0 {
			cellModes = workload.Modes
		}
		for _, mode := range cellModes {
			for _, interval := range commitIntervals(mode, workload) {
				run := runPlan{name: mode, mode: mode, workload: cellWorkload, commitInterval: interval,
					runID: runID, runIDText: runIDText, bootstrap: bootstrap, clientBootstrap: bootstrap, faults: plans[i]}
				if run.spec().SweepsCommitIntervals {
					run.name = fmt.Sprintf("%s@%s", mode, interval)
				}
				if len(workload.Faults) > 0 {
					run.name += ":" + plans[i].Name
				}
				run.topicSuffix = strings.NewReplacer("@", "-", ".", "_", ":", ".").Replace(run.name)
				run.topic = "exactly." + runIDText + "." + run.topicSuffix
				if run.spec().Stage.WritesTopic() || relays(plans[i], mode) {
					run.topic += ".in"
					run.outputTopic = "exactly." + runIDText + "." + run.topicSuffix + ".out"
					for stage := 1; stage < chainedStages(plans[i], mode); stage++ {
						run.chainTopics = append(run.chainTopics, fmt.Sprintf("exactly.%s.%s.s%d", runIDText, run.topicSuffix, stage))
					}
				}
				runs = append(runs, run)
			}
		}
	}
	return runs, nil
}

// chainedStages is the number of chained consume-transform-produce
// stages of a run of mode under plan: group-churn's stages for a mode
// whose stage chains (a transact stage), else 1.
func chainedStages(plan faults.Plan, mode string) int {
	if action, ok := clientAction(plan, faults.ClientGroupChurn); ok && specOf(mode).Stage.Chains() {
		return action.ChainedStages()
	}
	return 1
}

// stageTopics lists, for a run whose consume stage writes a topic, the
// topics of its chain: the input, then what each stage writes (the last
// is outputTopic). Stage k reads stageTopics()[k-1].
func (plan runPlan) stageTopics() []string {
	if plan.outputTopic == "" {
		return []string{plan.topic}
	}
	return append(append([]string{plan.topic}, plan.chainTopics...), plan.outputTopic)
}

// stageReaders are the verification reads of such a run: each stage's
// output read_committed, the last stage first, each record expected with
// its stage's number, then the input the first stage consumed.
func (plan runPlan) stageReaders() []readerSpec {
	topics := plan.stageTopics()
	readers := make([]readerSpec, 0, len(topics))
	for stage := len(topics) - 1; stage >= 0; stage-- {
		readers = append(readers, readerSpec{topics[stage], verify.ReadCommitted, uint8(stage), false})
	}
	return readers
}

// commitIntervals lists the runs of one mode: one per commit interval for
// a mode that sweeps them, one (interval 0) otherwise.
func commitIntervals(mode string, workload Workload) []time.Duration {
	if !specOf(mode).SweepsCommitIntervals {
		return []time.Duration{0}
	}
	var intervals []time.Duration
	for _, interval := range workload.Transaction.CommitIntervals {
		intervals = append(intervals, time.Duration(interval))
	}
	return intervals
}

// hasFaults reports whether a plan does anything.
func hasFaults(plan faults.Plan) bool {
	return len(plan.Rules) > 0 || len(plan.Processes) > 0 || len(plan.Clients) > 0
}

// clientAction returns the plan's first client action of kind, if any.
func clientAction(plan faults.Plan, kind faults.ClientActionKind) (faults.ClientAction, bool) {
	for _, action := range plan.Clients {
		if action.Action == kind {
			return action, true
		}
	}
	return faults.ClientAction{}, false
}

// PlanModes lists the modes a plan's client faults restrict it to, for
// help text: nil when it applies to every mode (launched brokers aside).
func PlanModes(plan faults.Plan) []string {
	all := modes.Names()
	var applicable []string
	for _, mode := range all {
		if notApplicable(plan, mode, faultReach{launched: true, cluster: true}) == "" {
			applicable = append(applicable, mode)
		}
	}
	if len(applicable) == len(all) {
		return nil
	}
	return applicable
}

// faultReach is what a run's process faults can act on.
type faultReach struct {
	// launched: the target's brokers are processes the load generator
	// launched (or can launch); cluster: a replicated cluster of them
	// (leader-kill and coordinator-kill pick their broker among its
	// brokers).
	launched, cluster bool
	// hooks are the --fault-exec commands that act on the brokers of a
	// cluster it did not launch (nil: none).
	hooks *faults.Hooks
}

// notApplicable says why a plan cannot run in a mode against a target
// whose brokers the process faults reach as reach says, or "" when it
// can.
func notApplicable(plan faults.Plan, mode string, reach faultReach) string {
	if reason := processesNotApplicable(plan, reach); reason != "" {
		return reason
	}
	// A client fault applies to the modes whose spec lists it.
	spec := specOf(mode)
	for _, action := range plan.Clients {
		if spec.AcceptsClientFault(action.Action) {
			continue
		}
		accepting := modes.Accepting(action.Action)
		switch action.Action {
		case faults.ClientZombieProducer:
			return "not-applicable (zombie-producer needs the " + orList(accepting) + " mode)"
		case faults.ClientConsumerCrash:
			return "not-applicable (consumer-crash needs a consume stage: " + orList(accepting) + ")"
		case faults.ClientGroupChurn:
			return "not-applicable (group-churn needs a consume stage: " + strings.Join(accepting, ", ") + ")"
		}
	}
	return ""
}

// processesNotApplicable says why the plan's process faults cannot run
// on what reach reaches, or "".
func processesNotApplicable(plan faults.Plan, reach faultReach) string {
	switch {
	case !plan.NeedsProcesses():
		return ""
	case reach.launched:
		for _, action := range plan.Processes {
			if action.Action.Selects() && !reach.cluster {
				return "not-applicable (" + string(action.Action) + " needs a replicated cluster: --target cluster)"
			}
		}
		return ""
	}
	// A cluster the load generator did not launch: only hooks reach it,
	// and no hook cuts a broker off or slows its links.
	for _, action := range plan.Processes {
		if _, _, ok := faults.HooksFor(action.Action); !ok {
			return "not-applicable (" + string(action.Action) + " needs the partition proxies of --target cluster; no --fault-exec hook does it)"
		}
	}
	if reach.hooks == nil {
		return "not-applicable (needs a broker loadgen launched, or --fault-exec hooks that " + hookList(plan) +
			" the brokers of a cluster it did not launch)"
	}
	for _, action := range plan.Processes {
		if missing := reach.hooks.Missing(action.Action); len(missing) > 0 {
			names := make([]string, len(missing))
			for i, name := range missing {
				names[i] = string(name)
			}
			return "not-applicable (" + string(action.Action) + " needs the --fault-exec hook " + orList(names) + ")"
		}
	}
	return ""
}

// hookList names the hooks a plan's process actions need: "kill and
// start", "pause and resume".
func hookList(plan faults.Plan) string {
	var names []string
	for _, action := range plan.Processes {
		if down, up, ok := faults.HooksFor(action.Action); ok {
			for _, name := range []faults.HookName{down, up} {
				if !slices.Contains(names, string(name)) {
					names = append(names, string(name))
				}
			}
		}
	}
	if len(names) == 0 {
		return "act on"
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// cellNotApplicable is notApplicable for plan on options' target, and
// also says why a plan cannot run with the target's security: process
// faults run their own PLAINTEXT broker, and the fault proxy reads and
// rewrites Kafka requests, which TLS hides from it.
func cellNotApplicable(plan runPlan, options Options) string {
	hooks := externalHooks(options)
	if reason := notApplicable(plan.faults, plan.mode, faultReach{launched: canLaunch(options), cluster: isCluster(options),
		hooks: hooks}); reason != "" {
		return reason
	}
	switch protocol := plan.security.Config().Protocol; {
	case plan.security != nil && plan.faults.NeedsProcesses() && hooks == nil:
		return "not-applicable (process faults launch a broker of their own, which listens on PLAINTEXT, not " + protocol + ")"
	case plan.faults.NeedsProxy() && plan.security.Config().TLS():
		return "not-applicable (the fault proxy reads Kafka requests, which " + protocol + " encrypts)"
	}
	return ""
}

// orList renders "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
