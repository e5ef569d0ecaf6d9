package loadgen

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stats"
)

// OverheadSpec makes a workload a run of interleaved rounds: in each
// round every slot (the baseline, a second baseline slot for the A/A
// noise floor, then each other mode and commit interval) runs once, on a
// fresh topic, in an order rotated by one per round, so that a drift of
// the machine during the run (another process, a warm cache) spreads
// over every slot instead of biasing the ones that ran last. Each
// slot's throughput and p99 produce-ack latency are divided by the
// baseline's of the same round; the median of those ratios, with a
// bootstrap interval over the rounds, is the overhead (package stats).
//
//	overhead:
//	  rounds: 5          # --rounds overrides
//	  rates: [0, 5000]   # offered loads (records/s, 0: saturation); omitted: the workload's rate
type OverheadSpec struct {
	// Rounds is how many times every slot runs.
	Rounds int `yaml:"rounds" json:"rounds"`
	// Rates are the offered loads, one table each, in records/s over all
	// producers (0: as fast as acknowledged). Empty: the workload's Rate.
	Rates []int `yaml:"rates" json:"rates,omitempty"`
}

// Bootstrap settings of every overhead table: fixed, so that the same
// rounds give the same interval.
const (
	overheadResamples  = 2000
	overheadConfidence = 0.95
	overheadStream     = 17
)

func (o *OverheadSpec) validate(w Workload) error {
	switch {
	case o.Rounds < 1 || o.Rounds > 100:
		return fmt.Errorf("rounds: %d is outside 1..100", o.Rounds)
	case len(w.Faults) > 0:
		return errors.New("overhead: rounds measure modes without faults; remove the fault matrix (faults) or the overhead section")
	}
	for _, rate := range o.Rates {
		if rate < 0 {
			return fmt.Errorf("rates: %d is negative", rate)
		}
	}
	return nil
}

// rates returns the offered loads of the rounds.
func (o *OverheadSpec) rates(w Workload) []int {
	if len(o.Rates) == 0 {
		return []int{w.Rate}
	}
	return o.Rates
}

// overheadSlot is one configuration run once per round.
type overheadSlot struct {
	// name labels the slot in tables; key names it in topics.
	name, key string
	mode      string
	interval  time.Duration
	// noiseFloor marks the A/A slot: the baseline mode a second time.
	noiseFloor bool
}

// aaSuffix marks the A/A slot's name.
const aaSuffix = " (A/A)"

// overheadSlots lists a workload's slots: the baseline, the A/A slot,
// then each other mode (one slot per commit interval of a sweeping mode).
func overheadSlots(w Workload) []overheadSlot {
	baseline := modes.Baseline()
	slots := []overheadSlot{{name: baseline, key: baseline, mode: baseline},
		{name: baseline + aaSuffix, key: baseline + "-aa", mode: baseline, noiseFloor: true}}
	for _, mode := range w.Modes {
		if mode == baseline {
			continue
		}
		for _, interval := range commitIntervals(mode, w) {
			slot := overheadSlot{name: mode, key: mode, mode: mode, interval: interval}
			if interval > 0 {
				slot.name = fmt.Sprintf("%s@%s", mode, interval)
				slot.key = strings.NewReplacer(".", "_").Replace(fmt.Sprintf("%s-%s", mode, interval))
			}
			slots = append(slots, slot)
		}
	}
	return slots
}

// planOverheadRuns expands an overhead workload into its runs: for each
// offered load, Rounds rounds of every slot, the slots' order rotated by
// one per round. Run names are "<slot> #<round>" (with several loads,
// "<slot> <load> #<round>", the load "max" or "5000/s"); each run has its
// own topic.
func planOverheadRuns(workload Workload, runID uint64, bootstrap []string) ([]runPlan, error) {
	slots := overheadSlots(workload)
	rates := workload.Overhead.rates(workload)
	var runs []runPlan
	for _, rate := range rates {
		for round := 1; round <= workload.Overhead.Rounds; round++ {
			for i := range slots {
				slot := slots[(i+round-1)%len(slots)]
				single := workload
				single.Overhead, single.Rate, single.Modes = nil, rate, []string{slot.mode}
				if slot.interval > 0 {
					single.Transaction.CommitIntervals = []Duration{Duration(slot.interval)}
				}
				planned, err := planRuns(single, runID, bootstrap)
				if err != nil {
					return nil, err
				}
				if len(planned) != 1 {
					return nil, fmt.Errorf("overhead slot %s: planned %d runs, want 1", slot.name, len(planned))
				}
				run := planned[0]
				name, key := fmt.Sprintf("%s #%d", slot.name, round), fmt.Sprintf("%s.r%d", slot.key, round)
				if len(rates) > 1 {
					name = fmt.Sprintf("%s %s #%d", slot.name, rateLabel(rate), round)
					key = fmt.Sprintf("%s.rate%d.r%d", slot.key, rate, round)
				}
				run.rename(name, key)
				run.round, run.slot = round, slot.name
				runs = append(runs, run)
			}
		}
	}
	return runs, nil
}

// rateLabel names an offered load in run names: "max" for saturation.
func rateLabel(rate int) string {
	if rate == 0 {
		return "max"
	}
	return fmt.Sprintf("%d/s", rate)
}

// rename gives a planned run another name and topic suffix, renaming
// its topics to match.
func (plan *runPlan) rename(name, topicSuffix string) {
	oldPrefix := "exactly." + plan.runIDText + "." + plan.topicSuffix
	newPrefix := "exactly." + plan.runIDText + "." + topicSuffix
	renamed := func(topic string) string {
		if topic == "" {
			return ""
		}
		return newPrefix + strings.TrimPrefix(topic, oldPrefix)
	}
	plan.name, plan.topicSuffix = name, topicSuffix
	plan.topic, plan.outputTopic = renamed(plan.topic), renamed(plan.outputTopic)
	for i, topic := range plan.chainTopics {
		plan.chainTopics[i] = renamed(topic)
	}
}

// buildOverhead computes the overhead section from the runs of an
// overhead workload (plans[i] planned runs[i]).
func buildOverhead(workload Workload, plans []runPlan, runs []*report.Run) *report.Overhead {
	overhead := &report.Overhead{Baseline: modes.Baseline(), Rounds: workload.Overhead.Rounds, Producers: workload.Producers,
		Resamples: overheadResamples, Confidence: overheadConfidence, RandomStream: overheadStream}
	slots := overheadSlots(workload)
	for _, rate := range workload.Overhead.rates(workload) {
		// byRound[slot][round-1] is the slot's run in that round.
		byRound := map[string][]*report.Run{}
		for i, run := range runs {
			if plans[i].workload.Rate != rate || run.Round < 1 {
				continue
			}
			if byRound[run.Slot] == nil {
				byRound[run.Slot] = make([]*report.Run, workload.Overhead.Rounds)
			}
			byRound[run.Slot][run.Round-1] = run
		}
		load := report.OverheadLoad{Rate: rate, BaselineRuns: runNames(byRound[slots[0].name])}
		baseline := byRound[slots[0].name]
		// The A/A slot (slots[1]) first: its intervals are the noise band
		// every other slot must leave.
		var throughputBand, latencyBand stats.Interval
		for i, slot := range slots[1:] {
			row := report.OverheadRow{Slot: slot.name, Mode: slot.mode, NoiseFloor: slot.noiseFloor,
				CommitIntervalMs: float64(slot.interval) / float64(time.Millisecond), Runs: runNames(byRound[slot.name])}
			var throughputInterval, latencyInterval stats.Interval
			row.Throughput, throughputInterval = ratioStat(byRound[slot.name], baseline, throughputOf, true, throughputBand, i > 0)
			row.AckP99, latencyInterval = ratioStat(byRound[slot.name], baseline, ackP99Of, false, latencyBand, i > 0)
			if i == 0 {
				throughputBand, latencyBand = stats.NoiseBand(throughputInterval), stats.NoiseBand(latencyInterval)
				load.NoiseBand = report.NoiseBand{ThroughputLow: throughputBand.Low, ThroughputHigh: throughputBand.High,
					AckP99Low: latencyBand.Low, AckP99High: latencyBand.High}
			}
			if rate > 0 {
				keptUp := len(row.Throughput.Values) > 0
				for _, value := range row.Throughput.Values {
					keptUp = keptUp && value >= 0.99*float64(rate)
				}
				row.KeptUp = &keptUp
			}
			load.Rows = append(load.Rows, row)
		}
		overhead.Loads = append(overhead.Loads, load)
	}
	return overhead
}

// runNames names the runs of a slot's rounds (rounds that did not run
// are left out).
func runNames(runs []*report.Run) []string {
	names := []string{}
	for _, run := range runs {
		if run != nil {
			names = append(names, run.Name)
		}
	}
	return names
}

// throughputOf and ackP99Of are the measures an overhead table compares;
// 0 for a run that did not pass (its measurement says nothing about the
// mode) or that did not measure.
func throughputOf(run *report.Run) float64 { return run.Throughput.RecordsPerSecond }

func ackP99Of(run *report.Run) float64 {
	return max(run.Latency[report.LatencyProduceAck].Percentile(99), 0)
}

// ratioStat pairs a slot's rounds with the baseline's and summarizes
// their ratios; with beyondBand its verdict also requires the interval to
// leave band (the A/A noise band). It returns the interval too.
func ratioStat(slotRuns, baselineRuns []*report.Run, measure func(*report.Run) float64, higherIsBetter bool,
	band stats.Interval, beyondBand bool) (report.RatioStat, stats.Interval) {
	var values, baseline []float64
	for round := range min(len(slotRuns), len(baselineRuns)) {
		values = append(values, measured(slotRuns[round], measure))
		baseline = append(baseline, measured(baselineRuns[round], measure))
	}
	return ratioOfValues(values, baseline, higherIsBetter, band, beyondBand)
}

// ratioOfValues summarizes the ratios values[i] / baseline[i] of paired
// rounds (0: not measured in that round, left out): their median, its
// bootstrap interval and the verdict, which with beyondBand also requires
// the interval to leave band. It returns the interval too.
func ratioOfValues(values, baseline []float64, higherIsBetter bool, band stats.Interval, beyondBand bool) (report.RatioStat, stats.Interval) {
	// Empty rather than null arrays in the file: a reader indexes them.
	stat := report.RatioStat{Values: append([]float64{}, values...), Baseline: append([]float64{}, baseline...)}
	stat.Ratios = append([]float64{}, stats.Ratios(stat.Values, stat.Baseline)...)
	interval := stats.BootstrapMedian(stat.Ratios, overheadResamples, overheadConfidence, overheadStream)
	stat.ExcludesOne = stats.Verdict(interval, higherIsBetter) != stats.WithinNoise
	stat.Verdict = stats.Verdict(interval, higherIsBetter)
	if beyondBand {
		stat.Verdict = stats.VerdictBeyond(interval, band, higherIsBetter)
	}
	if len(stat.Ratios) > 0 {
		stat.MedianRatio, stat.CILow, stat.CIHigh = interval.Median, interval.Low, interval.High
	}
	return stat, interval
}

func measured(run *report.Run, measure func(*report.Run) float64) float64 {
	if run == nil || run.Status != report.StatusPass {
		return 0
	}
	return measure(run)
}
