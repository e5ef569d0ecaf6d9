package loadgen

import (
	"errors"
	"fmt"
	"slices"

	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stats"
)

// GroupProtocolsSpec makes a workload a comparison of the consumer group
// protocols: each of its runs that has group consumers (under the
// workload's fault matrix: group-churn) runs once per protocol per
// round, on fresh topics and groups, the protocols' order rotated by one
// per round (classic first in round 1, consumer first in round 2, …), so
// a drift of the machine spreads over both. The comparison divides each
// round's consumer-protocol rebalance pause by the classic one's and
// gives the median ratio with a bootstrap interval over the rounds, as
// the overhead workload does (package stats).
//
//	group_protocols:
//	  rounds: 5          # --rounds overrides
type GroupProtocolsSpec struct {
	Rounds int `yaml:"rounds" json:"rounds"`
}

// DefaultProtocolRounds is the rounds of --group-protocol both when the
// workload names none.
const DefaultProtocolRounds = 3

func (g *GroupProtocolsSpec) validate(w Workload) error {
	switch {
	case g.Rounds < 1 || g.Rounds > 100:
		return fmt.Errorf("rounds: %d is outside 1..100", g.Rounds)
	case w.Overhead != nil || w.Security != nil || w.EqualLoad != nil:
		return errors.New("a comparison of group protocols has no overhead, security or equal_load section")
	}
	return nil
}

// planGroupProtocolRuns expands a comparison into its runs: for each
// round, the workload's runs with group consumers under each protocol,
// the protocols' order rotated by one per round. Run names are
// "<run>/<protocol> #<round>".
func planGroupProtocolRuns(workload Workload, runID uint64, bootstrap []string) ([]runPlan, error) {
	var runs []runPlan
	for round := 1; round <= workload.GroupProtocols.Rounds; round++ {
		for i := range GroupProtocols {
			protocol := GroupProtocols[(i+round-1)%len(GroupProtocols)]
			single := workload
			single.GroupProtocols, single.GroupProtocol = nil, protocol
			planned, err := planRuns(single, runID, bootstrap)
			if err != nil {
				return nil, err
			}
			for _, run := range planned {
				if !run.usesGroup() {
					continue
				}
				run.rename(fmt.Sprintf("%s/%s #%d", run.name, protocol, round), fmt.Sprintf("%s-%s.r%d", run.topicSuffix, protocol, round))
				run.round, run.slot = round, protocol
				runs = append(runs, run)
			}
		}
	}
	if len(runs) == 0 {
		return nil, errors.New("group_protocols: no run of the workload has group consumers (eos-pipeline, consumer-dedup, " +
			"external-offsets, or a mode relayed under group-churn)")
	}
	return runs, nil
}

// nameConsumerProtocolRuns appends the protocol to the names of runs with
// group consumers on the consumer protocol (a run on the classic
// protocol, the default, keeps its name).
func nameConsumerProtocolRuns(plans []runPlan) {
	for i := range plans {
		if plans[i].usesGroup() && plans[i].groupProtocol() == GroupProtocolConsumer {
			plans[i].rename(plans[i].name+"/"+GroupProtocolConsumer, plans[i].topicSuffix+"-"+GroupProtocolConsumer)
		}
	}
}

// buildGroupProtocols computes the comparison from its runs: one row per
// mode and fault plan, a side per protocol.
func buildGroupProtocols(workload Workload, runs []*report.Run) *report.GroupProtocolComparison {
	comparison := &report.GroupProtocolComparison{Rounds: workload.GroupProtocols.Rounds, Protocols: GroupProtocols,
		Baseline: GroupProtocolClassic, Resamples: overheadResamples, Confidence: overheadConfidence, RandomStream: overheadStream}
	type rowKey struct{ mode, plan string }
	var keys []rowKey
	// byRound[key][protocol][round-1] is that run.
	byRound := map[rowKey]map[string][]*report.Run{}
	for _, run := range runs {
		if run.Round < 1 || run.Round > comparison.Rounds {
			continue
		}
		key := rowKey{run.Mode, run.FaultPlan}
		if byRound[key] == nil {
			keys = append(keys, key)
			byRound[key] = map[string][]*report.Run{}
		}
		if byRound[key][run.Slot] == nil {
			byRound[key][run.Slot] = make([]*report.Run, comparison.Rounds)
		}
		byRound[key][run.Slot][run.Round-1] = run
	}
	for _, key := range keys {
		row := report.GroupProtocolRow{Mode: key.mode, FaultPlan: key.plan}
		for _, protocol := range GroupProtocols {
			row.Sides = append(row.Sides, protocolSide(protocol, byRound[key][protocol]))
		}
		baseline, other := byRound[key][GroupProtocolClassic], byRound[key][GroupProtocolConsumer]
		noBand := stats.Interval{}
		row.MedianPauseRatio, _ = ratioStat(other, baseline, medianPauseOf, false, noBand, false)
		row.TotalPauseRatio, _ = ratioStat(other, baseline, totalPauseOf, false, noBand, false)
		comparison.Rows = append(comparison.Rows, row)
	}
	return comparison
}

// protocolSide summarizes one protocol's runs of a row.
func protocolSide(protocol string, runs []*report.Run) report.GroupProtocolSide {
	side := report.GroupProtocolSide{Protocol: protocol, Runs: runNames(runs)}
	var medians, totals []float64
	for _, run := range runs {
		if run == nil {
			continue
		}
		if run.Status == report.StatusPass {
			side.Passed++
		}
		lost, duplicated := worstLossAndDuplicates(run.Checks)
		side.Lost += lost
		side.Duplicated += duplicated
		if run.Status == report.StatusPass && run.RebalancePauses != nil && run.RebalancePauses.Pauses > 0 {
			medians = append(medians, run.RebalancePauses.MedianMs)
			totals = append(totals, run.RebalancePauses.TotalMs)
		}
	}
	side.MedianPause, side.TotalPaused = estimate(medians), estimate(totals)
	return side
}

// worstLossAndDuplicates are the run's lost and duplicated counts as the
// summary table shows them: the worst over its checks.
func worstLossAndDuplicates(checks []report.Check) (lost, duplicated uint64) {
	for _, check := range checks {
		lost, duplicated = max(lost, check.Counts.Lost), max(duplicated, check.Counts.Duplicated)
	}
	return lost, duplicated
}

// estimate is the median of values with its bootstrap interval.
func estimate(values []float64) report.Estimate {
	result := report.Estimate{Values: slices.Clone(values)}
	if result.Values == nil {
		result.Values = []float64{}
	}
	if len(values) > 0 {
		interval := stats.BootstrapMedian(values, overheadResamples, overheadConfidence, overheadStream)
		result.Median, result.Low, result.High = interval.Median, interval.Low, interval.High
	}
	return result
}

// medianPauseOf and totalPauseOf are the measures the comparison divides;
// 0 for a run without pauses measured.
func medianPauseOf(run *report.Run) float64 {
	if run.RebalancePauses == nil || run.RebalancePauses.Pauses == 0 {
		return 0
	}
	return run.RebalancePauses.MedianMs
}

func totalPauseOf(run *report.Run) float64 {
	if run.RebalancePauses == nil || run.RebalancePauses.Pauses == 0 {
		return 0
	}
	return run.RebalancePauses.TotalMs
}
