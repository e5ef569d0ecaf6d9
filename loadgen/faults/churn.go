package faults

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// GroupChurn is the shape of the group-churn client action, the churn of
// franz-go's TestTxnEtl applied to a consume stage's group:
//
//   - Waves: wave 0 joins with the consume stage, before the load; wave i
//     (i ≥ 1) joins at the action's i-th firing (after, every, count).
//   - Each wave has Workers workers that stay until their phase ends, and
//     one leaver per LeaveAfter entry n: it commits n transactions (or
//     database commits, or offset commits), ends its next one with an
//     abort (the records it consumed were processed, their offsets are not
//     committed) and leaves the group.
//   - The waves are split evenly, in order, over Phases (ChurnPhase: a
//     balancer, and static membership or not). When a phase's time is up
//     (the first wave of the next phase is due), its workers still
//     running end their open transaction with an abort and leave too:
//     before the next wave joins when the balancer changes (a group
//     changes protocol only once empty), after it joined when not. The
//     last phase's workers run to the end of the run.
//
// Static members leave as Kafka's admin removes them (LeaveGroup naming
// their instance id), since a static member closing does not leave.
// Everything is bounded: count waves, Workers+len(LeaveAfter) workers
// each, per stage.
type GroupChurn struct {
	Workers    int      `yaml:"workers,omitempty"`
	LeaveAfter []int    `yaml:"leave_after,omitempty,flow"`
	Phases     []string `yaml:"phases,omitempty,flow"`
	// Stages chains consume-transform-produce stages where the mode has
	// them (eos-pipeline; default 1): stage k reads stage k-1's output,
	// each stage a group that churns alike. From stage 2 on a stage reads
	// aborted transactions — every leaving worker's — under
	// read_committed, as the later stages of TestTxnEtl's chain do.
	Stages int `yaml:"stages,omitempty"`
}

// MaxChurnStages bounds Stages.
const MaxChurnStages = 3

// ChainedStages is the number of chained stages (Stages, at least 1).
func (c GroupChurn) ChainedStages() int { return max(c.Stages, 1) }

// MaxChurnWorkers bounds the workers one group-churn run starts in all.
const MaxChurnWorkers = 64

// ChurnBalancers are the group balancers a phase may name, as Kafka's
// partition.assignment.strategy names them.
var ChurnBalancers = []string{"range", "roundrobin", "sticky", "cooperative-sticky"}

// churnStaticSuffix makes a phase's workers static members.
const churnStaticSuffix = "-static"

// ChurnPhase is one phase of a group-churn run.
type ChurnPhase struct {
	// Name is the phase as the plan spells it: a balancer, with
	// "-static" appended for static members.
	Name     string
	Balancer string
	// Static: every worker has a group.instance.id.
	Static bool
}

// ParseChurnPhase reads "range", "cooperative-sticky-static", ….
func ParseChurnPhase(text string) (ChurnPhase, error) {
	balancer, static := strings.CutSuffix(text, churnStaticSuffix)
	if !slices.Contains(ChurnBalancers, balancer) {
		return ChurnPhase{}, fmt.Errorf("phase %q: want a balancer of %v, optionally followed by %s", text, ChurnBalancers, churnStaticSuffix)
	}
	return ChurnPhase{Name: text, Balancer: balancer, Static: static}, nil
}

// ChurnWave is one wave of workers: when it joins (from the start of the
// load; wave 0 joins with the stage, before it) and its phase.
type ChurnWave struct {
	Index int
	At    time.Duration
	Phase ChurnPhase
	// PhaseIndex is Phase's index in the plan's phases; FirstOfPhase marks
	// the wave that ends the phase before it.
	PhaseIndex   int
	FirstOfPhase bool
}

func (c GroupChurn) empty() bool {
	return c.Workers == 0 && len(c.LeaveAfter) == 0 && len(c.Phases) == 0 && c.Stages == 0
}

// WavesPlanned is the number of waves the schedule asks for.
func (c GroupChurn) wavesPlanned(schedule Schedule) int { return 1 + schedule.Count }

// validate reports a group-churn shape that cannot run or is unbounded.
func (c GroupChurn) validate(schedule Schedule) error {
	switch {
	case c.Workers < 1:
		return errors.New("group-churn needs workers >= 1 (the workers of each wave that stay until their phase ends)")
	case len(c.Phases) == 0:
		return fmt.Errorf("group-churn needs phases (balancers of %v, optionally with %s)", ChurnBalancers, churnStaticSuffix)
	case schedule.Count < 1:
		return errors.New("group-churn needs count >= 1 (the waves that join mid-run): churn must be bounded")
	case schedule.Every <= 0 && schedule.Count > 1:
		return errors.New("group-churn with more than one wave needs every > 0")
	case c.Stages < 0 || c.Stages > MaxChurnStages:
		return fmt.Errorf("stages %d is outside 1..%d", c.Stages, MaxChurnStages)
	}
	for _, commits := range c.LeaveAfter {
		if commits < 0 {
			return fmt.Errorf("leave_after %d must not be negative", commits)
		}
	}
	for _, phase := range c.Phases {
		if _, err := ParseChurnPhase(phase); err != nil {
			return err
		}
	}
	waves := c.wavesPlanned(schedule)
	if waves < len(c.Phases) {
		return fmt.Errorf("%d waves (count %d, plus the first) cannot cover %d phases", waves, schedule.Count, len(c.Phases))
	}
	if total := waves * (c.Workers + len(c.LeaveAfter)) * c.ChainedStages(); total > MaxChurnWorkers {
		return fmt.Errorf("%d waves of %d workers in %d stages: %d workers, more than %d", waves, c.Workers+len(c.LeaveAfter),
			c.ChainedStages(), total, MaxChurnWorkers)
	}
	return nil
}

// Waves lists the waves that join before horizon (wave 0 always), each
// with its phase: the planned waves are split evenly, in order, over the
// phases, so a horizon that cuts the schedule short drops the last
// phases rather than squeezing them. The action must be valid.
func (a ClientAction) Waves(horizon time.Duration) []ChurnWave {
	planned := a.GroupChurn.wavesPlanned(a.Schedule)
	times := append([]time.Duration{0}, a.Times(horizon)...)
	waves := make([]ChurnWave, 0, len(times))
	for index, at := range times {
		phaseIndex := index * len(a.Phases) / planned
		phase, _ := ParseChurnPhase(a.Phases[phaseIndex])
		first := index > 0 && waves[index-1].PhaseIndex != phaseIndex
		waves = append(waves, ChurnWave{Index: index, At: at, Phase: phase, PhaseIndex: phaseIndex, FirstOfPhase: first})
	}
	return waves
}
