package loadgen

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen/faults"
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
// With fault plans, the rounds run once under each plan: every slot of a
// round under the same plan (same random seed, faults at the same times
// from the start of the load), so each ratio is what a guarantee costs
// against plain delivery under that fault; each slot also records its
// recovery after the fault, the records held past a second and the
// checker's counts (faultCost).
//
//	overhead:
//	  rounds: 5          # --rounds overrides
//	  rates: [0, 5000]   # offered loads (records/s, 0: saturation); omitted: the workload's rate
//	  fractions: [0.5]   # and shares of at-least-once's sustainable rate (searched, or --sustainable-rate)
//	  faults:            # the plans the rounds run under (--faults overrides); omitted: none
//	    - plan: ack-loss
//	    - plan: broker-restart
//	      duration: 6s
type OverheadSpec struct {
	// Rounds is how many times every slot runs.
	Rounds int `yaml:"rounds" json:"rounds"`
	// Rates are the offered loads, one table each, in records/s over all
	// producers (0: as fast as acknowledged). Empty: the workload's Rate.
	Rates []int `yaml:"rates" json:"rates,omitempty"`
	// Fractions are further offered loads as shares of at-least-once's
	// sustainable rate (SustainableRate, which the command searches or
	// takes from --sustainable-rate before the rounds run).
	Fractions []float64 `yaml:"fractions" json:"fractions,omitempty"`
	// SustainableRate is the rate Fractions are of; set by the command.
	SustainableRate int `yaml:"-" json:"sustainable_rate,omitempty"`
	// SustainableSource says where SustainableRate came from.
	SustainableSource string `yaml:"-" json:"sustainable_source,omitempty"`
	// Records caps the records of each run of the rounds; 0: the
	// workload's. At a fixed rate a run is always given what its rate
	// sends in its time.
	Records int64 `yaml:"records" json:"records,omitempty"`
	// Modes are the modes of the rounds' slots; empty: the workload's
	// (a suite with a fault matrix measures the cost of fewer modes than
	// it checks).
	Modes []string `yaml:"modes" json:"modes,omitempty"`
	// Faults are the fault plans the rounds run under, one set of tables
	// each; an entry's modes restrict its slots and its duration
	// replaces the workload's. Empty: the rounds run without faults.
	Faults []MatrixEntry `yaml:"faults" json:"faults,omitempty"`
	// Network, when set, sweeps a degraded network: the rounds run once
	// per round-trip time (under each fault plan). See NetworkSweep.
	Network *NetworkSweep `yaml:"network" json:"network,omitempty"`
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
	}
	for _, rate := range o.Rates {
		if rate < 0 {
			return fmt.Errorf("rates: %d is negative", rate)
		}
	}
	for _, fraction := range o.Fractions {
		if !(fraction > 0 && fraction <= 1) {
			return fmt.Errorf("fractions: %v is not a share in (0, 1] like 0.5", fraction)
		}
	}
	for _, mode := range o.Modes {
		if _, ok := modes.Lookup(mode); !ok {
			return fmt.Errorf("modes: %q is not one of %v", mode, modes.Names())
		}
	}
	for i, entry := range o.Faults {
		if err := entry.validate(); err != nil {
			return fmt.Errorf("faults[%d]: %w", i, err)
		}
	}
	if o.Network != nil {
		if err := o.Network.Validate(); err != nil {
			return fmt.Errorf("network: %w", err)
		}
	}
	return nil
}

// rates returns the offered loads of the rounds: Rates (or the workload's
// rate), then each fraction of the sustainable rate once it is known.
func (o *OverheadSpec) rates(w Workload) []int {
	rates := o.Rates
	if len(rates) == 0 {
		rates = []int{w.Rate}
	}
	for _, fraction := range o.Fractions {
		if o.SustainableRate > 0 {
			rates = append(rates, o.fractionRate(fraction))
		}
	}
	return rates
}

// fractionRate is fraction of the sustainable rate, in records/s.
func (o *OverheadSpec) fractionRate(fraction float64) int {
	return max(1, int(math.Round(fraction*float64(o.SustainableRate))))
}

// fractionOf returns the fraction a rate stands for (0: none).
func (o *OverheadSpec) fractionOf(rate int) float64 {
	for _, fraction := range o.Fractions {
		if o.SustainableRate > 0 && o.fractionRate(fraction) == rate {
			return fraction
		}
	}
	return 0
}

// NeedsSustainableRate reports whether the rounds have fractional loads
// whose rate is not known yet.
func (o *OverheadSpec) NeedsSustainableRate() bool {
	return o != nil && len(o.Fractions) > 0 && o.SustainableRate <= 0
}

// faultEntries are the plans the rounds run under: Faults, or one entry
// without a plan (the rounds without faults, whose runs keep bare names).
func (o *OverheadSpec) faultEntries() []MatrixEntry {
	entries := o.Faults
	if len(entries) == 0 {
		entries = []MatrixEntry{{}}
	}
	if o.Network != nil {
		return o.Network.expand(entries)
	}
	return entries
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
	slotModes := w.Modes
	if w.Overhead != nil && len(w.Overhead.Modes) > 0 {
		slotModes = w.Overhead.Modes
	}
	for _, mode := range slotModes {
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

// costTable is the slots of one fault plan's tables: which run, which
// cannot run (the plan's faults cannot touch their mode) and whether the
// baseline runs without the plan.
type costTable struct {
	entry MatrixEntry
	plan  faults.Plan // the entry's plan; the zero Plan without faults
	slots []overheadSlot
	// cannotBite lists the slots left out, each with why.
	cannotBite []cannotBiteSlot
	// baselineWithoutFaults: the plan's client faults cannot touch the
	// baseline mode, so the baseline and A/A slots run without them.
	baselineWithoutFaults bool
}

// networkPoint is the table's network step as the results record it
// (nil outside a sweep).
func (table costTable) networkPoint() *report.NetworkPoint {
	if table.entry.network == nil {
		return nil
	}
	base := ""
	if table.entry.Plan != "" {
		if plan, err := faults.LoadPlan(table.entry.Plan); err == nil {
			base = plan.Name
		}
	}
	return table.entry.network.point(base)
}

// skipsRate says why the table has no rounds at rate ("" when it has):
// a fault of the consume stage only (a crashed consumer, group churn) at
// saturation would measure how far the stage falls behind a producer
// that outruns it, not the fault.
func (table costTable) skipsRate(rate int) string {
	if rate == 0 && consumeSideOnly(table.plan) {
		return "not at saturation: " + table.plan.Name + " touches only the consume stage, which a saturating producer outruns whatever the fault"
	}
	return ""
}

// skipsSlot says why slot has no rounds at rate in the table ("" when it
// has): a network sweep at saturation leaves out modes with a consume
// stage, whose producers outrun the stage over a slowed network, so that
// the run would measure the stage's backlog (and fail its drain), not
// the network. The baseline and A/A slots always run.
func (table costTable) skipsSlot(rate int, slot overheadSlot) string {
	if rate != 0 || table.entry.network == nil || slot.mode == modes.Baseline() || !runsConsumeStage(table.plan, slot.mode) {
		return ""
	}
	return "at saturation over a slowed network the producers outrun the consume stage, whose backlog outlasts the drain; its cost shows at a fixed load"
}

// cannotBiteSlot is a slot a plan's faults cannot touch, and why.
type cannotBiteSlot struct {
	slot   overheadSlot
	reason string
}

// costTables lists the tables of an overhead workload, one per fault
// entry.
func costTables(w Workload) ([]costTable, error) {
	var tables []costTable
	for i, entry := range w.Overhead.faultEntries() {
		table := costTable{entry: entry}
		if entry.planned() {
			plan, err := entry.load()
			if err != nil {
				return nil, fmt.Errorf("overhead.faults[%d]: %w", i, err)
			}
			table.plan = plan
		}
		// An entry's modes are its slots' (group churn needs a consume
		// stage: eos-pipeline, not idempotent).
		slotWorkload := w
		if len(entry.Modes) > 0 {
			spec := *w.Overhead
			spec.Modes = entry.Modes
			slotWorkload.Overhead = &spec
		}
		for _, slot := range overheadSlots(slotWorkload) {
			baselineSlot := slot.mode == modes.Baseline()
			// launched and cluster true: only what the mode itself rules
			// out is left; what the target rules out shows when it runs.
			if reason := notApplicable(table.plan, slot.mode, faultReach{launched: true, cluster: true}); reason != "" {
				if baselineSlot {
					table.baselineWithoutFaults = true
				} else {
					table.cannotBite = append(table.cannotBite,
						cannotBiteSlot{slot, strings.TrimSuffix(strings.TrimPrefix(reason, "not-applicable ("), ")")})
					continue
				}
			}
			table.slots = append(table.slots, slot)
		}
		tables = append(tables, table)
	}
	return tables, nil
}

// planOverheadRuns expands an overhead workload into its runs: for each
// fault plan and offered load, Rounds rounds of every slot, the slots'
// order rotated by one per round. Run names are "<slot> #<round>", with
// ":<plan>" after the slot under faults and the load ("max", "5000/s")
// before the round with several loads; each run has its own topic.
func planOverheadRuns(workload Workload, runID uint64, bootstrap []string) ([]runPlan, error) {
	tables, err := costTables(workload)
	if err != nil {
		return nil, err
	}
	rates := workload.Overhead.rates(workload)
	var runs []runPlan
	for _, table := range tables {
		slots := table.slots
		for _, rate := range rates {
			if table.skipsRate(rate) != "" {
				continue
			}
			for round := 1; round <= workload.Overhead.Rounds; round++ {
				for i := range slots {
					slot := slots[(i+round-1)%len(slots)]
					if table.skipsSlot(rate, slot) != "" {
						continue
					}
					single := workload
					single.Overhead, single.Rate, single.Modes, single.Faults = nil, rate, []string{slot.mode}, nil
					if workload.Overhead.Records > 0 {
						single.Records = workload.Overhead.Records
					}
					if rate > 0 {
						// The record bound must not end a run before its time bound does.
						seconds := time.Duration(single.Warmup + single.Duration).Seconds()
						single.Records = max(single.Records, int64(math.Ceil(float64(rate)*seconds*1.1)))
					}
					if table.entry.planned() && !(table.baselineWithoutFaults && slot.mode == modes.Baseline()) {
						entry := table.entry
						entry.Modes = nil
						single.Faults = []MatrixEntry{entry}
					}
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
					name, key := slot.name, slot.key
					if table.entry.planned() {
						name, key = name+":"+table.plan.Name, key+"."+table.plan.Name
					}
					if len(rates) > 1 {
						name, key = fmt.Sprintf("%s %s", name, rateLabel(rate)), fmt.Sprintf("%s.rate%d", key, rate)
					}
					run.rename(fmt.Sprintf("%s #%d", name, round), fmt.Sprintf("%s.r%d", key, round))
					run.round, run.slot, run.costPlan = round, slot.name, table.entry.key()
					runs = append(runs, run)
				}
			}
		}
	}
	return runs, nil
}

// planSuiteRuns plans a workload with an overhead section: its fault
// matrix's cells first, when it has one (the standard suite's verdicts),
// then the rounds (what each guarantee costs under each fault).
func planSuiteRuns(workload Workload, runID uint64, bootstrap []string) ([]runPlan, error) {
	var runs []runPlan
	if len(workload.Faults) > 0 {
		matrix := workload
		matrix.Overhead = nil
		planned, err := planRuns(matrix, runID, bootstrap)
		if err != nil {
			return nil, err
		}
		runs = planned
	}
	rounds, err := planOverheadRuns(workload, runID, bootstrap)
	if err != nil {
		return nil, err
	}
	return append(runs, rounds...), nil
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
	spec := workload.Overhead
	overhead := &report.Overhead{Baseline: modes.Baseline(), Rounds: spec.Rounds, Producers: workload.Producers,
		Resamples: overheadResamples, Confidence: overheadConfidence, RandomStream: overheadStream,
		SustainableRate: spec.SustainableRate, SustainableSource: spec.SustainableSource}
	tables, err := costTables(workload)
	if err != nil {
		return overhead // planning the runs failed the same way first
	}
	for _, table := range tables {
		for _, rate := range spec.rates(workload) {
			// byRound[slot][round-1] is the slot's run in that round.
			byRound := map[string][]*report.Run{}
			for i, run := range runs {
				if plans[i].workload.Rate != rate || plans[i].costPlan != table.entry.key() || run.Round < 1 {
					continue
				}
				if byRound[run.Slot] == nil {
					byRound[run.Slot] = make([]*report.Run, spec.Rounds)
				}
				byRound[run.Slot][run.Round-1] = run
			}
			if reason := table.skipsRate(rate); reason != "" {
				overhead.Loads = append(overhead.Loads, report.OverheadLoad{Rate: rate, Faults: table.plan.Name,
					Network: table.networkPoint(), NotApplicable: reason, BaselineRuns: []string{}})
				continue
			}
			overhead.Loads = append(overhead.Loads, buildOverheadLoad(table, rate, spec.fractionOf(rate), byRound))
		}
	}
	return overhead
}

// buildOverheadLoad is one table: every slot of table at one offered
// load against the baseline, the A/A slot first.
func buildOverheadLoad(table costTable, rate int, fraction float64, byRound map[string][]*report.Run) report.OverheadLoad {
	slots := table.slots
	load := report.OverheadLoad{Rate: rate, Fraction: fraction, Faults: table.plan.Name, Network: table.networkPoint(),
		BaselineWithoutFaults: table.baselineWithoutFaults, BaselineRuns: runNames(byRound[slots[0].name])}
	baseline := byRound[slots[0].name]
	if load.Network != nil {
		load.Network.MeasuredRTTMs = medianPathRTT(byRound)
	}
	if table.entry.planned() {
		load.BaselineCost = faultCost(baseline)
		load.NotApplicable = notApplicableReason(baseline)
	}
	// The A/A slot (slots[1]) first: its intervals are the noise band
	// every other slot must leave.
	var throughputBand, latencyBand, endToEndBand stats.Interval
	for i, slot := range slots[1:] {
		if reason := table.skipsSlot(rate, slot); reason != "" {
			load.Rows = append(load.Rows, report.OverheadRow{Slot: slot.name, Mode: slot.mode, NotRun: reason, Runs: []string{}})
			continue
		}
		slotRuns := byRound[slot.name]
		row := report.OverheadRow{Slot: slot.name, Mode: slot.mode, NoiseFloor: slot.noiseFloor,
			CommitIntervalMs: float64(slot.interval) / float64(time.Millisecond), Runs: runNames(slotRuns)}
		var throughputInterval, latencyInterval, endToEndInterval stats.Interval
		row.Throughput, throughputInterval = ratioStat(slotRuns, baseline, throughputOf, true, throughputBand, i > 0)
		row.AckP99, latencyInterval = ratioStat(slotRuns, baseline, ackP99Of, false, latencyBand, i > 0)
		row.EndToEndP99, endToEndInterval = ratioStat(slotRuns, baseline, endToEndP99Of, false, endToEndBand, i > 0)
		if i == 0 {
			throughputBand, latencyBand = stats.NoiseBand(throughputInterval), stats.NoiseBand(latencyInterval)
			endToEndBand = stats.NoiseBand(endToEndInterval)
			load.NoiseBand = report.NoiseBand{ThroughputLow: throughputBand.Low, ThroughputHigh: throughputBand.High,
				AckP99Low: latencyBand.Low, AckP99High: latencyBand.High}
			if len(row.EndToEndP99.Ratios) > 0 {
				load.NoiseBand.EndToEndP99Low, load.NoiseBand.EndToEndP99High = endToEndBand.Low, endToEndBand.High
			}
		}
		if rate > 0 {
			keptUp := len(row.Throughput.Values) > 0
			for _, value := range row.Throughput.Values {
				keptUp = keptUp && value >= 0.99*float64(rate)
			}
			row.KeptUp = &keptUp
		}
		if table.entry.planned() {
			row.Cost = faultCost(slotRuns)
		}
		load.Rows = append(load.Rows, row)
	}
	for _, skipped := range table.cannotBite {
		load.Rows = append(load.Rows, report.OverheadRow{Slot: skipped.slot.name, Mode: skipped.slot.mode,
			CannotBite: skipped.reason, Runs: []string{}})
	}
	return load
}

// medianPathRTT is the median of the round trips the table's runs
// measured on their path before the load (0: none measured).
func medianPathRTT(byRound map[string][]*report.Run) float64 {
	var measured []float64
	for _, runs := range byRound {
		for _, run := range runs {
			if run != nil && run.PathRTTMs > 0 {
				measured = append(measured, run.PathRTTMs)
			}
		}
	}
	if len(measured) == 0 {
		return 0
	}
	slices.Sort(measured)
	return measured[len(measured)/2]
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

func endToEndP99Of(run *report.Run) float64 {
	return max(run.Latency[report.LatencyEndToEnd].Percentile(99), 0)
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
