package loadgen

import (
	"time"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// Recovery is read off a run's acknowledged-records timeline (100 ms
// steps, see sampler) in windows of recoveryWindow: the throughput before a
// fault is the mean over up to recoveryBefore just before it, and the run
// is back once a window's throughput reaches report.RecoveryLevel of that.
// A fault after which no window within recoveryDipHorizon falls below the
// level did not dip: its recovery is 0.
const (
	recoveryWindow     = 200 * time.Millisecond
	recoveryBefore     = 2 * time.Second
	recoveryDipHorizon = 3 * time.Second
	// recoverySkip leaves out the load's first steps, while the clients
	// connect and their first batches fill: not a level to recover to.
	recoverySkip = 300 * time.Millisecond
	// recoveryMerge: faults closer than this to the previous one measured
	// (a blackhole of several brokers) are one fault.
	recoveryMerge = 500 * time.Millisecond
)

// momentKinds are the faults that happen at one moment and hit the
// producers' path: the ones a recovery time is measured after. Their ends
// (restart, resume, heal) are not faults of their own.
var momentKinds = map[string]bool{
	string(faults.KindKill): true, string(faults.KindPause): true, string(faults.KindCut): true,
	string(faults.KindBlackhole): true, string(faults.KindZombieProducer): true,
}

// consumeSideKinds are client faults that touch only the consume stage.
var consumeSideKinds = map[faults.ClientActionKind]bool{
	faults.ClientConsumerCrash: true, faults.ClientGroupChurn: true,
}

// recoveryOf measures how a run's throughput came back after each of its
// moment faults. timeline holds the acknowledged records of each step from
// the load's start, loadEnd is when the producers stopped (the flush after
// it is not a dip); nil for a plan without faults.
func recoveryOf(plan faults.Plan, timeline []int64, events []report.FaultEvent, loadEnd time.Duration) *report.Recovery {
	if !hasFaults(plan) {
		return nil
	}
	recovery := &report.Recovery{}
	steps := func(d time.Duration) int { return int(d / timelineStep) }
	window, end := steps(recoveryWindow), min(steps(loadEnd), len(timeline))
	rate := func(from int) float64 { // records/s over the window from step from
		var sum int64
		for _, acked := range timeline[from : from+window] {
			sum += acked
		}
		return float64(sum) / recoveryWindow.Seconds()
	}
	lastMeasured, backAt := -1.0, steps(recoverySkip)
	for _, event := range events {
		if !momentKinds[event.Kind] || (lastMeasured >= 0 && event.ElapsedSeconds-lastMeasured < recoveryMerge.Seconds()) {
			continue
		}
		at := int(event.ElapsedSeconds / timelineStep.Seconds())
		from := max(at-steps(recoveryBefore), backAt)
		if at-from < window || at+window > end {
			continue // too little load before the fault, or after it, to tell
		}
		lastMeasured = event.ElapsedSeconds
		var before int64
		for _, acked := range timeline[from:at] {
			before += acked
		}
		level := float64(before) / (float64(at-from) * timelineStep.Seconds())
		measured := report.FaultRecovery{Kind: event.Kind, AtSeconds: event.ElapsedSeconds, BeforeRecordsPerSecond: level,
			LowestRecordsPerSecond: level}
		dip := -1
		for i := at; i+window <= end && i < at+steps(recoveryDipHorizon); i++ {
			if rate(i) < report.RecoveryLevel*level {
				dip = i
				break
			}
		}
		if dip >= 0 {
			measured.Seconds = -1
			for i := dip; i+window <= end; i++ {
				current := rate(i)
				measured.LowestRecordsPerSecond = min(measured.LowestRecordsPerSecond, current)
				if current >= report.RecoveryLevel*level {
					measured.Seconds = float64(i-at) * timelineStep.Seconds()
					backAt = i
					break
				}
			}
		}
		recovery.Faults = append(recovery.Faults, measured)
		switch {
		case recovery.WorstSeconds < 0:
		case measured.Seconds < 0:
			recovery.WorstSeconds = -1
		default:
			recovery.WorstSeconds = max(recovery.WorstSeconds, measured.Seconds)
		}
	}
	if len(recovery.Faults) == 0 {
		recovery.Continuous = len(plan.Rules) > 0 && len(plan.Processes) == 0
		recovery.ConsumeSide = !recovery.Continuous && consumeSideOnly(plan)
	}
	return recovery
}

// consumeSideOnly reports whether every fault of plan is a client fault of
// the consume stage.
func consumeSideOnly(plan faults.Plan) bool {
	if len(plan.Rules) > 0 || len(plan.Processes) > 0 || len(plan.Clients) == 0 {
		return false
	}
	for _, action := range plan.Clients {
		if !consumeSideKinds[action.Action] {
			return false
		}
	}
	return true
}

// countAbove counts a microsecond histogram's values above limit.
func countAbove(histogram *hdrHistogram, limit time.Duration) int64 {
	var count int64
	for _, bar := range histogram.Distribution() {
		if bar.From > limit.Microseconds() {
			count += bar.Count
		}
	}
	return count
}

// delayedOf counts the run's measured records held up past a second.
func delayedOf(metrics *runMetrics) *report.Delayed {
	limit := time.Duration(report.DelayedThresholdMillis) * time.Millisecond
	metrics.mu.Lock()
	defer metrics.mu.Unlock()
	return &report.Delayed{ThresholdMillis: report.DelayedThresholdMillis,
		ProduceAck: countAbove(metrics.produceAck, limit), EndToEnd: countAbove(metrics.endToEnd, limit)}
}
