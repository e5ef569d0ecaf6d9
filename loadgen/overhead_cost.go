package loadgen

import (
	"fmt"
	"slices"

	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stats"
)

// faultCost summarizes what a fault plan did to one slot over its rounds
// (nil entries: rounds that did not run): each round's worst recovery with
// the median's bootstrap interval, the records held past a second, and the
// checker's counts. Rounds that were not applicable or unsupported add
// nothing.
func faultCost(rounds []*report.Run) *report.FaultCost {
	cost := &report.FaultCost{RecoverySeconds: []float64{}, DelayedAck: []int64{}, DelayedEndToEnd: []int64{}}
	var notes []string
	var pauses []int64 // group churn's median rebalance pause per round, ms
	longest := 0.0
	for _, run := range rounds {
		if run == nil || run.Status == report.StatusNotApplicable || run.Status == report.StatusUnsupported {
			continue
		}
		if run.Status == report.StatusFail || run.Status == report.StatusError {
			cost.Failed++
		}
		seen := observe(run)
		cost.Lost += seen.lost
		cost.Duplicated += seen.duplicated
		if run.Delayed != nil {
			cost.DelayedAck = append(cost.DelayedAck, run.Delayed.ProduceAck)
			cost.DelayedEndToEnd = append(cost.DelayedEndToEnd, run.Delayed.EndToEnd)
		}
		if run.RebalancePauses != nil && run.RebalancePauses.Events > 0 {
			pauses = append(pauses, int64(run.RebalancePauses.MedianMs))
		}
		switch recovery := run.Recovery; {
		case recovery == nil:
		case recovery.Continuous:
			notes = append(notes, "continuous")
		case recovery.ConsumeSide:
			notes = append(notes, "consume side")
		case len(recovery.Faults) == 0:
		case recovery.WorstSeconds < 0:
			cost.NotRecovered++
			cost.RecoverySeconds = append(cost.RecoverySeconds, -1)
		default:
			cost.RecoverySeconds = append(cost.RecoverySeconds, recovery.WorstSeconds)
			longest = max(longest, recovery.WorstSeconds)
		}
	}
	if len(cost.RecoverySeconds) > 0 {
		// A round that never recovered counts as the longest recovery
		// measured plus a step, so that the median leans its way without
		// inventing a time.
		values := make([]float64, len(cost.RecoverySeconds))
		for i, seconds := range cost.RecoverySeconds {
			values[i] = seconds
			if seconds < 0 {
				values[i] = longest + timelineStep.Seconds()
			}
		}
		interval := stats.BootstrapMedian(values, overheadResamples, overheadConfidence, overheadStream)
		cost.RecoveryMedian, cost.RecoveryLow, cost.RecoveryHigh = interval.Median, interval.Low, interval.High
	} else if len(notes) > 0 {
		slices.Sort(notes)
		cost.RecoveryNote = slices.Compact(notes)[0]
		if cost.RecoveryNote == "consume side" && len(pauses) > 0 {
			// What a consume-side fault costs is the stage's pause.
			cost.RecoveryNote = fmt.Sprintf("consume side: rebalance pause %.0f ms", medianOf(pauses))
		}
	}
	cost.DelayedAckMedian = medianOf(cost.DelayedAck)
	cost.DelayedEndToEndMedian = medianOf(cost.DelayedEndToEnd)
	return cost
}

// medianOf is the median of counts (0 for none).
func medianOf(counts []int64) float64 {
	if len(counts) == 0 {
		return 0
	}
	values := make([]float64, len(counts))
	for i, count := range counts {
		values[i] = float64(count)
	}
	return stats.Median(values)
}

// notApplicableReason is the reason the runs were not applicable when
// none of them ran ("" when one did, or there were none).
func notApplicableReason(rounds []*report.Run) string {
	reason := ""
	for _, run := range rounds {
		if run == nil {
			continue
		}
		if run.Status != report.StatusNotApplicable {
			return ""
		}
		reason = run.Reason
	}
	return reason
}
