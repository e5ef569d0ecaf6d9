package faults

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/exactly-eos/exactly/internal/wait"
)

// Plan is a named set of faults for one run, read from YAML:
//
//	name: ack-loss
//	description: lose 5% of Produce acks
//	seed: 1                 # makes probabilistic proxy rules reproducible
//	duration: 12s           # optional: the measured time a run under the plan needs
//	partitions: 8           # optional: the fewest partitions per topic it needs
//	rules: [...]            # proxy rules, see Rule
//	processes: [...]        # faults on brokers the load generator launched, see ProcessAction
//	clients: [...]          # faults the runner performs on its own clients, see ClientAction
//
// Unknown keys are errors.
type Plan struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	Seed        int64  `yaml:"seed"`
	// Duration, when set, is the measured time a run under the plan needs
	// at least (its schedule fires until then); a matrix entry's duration
	// overrides it.
	Duration Duration `yaml:"duration,omitempty"`
	// Partitions, when set, is the fewest partitions per topic a run
	// under the plan needs (group-churn: enough for each worker to hold
	// several, as TestTxnEtl's 7 to 31).
	Partitions int             `yaml:"partitions,omitempty"`
	Rules      []Rule          `yaml:"rules,omitempty"`
	Processes  []ProcessAction `yaml:"processes,omitempty"`
	Clients    []ClientAction  `yaml:"clients,omitempty"`
}

// Schedule says when an action fires: first at After (from the start of
// the measured run), then every Every, at most Count times. Every 0 means
// once; Count 0 means no limit.
type Schedule struct {
	After Duration `yaml:"after,omitempty"`
	Every Duration `yaml:"every,omitempty"`
	Count int      `yaml:"count,omitempty"`
}

// Validate reports a schedule that cannot run.
func (s Schedule) Validate() error {
	switch {
	case s.After < 0 || s.Every < 0:
		return errors.New("after and every must not be negative")
	case s.Count < 0:
		return fmt.Errorf("count %d must not be negative", s.Count)
	}
	return nil
}

// Times lists the firing offsets before horizon.
func (s Schedule) Times(horizon time.Duration) []time.Duration {
	var out []time.Duration
	for at := time.Duration(s.After); at < horizon; at += time.Duration(s.Every) {
		if s.Count > 0 && len(out) == s.Count {
			break
		}
		out = append(out, at)
		if s.Every == 0 {
			break
		}
	}
	return out
}

// ProcessActionKind is what a process action does to a broker.
type ProcessActionKind string

// Process action kinds.
const (
	// ProcessKillRestart sends SIGKILL, waits Down, starts the broker
	// again on the same address and data dir (failure class 1).
	ProcessKillRestart ProcessActionKind = "kill-restart"
	// ProcessPause sends SIGSTOP, waits Down, sends SIGCONT: the broker
	// holds its connections but answers nothing.
	ProcessPause ProcessActionKind = "pause"
	// ProcessLeaderKill is kill-restart of the broker that leads the most
	// partitions of the run's topic when the action fires (a launched
	// cluster; the run's Selector finds it).
	ProcessLeaderKill ProcessActionKind = "leader-kill"
	// ProcessCoordinatorKill is kill-restart of the broker that is the
	// transaction coordinator of the run's first producer when the action
	// fires (a launched cluster; the run's Selector finds it).
	ProcessCoordinatorKill ProcessActionKind = "coordinator-kill"
	// ProcessBrokerPartition cuts the broker that leads the most partitions
	// of the run's topic off the network (from the other brokers and from
	// clients) for Down, then heals it: the cluster's partition proxies
	// (package internal/partition) do it, so the broker keeps running and
	// keeps its own view of the cluster (a launched cluster; the run's
	// Selector finds it).
	ProcessBrokerPartition ProcessActionKind = "broker-partition"
	// ProcessLeaderPause sends SIGSTOP to the broker that leads the most
	// partitions of the run's topic when the action fires, waits Down,
	// sends SIGCONT: with Down longer than the cluster's session timeout
	// a successor is elected meanwhile, and the old leader wakes up still
	// believing it leads (a launched cluster, or --fault-exec pause and
	// resume hooks).
	ProcessLeaderPause ProcessActionKind = "leader-pause"
	// ProcessGroupCoordinatorKill is kill-restart of the broker that
	// coordinates the run's consume group (FindCoordinator of the group;
	// in a mode without one, the broker that would) when the action fires.
	ProcessGroupCoordinatorKill ProcessActionKind = "group-coordinator-kill"
	// ProcessSlowFollower slows the links of the broker that leads the
	// fewest partitions of the run's topic among those holding a replica
	// of it (a follower of most partitions) to the other brokers, both
	// ways, with the action's Network for Down, then restores them: every
	// connection it opens to another broker (its replica fetches, quorum
	// RPCs) goes through the cluster's partition proxies (package
	// internal/partition) under the impairment, so acks=all waits for it
	// while clients reach every broker unimpaired (a launched cluster
	// behind partition proxies; the run's Selector finds the broker).
	ProcessSlowFollower ProcessActionKind = "slow-follower"
)

// processActionKinds lists every kind, in the order errors name them.
var processActionKinds = []ProcessActionKind{ProcessKillRestart, ProcessPause, ProcessLeaderKill, ProcessCoordinatorKill,
	ProcessBrokerPartition, ProcessLeaderPause, ProcessGroupCoordinatorKill, ProcessSlowFollower}

// Selects reports whether the action picks its broker when it fires (by
// the run's Selector) rather than by index or round robin.
func (k ProcessActionKind) Selects() bool {
	switch k {
	case ProcessLeaderKill, ProcessCoordinatorKill, ProcessBrokerPartition, ProcessLeaderPause, ProcessGroupCoordinatorKill,
		ProcessSlowFollower:
		return true
	}
	return false
}

// Selector finds, when an action that Selects fires, the index of the
// launched broker it acts on.
type Selector func(ctx context.Context, action ProcessActionKind) (int, error)

// ProcessAction is a fault on broker processes: brokers the load
// generator launched as subprocesses, or the brokers of a cluster it did
// not launch through the operator's --fault-exec hooks (Hooks,
// RunHookActions), where broker is an index among the brokers of
// Metadata in node id order.
//
//	processes:
//	  - action: kill-restart   # or pause; the selecting kinds (see Selects) take no broker
//	    broker: 0              # index among launched brokers; omitted: round robin
//	    after: 5s
//	    every: 10s
//	    count: 3
//	    down: 1s               # time dead (kill-restart), stopped (pause), cut off (broker-partition) or slowed (slow-follower)
//	    network: {delay: 10ms} # slow-follower only, and required: the impairment of its links to the other brokers (see Network)
//
// A slow-follower's network may be zero (network: {}): the broker's
// links then go through the same proxies unimpaired, a reference run.
type ProcessAction struct {
	Action   ProcessActionKind `yaml:"action"`
	Broker   *int              `yaml:"broker,omitempty"`
	Schedule `yaml:",inline"`
	Down     Duration `yaml:"down"`
	// Network is the impairment slow-follower applies to each direction
	// of its broker's links to the other brokers; nil for every other
	// kind.
	Network *Network `yaml:"network,omitempty"`
}

// Validate reports an action that cannot run.
func (a ProcessAction) Validate() error {
	if !slices.Contains(processActionKinds, a.Action) {
		return fmt.Errorf("action %q is not one of %v", a.Action, processActionKinds)
	}
	if a.Action.Selects() && a.Broker != nil {
		return fmt.Errorf("%s picks its broker when it fires: leave broker out", a.Action)
	}
	if a.Broker != nil && *a.Broker < 0 {
		return fmt.Errorf("broker %d: want an index >= 0 among launched brokers", *a.Broker)
	}
	if a.Down <= 0 {
		return fmt.Errorf("%s needs down > 0 (how long the broker stays dead, stopped, cut off or slowed)", a.Action)
	}
	switch {
	case a.Action == ProcessSlowFollower && a.Network == nil:
		return errors.New("slow-follower needs a network: the impairment of the broker's links to the other brokers " +
			"(e.g. network: {delay: 10ms}; network: {} for a reference run through the same proxies)")
	case a.Action == ProcessSlowFollower:
		if err := a.Network.Validate(); err != nil {
			return fmt.Errorf("network %s: %w", a.Network, err)
		}
	case a.Network != nil:
		return fmt.Errorf("network applies to slow-follower, not %s", a.Action)
	}
	return a.Schedule.Validate()
}

// ClientActionKind is a client fault the runner performs itself.
type ClientActionKind string

// Client action kinds (failure classes 3 and 4).
const (
	// ClientZombieProducer: the runner freezes one transactional producer
	// (stops calling it, its in-flight requests stay pending), starts a new
	// instance with the same transactional.id, which fences the old epoch,
	// and after Pause lets the old one continue; its writes must be fenced.
	ClientZombieProducer ClientActionKind = "zombie-producer"
	// ClientConsumerCrash: the runner kills one consume-transform-produce
	// worker mid-transaction (no commit, no abort, no leave-group) and
	// starts a replacement after RestartAfter; every input record must
	// still appear exactly once downstream.
	ClientConsumerCrash ClientActionKind = "consumer-crash"
	// ClientGroupChurn: the consume stage's group churns, as in franz-go's
	// TestTxnEtl: workers join in waves (one with the stage, then one at
	// each firing), some commit LeaveAfter transactions, abort their next
	// one and leave the group, and the balancer rotates through Phases.
	// See GroupChurn.
	ClientGroupChurn ClientActionKind = "group-churn"
)

// ClientAction is a client fault; the runner reads it and performs it.
//
//	clients:
//	  - action: zombie-producer  # or consumer-crash, group-churn
//	    after: 3s
//	    every: 10s
//	    count: 0
//	    pause: 2s                # zombie-producer: how long the old instance stays frozen
//	    restart_after: 500ms     # consumer-crash: delay before the replacement worker starts
//	    workers: 2               # group-churn: see GroupChurn for these three
//	    leave_after: [0, 2]
//	    phases: [range, cooperative-sticky, cooperative-sticky-static]
type ClientAction struct {
	Action       ClientActionKind `yaml:"action"`
	Schedule     `yaml:",inline"`
	Pause        Duration `yaml:"pause,omitempty"`
	RestartAfter Duration `yaml:"restart_after,omitempty"`
	GroupChurn   `yaml:",inline"`
}

// Validate reports an action that cannot run.
func (a ClientAction) Validate() error {
	switch a.Action {
	case ClientZombieProducer:
		if a.Pause <= 0 {
			return errors.New("zombie-producer needs pause > 0 (how long the old producer stays frozen)")
		}
		if a.RestartAfter != 0 {
			return errors.New("restart_after applies to consumer-crash, not zombie-producer")
		}
	case ClientConsumerCrash:
		if a.RestartAfter < 0 {
			return errors.New("restart_after must not be negative")
		}
		if a.Pause != 0 {
			return errors.New("pause applies to zombie-producer, not consumer-crash")
		}
	case ClientGroupChurn:
		if a.Pause != 0 || a.RestartAfter != 0 {
			return errors.New("pause and restart_after do not apply to group-churn")
		}
		if err := a.GroupChurn.validate(a.Schedule); err != nil {
			return err
		}
	default:
		return fmt.Errorf("action %q is not one of [%s %s %s]", a.Action, ClientZombieProducer, ClientConsumerCrash, ClientGroupChurn)
	}
	if a.Action != ClientGroupChurn && !a.GroupChurn.empty() {
		return fmt.Errorf("workers, leave_after and phases apply to group-churn, not %s", a.Action)
	}
	return a.Schedule.Validate()
}

// Validate reports the first problem in the plan, naming where it is.
func (p Plan) Validate() error {
	if strings.TrimSpace(p.Name) == "" {
		return errors.New("name: a plan needs a name")
	}
	if p.Duration < 0 {
		return fmt.Errorf("duration: %s is negative", p.Duration)
	}
	if p.Partitions < 0 || p.Partitions > 10_000 {
		return fmt.Errorf("partitions: %d is outside 0..10000", p.Partitions)
	}
	for i, rule := range p.Rules {
		if err := rule.Validate(); err != nil {
			return fmt.Errorf("rules[%d] (%s): %w", i, rule, err)
		}
	}
	for i, action := range p.Processes {
		if err := action.Validate(); err != nil {
			return fmt.Errorf("processes[%d]: %w", i, err)
		}
	}
	for i, action := range p.Clients {
		if err := action.Validate(); err != nil {
			return fmt.Errorf("clients[%d]: %w", i, err)
		}
	}
	return nil
}

// NeedsProxy reports whether the plan has proxy rules.
func (p Plan) NeedsProxy() bool { return len(p.Rules) > 0 }

// NeedsProcesses reports whether the plan acts on broker processes, which
// only brokers the load generator launched allow, or --fault-exec hooks.
func (p Plan) NeedsProcesses() bool { return len(p.Processes) > 0 }

//go:embed plans/*.yaml
var embeddedPlans embed.FS

// PlanNames lists the plans shipped in the binary.
func PlanNames() []string {
	entries, err := fs.ReadDir(embeddedPlans, "plans")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// LoadPlan reads a plan from a file, or one shipped in the binary by name
// ("ack-loss" or "ack-loss.yaml").
func LoadPlan(nameOrPath string) (Plan, error) {
	data, err := os.ReadFile(nameOrPath)
	if errors.Is(err, fs.ErrNotExist) && !strings.ContainsRune(nameOrPath, os.PathSeparator) {
		name := strings.TrimSuffix(nameOrPath, ".yaml") + ".yaml"
		data, err = embeddedPlans.ReadFile(path.Join("plans", name))
		if err != nil {
			return Plan{}, fmt.Errorf("fault plan %q: no such file, and not one of the shipped plans %v", nameOrPath, PlanNames())
		}
	} else if err != nil {
		return Plan{}, fmt.Errorf("read fault plan: %w", err)
	}
	plan, err := ParsePlan(data)
	if err != nil {
		return Plan{}, fmt.Errorf("fault plan %s: %w", nameOrPath, err)
	}
	return plan, nil
}

// ParsePlan decodes YAML (unknown keys are errors) and validates it.
func ParsePlan(data []byte) (Plan, error) {
	var plan Plan
	decoder := yaml.NewDecoder(bytes.NewReader(data))
	decoder.KnownFields(true)
	if err := decoder.Decode(&plan); err != nil {
		return Plan{}, fmt.Errorf("parse: %w", err)
	}
	if err := plan.Validate(); err != nil {
		return Plan{}, err
	}
	return plan, nil
}

// RunProcessActions runs every process action of a plan against the
// launched brokers until each schedule is done or ctx ends (which is not an
// error). Broker indexes are checked first.
func RunProcessActions(ctx context.Context, actions []ProcessAction, processes []*Process, selector Selector) error {
	for i, action := range actions {
		if err := action.Validate(); err != nil {
			return fmt.Errorf("processes[%d]: %w", i, err)
		}
		if len(processes) == 0 {
			return fmt.Errorf("processes[%d]: %s needs brokers the load generator launched; there are none", i, action.Action)
		}
		if action.Broker != nil && *action.Broker >= len(processes) {
			return fmt.Errorf("processes[%d]: broker %d, but only %d brokers were launched", i, *action.Broker, len(processes))
		}
		if action.Action.Selects() && selector == nil {
			return fmt.Errorf("processes[%d]: %s needs a launched cluster to find its broker in", i, action.Action)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(actions))
	for i, action := range actions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runProcessAction(ctx, action, processes, selector)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// onSchedule calls fire on schedule's firings, from now, until it is done,
// ctx ends (not an error) or fire fails.
func onSchedule(ctx context.Context, schedule Schedule, fire func(fired int) error) error {
	start := time.Now()
	for fired := 0; schedule.Count == 0 || fired < schedule.Count; fired++ {
		at := time.Duration(schedule.After) + time.Duration(fired)*time.Duration(schedule.Every)
		if fired > 0 && schedule.Every == 0 {
			return nil
		}
		if !wait.Until(ctx, start.Add(at)) {
			return nil
		}
		if err := fire(fired); err != nil {
			return err
		}
	}
	return nil
}

// runProcessAction fires one action on its schedule, from now.
func runProcessAction(ctx context.Context, action ProcessAction, processes []*Process, selector Selector) error {
	return onSchedule(ctx, action.Schedule, func(fired int) error {
		target := processes[fired%len(processes)]
		if action.Broker != nil {
			target = processes[*action.Broker]
		}
		if action.Action.Selects() {
			index, err := selector(ctx, action.Action)
			if err == nil && (index < 0 || index >= len(processes)) {
				err = fmt.Errorf("broker index %d, but %d brokers were launched", index, len(processes))
			}
			if err != nil {
				if ctx.Err() != nil {
					if fired > 0 {
						return nil
					}
					// Not a failure of the run, but the reason the fault
					// never acted: say so.
					return fmt.Errorf("%s: the run ended before it found its broker (%w)", action.Action, err)
				}
				return fmt.Errorf("%s: find its broker: %w", action.Action, err)
			}
			target = processes[index]
		}
		if err := applyProcessAction(ctx, action, target); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s %s: %w", action.Action, target.Name(), err)
		}
		return nil
	})
}

func applyProcessAction(ctx context.Context, action ProcessAction, target *Process) error {
	down := time.Duration(action.Down)
	switch action.Action {
	case ProcessPause, ProcessLeaderPause:
		if err := target.Pause(); err != nil {
			return err
		}
		wait.Until(ctx, time.Now().Add(down))
		// Resume even when ctx ended: never leave a broker stopped.
		return target.Resume()
	case ProcessBrokerPartition:
		if err := target.Cut(); err != nil {
			return err
		}
		wait.Until(ctx, time.Now().Add(down))
		// Heal even when ctx ended: never leave a broker cut off.
		return target.Heal()
	case ProcessSlowFollower:
		if err := target.Degrade(action.Network.Link()); err != nil {
			return err
		}
		wait.Until(ctx, time.Now().Add(down))
		// Restore even when ctx ended: never leave a broker's links slowed.
		return target.Restore()
	}
	return target.Restart(ctx, down) // kill-restart, leader-kill, coordinator-kill
}
