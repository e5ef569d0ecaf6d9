package loadgen

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// Network sweep paths (NetworkSweep.Path).
const (
	// NetworkPathClients slows the network between the load generator's
	// clients and every broker, in the fault proxy.
	NetworkPathClients = "clients"
	// NetworkPathFollower slows one follower's links to the other brokers
	// of a launched cluster (--target cluster), in its partition proxies:
	// acks=all waits for it.
	NetworkPathFollower = "follower"
)

// NetworkSweep makes the rounds of an overhead workload run once per
// round-trip time, so that each guarantee's cost is measured against the
// network it runs over: on loopback every round trip is a tenth of a
// millisecond, and idempotence and transactions cost round trips more
// than CPU. Every slot of a step runs over the same network, so each
// ratio compares a mode with at-least-once at the same round trip. The
// step of 0 runs through the same proxies without delay: the reference.
//
//	overhead:
//	  network:
//	    path: clients            # or follower (needs --target cluster)
//	    rtts: [0, 1ms, 5ms, 20ms, 50ms]
//	    jitter: 1ms              # optional, each direction, at every step but 0
//	    distribution: normal     # of the jitter: uniform (default) or normal
//	    rate: 100mbit            # optional bandwidth cap, each direction
//	    loss: 0.001              # optional segment loss
//
// With fault plans the sweep runs under each: the network is layered on
// the plan. --rtt replaces the round-trip times.
type NetworkSweep struct {
	// Path is what the sweep slows: NetworkPathClients (default) or
	// NetworkPathFollower.
	Path string `yaml:"path" json:"path"`
	// RTTs are the round-trip times added, each direction delayed by half.
	RTTs []Duration `yaml:"rtts" json:"rtts"`
	// Jitter, Distribution, Rate and Loss impair each direction further
	// at every step but the reference (faults.Network).
	Jitter       Duration `yaml:"jitter" json:"jitter,omitempty"`
	Distribution string   `yaml:"distribution" json:"distribution,omitempty"`
	Rate         string   `yaml:"rate" json:"rate,omitempty"`
	Loss         float64  `yaml:"loss" json:"loss,omitempty"`
}

// networkStep is one step of a sweep, carried by the matrix entry of the
// rounds that run over it.
type networkStep struct {
	path    string
	rtt     time.Duration
	network faults.Network // each direction's
}

// Validate reports a sweep that cannot run.
func (s *NetworkSweep) Validate() error {
	switch s.Path {
	case "", NetworkPathClients, NetworkPathFollower:
	default:
		return fmt.Errorf("path %q is not %s or %s", s.Path, NetworkPathClients, NetworkPathFollower)
	}
	if len(s.RTTs) == 0 {
		return errors.New("rtts: give the round-trip times to sweep, such as [0, 1ms, 5ms, 20ms, 50ms]")
	}
	seen := map[Duration]bool{}
	for _, rtt := range s.RTTs {
		if rtt < 0 {
			return fmt.Errorf("rtts: %v is negative", rtt)
		}
		if seen[rtt] {
			return fmt.Errorf("rtts: %v is given twice", rtt)
		}
		seen[rtt] = true
	}
	for _, rtt := range s.RTTs {
		if rtt == 0 {
			continue
		}
		step, err := s.step(rtt)
		if err != nil {
			return err
		}
		if err := step.network.Validate(); err != nil {
			return fmt.Errorf("at rtt %v: %w", rtt, err)
		}
	}
	return nil
}

// path is the sweep's path, the default filled in.
func (s *NetworkSweep) path() string {
	if s.Path == "" {
		return NetworkPathClients
	}
	return s.Path
}

// step is the sweep's step at rtt: half of it each way, and the sweep's
// other impairments unless rtt is the reference 0.
func (s *NetworkSweep) step(rtt Duration) (networkStep, error) {
	step := networkStep{path: s.path(), rtt: time.Duration(rtt)}
	step.network.Delay = faults.Duration(rtt / 2)
	if rtt == 0 {
		return step, nil
	}
	step.network.Jitter = faults.Duration(s.Jitter)
	step.network.Distribution = netem.Distribution(s.Distribution)
	step.network.Loss = s.Loss
	if s.Rate != "" {
		rate, err := netem.ParseRate(s.Rate)
		if err != nil {
			return step, err
		}
		step.network.Rate = faults.Rate(rate)
	}
	return step, nil
}

// expand returns, for each of entries (the rounds' fault plans; one entry
// without a plan for rounds without faults), one entry per step.
func (s *NetworkSweep) expand(entries []MatrixEntry) []MatrixEntry {
	var out []MatrixEntry
	for _, entry := range entries {
		for _, rtt := range s.RTTs {
			step, err := s.step(rtt)
			if err != nil {
				continue // validate reported it
			}
			stepped := entry
			stepped.network = &step
			out = append(out, stepped)
		}
	}
	return out
}

// rttLabel names a round-trip time in plan names and topics: "rtt-0.5ms".
func rttLabel(rtt time.Duration) string {
	return "rtt-" + strconv.FormatFloat(float64(rtt)/float64(time.Millisecond), 'f', -1, 64) + "ms"
}

// layer returns plan with the step's network on it: a degrade rule
// between the clients and every broker, or a slow-follower action for the
// whole run; named after the plan and the step.
func (step networkStep) layer(plan faults.Plan, planned bool) faults.Plan {
	name := rttLabel(step.rtt)
	if step.path == NetworkPathFollower {
		name = "follower-" + name
	}
	if planned {
		plan.Name += "-" + name
	} else {
		plan = faults.Plan{Name: name, Seed: 1}
	}
	if plan.Description == "" {
		plan.Description = step.describe()
	} else {
		plan.Description += "; " + step.describe()
	}
	switch step.path {
	case NetworkPathFollower:
		plan.Processes = append(plan.Processes, followerAction(step.network))
	default:
		plan.Rules = append(plan.Rules, faults.Rule{Name: name, Action: faults.ActionDegrade, Network: step.network})
	}
	return plan
}

// followerAction is the slow-follower action of a step.
func followerAction(network faults.Network) faults.ProcessAction {
	return faults.ProcessAction{Action: faults.ProcessSlowFollower, Down: faults.Duration(followerSweepDown), Network: &network}
}

// followerSweepDown is how long a sweep's slow follower stays slow: longer
// than any run, so it is slow for the whole run (the action ends with it).
const followerSweepDown = 24 * time.Hour

// describe says what the step does, for plan descriptions.
func (step networkStep) describe() string {
	where := "between the clients and every broker"
	if step.path == NetworkPathFollower {
		where = "on one follower's links to the other brokers"
	}
	return fmt.Sprintf("round trip +%v %s (each way: %s)", step.rtt, where, step.network)
}

// point is the step as the results file records it.
func (step networkStep) point(plan string) *report.NetworkPoint {
	return &report.NetworkPoint{Path: step.path, RTTMs: float64(step.rtt) / float64(time.Millisecond),
		Link: step.network.String(), Plan: plan}
}
