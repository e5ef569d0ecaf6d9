package report

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// Overhead is the overhead section of a results file (added within
// schema version 1; present only for a run of interleaved rounds, the
// overhead workload): each mode's throughput and p99 produce-ack latency
// relative to the baseline slot, from paired rounds.
type Overhead struct {
	// Baseline is the slot every ratio divides by (at-least-once).
	Baseline string `json:"baseline"`
	// Rounds is how many rounds were run; in each, every slot ran once,
	// in an order rotated by one per round, on a fresh topic.
	Rounds int `json:"rounds"`
	// Producers is how many producer clients shared each slot's load
	// (one producer's flush or commit stalls only itself).
	Producers int `json:"producers"`
	// Resamples, Confidence and RandomStream are the bootstrap's settings:
	// the rounds are resampled Resamples times drawing from random stream
	// number RandomStream, and the interval is the Confidence percentile interval of the
	// resamples' medians.
	Resamples    int     `json:"resamples"`
	Confidence   float64 `json:"confidence"`
	RandomStream uint64  `json:"random_stream"`
	// SustainableRate is at-least-once's sustainable rate the fractional
	// loads were taken of (0: none), SustainableSource where it came from
	// ("--sustainable-rate", "find-max search"). Added within schema
	// version 1.
	SustainableRate   int    `json:"sustainable_rate,omitempty"`
	SustainableSource string `json:"sustainable_source,omitempty"`
	// Loads holds one table per fault plan and offered load.
	Loads []OverheadLoad `json:"loads"`
}

// OverheadLoad is the overhead table at one offered load.
type OverheadLoad struct {
	// Rate is the offered load in records/s over all producers; 0: as
	// fast as acknowledged (saturation).
	Rate int `json:"rate"`
	// Fraction, when set, is the share of SustainableRate that Rate is.
	Fraction float64 `json:"fraction,omitempty"`
	// Faults names the fault plan every slot ran under ("": none); the
	// baseline and A/A slots ran without it when BaselineWithoutFaults
	// (the plan's faults cannot touch the baseline mode: a zombie
	// producer needs transactions), so the ratios then compare the mode
	// under the fault with plain delivery without it. Added within
	// schema version 1.
	Faults                string `json:"faults,omitempty"`
	BaselineWithoutFaults bool   `json:"baseline_without_faults,omitempty"`
	// Network is set when the rounds swept a degraded network: the
	// path slowed, the round-trip time added and the fault plan layered
	// under it. Faults then names the plan with the network layered on
	// ("rtt-5ms", "ack-loss-rtt-5ms"). Added within schema version 1.
	Network *NetworkPoint `json:"network,omitempty"`
	// NotApplicable, when set, says why no slot could run under the
	// plan on this target (process faults on a cluster the load
	// generator did not launch and has no hooks for).
	NotApplicable string `json:"not_applicable,omitempty"`
	// BaselineRuns names the baseline slot's run in each round.
	BaselineRuns []string `json:"baseline_runs"`
	// BaselineCost is what the fault did to the baseline itself: its
	// recovery, delayed records and checker counts over the rounds.
	BaselineCost *FaultCost `json:"baseline_cost,omitempty"`
	// NoiseBand is the A/A row's interval made symmetric around 1 (see
	// stats.NoiseBand): a slot is faster or slower only when its whole
	// interval lies outside it.
	NoiseBand NoiseBand `json:"noise_band"`
	// Rows are the slots compared with the baseline: the A/A slot (the
	// baseline against itself, NoiseFloor set) first.
	Rows []OverheadRow `json:"rows"`
}

// NetworkPoint is one step of a network sweep (see OverheadLoad.Network).
type NetworkPoint struct {
	// Path is what the sweep slowed: "clients" (between the load
	// generator's clients and every broker, in the fault proxy) or
	// "follower" (a follower's links to the other brokers of a launched
	// cluster, in its partition proxies).
	Path string `json:"path"`
	// RTTMs is the round-trip time added, in milliseconds: each
	// direction is delayed by half of it. 0 is the same path without
	// delay (through the same proxies), the sweep's reference.
	RTTMs float64 `json:"rtt_ms"`
	// Link describes the whole impairment of each direction ("delay 5ms
	// ±1ms normal"; "no impairment").
	Link string `json:"link"`
	// Plan names the fault plan under the network ("" for none).
	Plan string `json:"plan,omitempty"`
	// MeasuredRTTMs is the median round trip the load generator measured
	// on the path before the rounds (0: not measured).
	MeasuredRTTMs float64 `json:"measured_rtt_ms,omitempty"`
}

// NoiseBand bounds the ratios two identical configurations measured
// apart, per measure.
type NoiseBand struct {
	ThroughputLow  float64 `json:"throughput_low"`
	ThroughputHigh float64 `json:"throughput_high"`
	AckP99Low      float64 `json:"ack_p99_low"`
	AckP99High     float64 `json:"ack_p99_high"`
	// EndToEndP99Low and EndToEndP99High bound the p99 end-to-end
	// latency's ratios (0 without live consumers; added within schema
	// version 1).
	EndToEndP99Low  float64 `json:"end_to_end_p99_low,omitempty"`
	EndToEndP99High float64 `json:"end_to_end_p99_high,omitempty"`
}

// BandText renders a band as "±12%" (its wider side).
func BandText(low, high float64) string {
	if low <= 0 || high <= 0 {
		return "-"
	}
	width := max(high-1, 1-low) * 100
	if width < 10 {
		return fmt.Sprintf("±%.1f%%", width)
	}
	return fmt.Sprintf("±%.0f%%", width)
}

// OverheadRow is one slot's ratios to the baseline.
type OverheadRow struct {
	// Slot names the slot ("idempotent", "transactional@100ms",
	// "at-least-once (A/A)"); Mode is its delivery mode.
	Slot string `json:"slot"`
	Mode string `json:"mode"`
	// CommitIntervalMs is a transactional slot's commit interval.
	CommitIntervalMs float64 `json:"commit_interval_ms,omitempty"`
	// NoiseFloor marks the A/A slot: the baseline mode in a second slot of
	// every round. Its interval is how far apart two identical
	// configurations measure on this machine.
	NoiseFloor bool `json:"noise_floor,omitempty"`
	// Runs names this slot's run in each round (results' runs[].name).
	Runs []string `json:"runs"`
	// Throughput compares acknowledged records/s (higher is better),
	// AckP99 the p99 produce-ack latency (lower is better).
	Throughput RatioStat `json:"throughput"`
	AckP99     RatioStat `json:"ack_p99"`
	// KeptUp, at a fixed offered load only, says whether every round of
	// the slot achieved at least 99 % of the offered rate. There a
	// throughput ratio a hair under 1 is acknowledgements still in flight
	// when the clock stopped, not a cost; what matters is keeping up.
	KeptUp *bool `json:"kept_up,omitempty"`
	// EndToEndP99 compares the p99 end-to-end latency of the live
	// consumers (lower is better; empty without consumers). Added within
	// schema version 1.
	EndToEndP99 RatioStat `json:"end_to_end_p99,omitzero"`
	// Cost is what the load's fault plan did to this slot; nil without
	// faults. Added within schema version 1.
	Cost *FaultCost `json:"cost,omitempty"`
	// CannotBite, when set, says why the plan's faults cannot touch this
	// mode: the slot did not run and has no ratios.
	CannotBite string `json:"cannot_bite,omitempty"`
	// NotRun, when set, says why the slot has no rounds at this load
	// (a network sweep at saturation leaves out modes with a consume
	// stage: a saturating producer outruns the stage, which would measure
	// its backlog, not the network). Added within schema version 1.
	NotRun string `json:"not_run,omitempty"`
}

// Skipped says why the row has no rounds ("" when it has): the plan
// cannot touch its mode, or it does not run at this load.
func (row OverheadRow) Skipped() string {
	switch {
	case row.CannotBite != "":
		return "cannot be touched: " + row.CannotBite
	case row.NotRun != "":
		return "not run at this load: " + row.NotRun
	}
	return ""
}

// FaultCost is what a fault plan did to one slot over the rounds, beyond
// its ratios: how long throughput took to come back, how many records it
// held past a second, and what the checker counted.
type FaultCost struct {
	// RecoverySeconds is each round's worst recovery (report.Recovery's
	// WorstSeconds; rounds without a measured fault left out, a round that
	// never recovered as -1); RecoveryMedian and RecoveryLow/High their
	// median with a bootstrap interval (rounds that never recovered
	// count as the longest). NotRecovered counts those rounds.
	RecoverySeconds []float64 `json:"recovery_seconds"`
	RecoveryMedian  float64   `json:"recovery_median"`
	RecoveryLow     float64   `json:"recovery_low"`
	RecoveryHigh    float64   `json:"recovery_high"`
	NotRecovered    int       `json:"not_recovered,omitempty"`
	// RecoveryNote says why there is no recovery time ("continuous",
	// "consume side").
	RecoveryNote string `json:"recovery_note,omitempty"`
	// DelayedAck and DelayedEndToEnd are each round's records held past
	// DelayedThresholdMillis; their medians beside them.
	DelayedAck            []int64 `json:"delayed_ack"`
	DelayedEndToEnd       []int64 `json:"delayed_end_to_end"`
	DelayedAckMedian      float64 `json:"delayed_ack_median"`
	DelayedEndToEndMedian float64 `json:"delayed_end_to_end_median"`
	// Lost and Duplicated sum the checker's counts over the rounds;
	// Failed counts rounds whose verdict was fail or error (a forbidden
	// loss or duplicate fails the workload, as in the matrix).
	Lost       uint64 `json:"lost"`
	Duplicated uint64 `json:"duplicated"`
	Failed     int    `json:"failed,omitempty"`
}

// RecoveryText renders the recovery for tables: "1.3 s [1.1, 1.6]",
// "continuous", "consume side" or "-".
func (c *FaultCost) RecoveryText() string {
	switch {
	case c == nil:
		return "-"
	case c.RecoveryNote != "":
		return c.RecoveryNote
	case len(c.RecoverySeconds) == 0:
		return "-"
	}
	text := fmt.Sprintf("%.1f s [%.1f, %.1f]", c.RecoveryMedian, c.RecoveryLow, c.RecoveryHigh)
	if c.NotRecovered > 0 {
		text += fmt.Sprintf(" (%d not back)", c.NotRecovered)
	}
	return text
}

// DelayedText renders the median delayed records per round, "12 / 40"
// (acknowledgements / end to end) or "12" without live consumers.
func (c *FaultCost) DelayedText() string {
	if c == nil || len(c.DelayedAck) == 0 {
		return "-"
	}
	if c.DelayedEndToEndMedian > 0 {
		return fmt.Sprintf("%.0f / %.0f", c.DelayedAckMedian, c.DelayedEndToEndMedian)
	}
	return fmt.Sprintf("%.0f", c.DelayedAckMedian)
}

// CheckedText renders the checker's counts, "0 / 0" (lost / duplicated),
// with the failed rounds.
func (c *FaultCost) CheckedText() string {
	if c == nil {
		return "-"
	}
	text := fmt.Sprintf("%d / %d", c.Lost, c.Duplicated)
	if c.Failed > 0 {
		text += fmt.Sprintf(" FAIL×%d", c.Failed)
	}
	return text
}

// ThroughputVerdict is how tables read a row's throughput: the
// interval's verdict at saturation; at a fixed offered load "kept up",
// or "fell behind" with the interval's verdict.
func (row OverheadRow) ThroughputVerdict() string {
	switch {
	case row.KeptUp == nil:
		return row.Throughput.Verdict
	case *row.KeptUp:
		return "kept up"
	}
	return "fell behind (" + row.Throughput.Verdict + ")"
}

// RatioStat is one measure of a slot against the baseline over the rounds.
type RatioStat struct {
	// Values are this slot's measurements, one per round; Baseline the
	// baseline slot's in the same rounds (records/s, or milliseconds).
	Values   []float64 `json:"values"`
	Baseline []float64 `json:"baseline"`
	// Ratios are Values[i] / Baseline[i] for the rounds where both were
	// measured.
	Ratios []float64 `json:"ratios"`
	// MedianRatio is the median of Ratios; CILow and CIHigh its bootstrap
	// interval (0 when there were no usable rounds).
	MedianRatio float64 `json:"median_ratio"`
	CILow       float64 `json:"ci_low"`
	CIHigh      float64 `json:"ci_high"`
	// ExcludesOne says the interval excludes 1.0.
	ExcludesOne bool `json:"excludes_one"`
	// Verdict is "faster" or "slower" when the interval excludes 1.0 and,
	// for every row but the A/A one, lies wholly outside the load's noise
	// band; "within noise" otherwise.
	Verdict string `json:"verdict"`
}

// RatioText renders a ratio with its interval, "0.962 [0.941, 0.990]",
// or "-" when no round measured it.
//
// A narrow interval gets a fourth decimal, so that an interval that
// excludes 1 never prints as touching it.
func (s RatioStat) RatioText() string {
	if len(s.Ratios) == 0 {
		return "-"
	}
	if s.CIHigh-s.CILow < 0.01 {
		return fmt.Sprintf("%.4f [%.4f, %.4f]", s.MedianRatio, s.CILow, s.CIHigh)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", s.MedianRatio, s.CILow, s.CIHigh)
}

// BaselineMedian is the median of the baseline's values over the rounds
// it measured (0 when none did).
func (s RatioStat) BaselineMedian() float64 { return positiveMedian(s.Baseline) }

// Median is the median of the slot's values over the rounds it measured.
func (s RatioStat) Median() float64 { return positiveMedian(s.Values) }

func positiveMedian(values []float64) float64 {
	var measured []float64
	for _, value := range values {
		if value > 0 {
			measured = append(measured, value)
		}
	}
	if len(measured) == 0 {
		return 0
	}
	sort.Float64s(measured)
	middle := len(measured) / 2
	if len(measured)%2 == 1 {
		return measured[middle]
	}
	return (measured[middle-1] + measured[middle]) / 2
}

// LoadText describes an offered load: "saturation" for 0.
func LoadText(rate int) string {
	if rate == 0 {
		return "saturation (as fast as acknowledged)"
	}
	return fmt.Sprintf("%d records/s offered", rate)
}

// WriteOverhead prints the overhead tables of results, one per offered
// load: each slot's median throughput ratio and p99 ack latency ratio to
// the baseline with their 95 % intervals and verdicts, the A/A noise
// floor first. It prints nothing for results without an overhead section.
func WriteOverhead(w io.Writer, results *Results) error {
	overhead := results.Overhead
	if overhead == nil {
		return nil
	}
	if err := WriteCost(w, results); err != nil {
		return err
	}
	printed := false
	for _, load := range overhead.Loads {
		if load.Faults != "" {
			continue // in the cost table
		}
		printed = true
		fmt.Fprintln(w)
		WriteWrapped(w, "", fmt.Sprintf("overhead vs %s at %s: %d rounds, %d producers; median ratio of the rounds [%.0f%% bootstrap interval]",
			overhead.Baseline, LoadText(load.Rate), overhead.Rounds, overhead.Producers, overhead.Confidence*100), SummaryWidth)
		table := tabwriter.NewWriter(&lineTrimmer{w: w}, 0, 0, 2, ' ', 0)
		fmt.Fprintln(table, "slot\trecords/s\tthroughput ratio\tverdict\tack p99 ms\tp99 ratio\tverdict\t")
		if len(load.Rows) > 0 {
			base := load.Rows[0]
			fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", overhead.Baseline, number(base.Throughput.BaselineMedian(), 0), "1 (baseline)", "",
				number(base.AckP99.BaselineMedian(), 2), "1 (baseline)", "")
		}
		for _, row := range load.Rows {
			throughputVerdict, latencyVerdict := row.ThroughputVerdict(), row.AckP99.Verdict
			if row.NoiseFloor {
				throughputVerdict = "floor " + BandText(load.NoiseBand.ThroughputLow, load.NoiseBand.ThroughputHigh)
				latencyVerdict = "floor " + BandText(load.NoiseBand.AckP99Low, load.NoiseBand.AckP99High)
			}
			fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.Slot, number(row.Throughput.Median(), 0), compactRatio(row.Throughput),
				throughputVerdict, number(row.AckP99.Median(), 2), compactRatio(row.AckP99), latencyVerdict)
		}
		if err := table.Flush(); err != nil {
			return fmt.Errorf("write overhead: %w", err)
		}
	}
	if !printed {
		return nil
	}
	_, err := fmt.Fprintln(w, "the A/A row is the baseline against itself: two identical runs measured that far apart (the noise floor, its\n"+
		"verdicts read floor ±x); a ratio is faster or slower only when its interval excludes 1 and lies outside the noise\n"+
		"floor, else within noise")
	return err
}
