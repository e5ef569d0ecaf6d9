package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// RebalancePauses are a group-churn run's rebalance pauses: for each
// churn event (a wave joining a stage's group, a worker leaving it)
// during the load, the longest time within the following window in
// which no member of that group committed (package loadgen's
// rebalancePauses defines it precisely). Milliseconds.
type RebalancePauses struct {
	// Events is the number of churn events measured; Pauses the distinct
	// pauses they found (events that found the same stretch share one).
	Events int `json:"events"`
	Pauses int `json:"pauses"`
	// MedianMs, P99Ms, MaxMs summarize the events' pauses; TotalMs is the
	// time the pauses cover, each instant once, summed over the groups.
	MedianMs float64 `json:"median_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	TotalMs  float64 `json:"total_ms"`
	// NormalGapMs is the median interval between two successive commits
	// of a group during the load: what a pause is compared with.
	NormalGapMs float64 `json:"normal_gap_ms"`
	// WindowMs is the window after each event (the churn period).
	WindowMs float64 `json:"window_ms"`
	// PausesMs is each pause, stage by stage in time order.
	PausesMs []float64 `json:"pauses_ms"`
}

// Text is the pauses in one line, for the summary.
func (p *RebalancePauses) Text() string {
	if p == nil || p.Pauses == 0 {
		return fmt.Sprintf("no rebalance pause measured (%d churn events during the load)", p.Events)
	}
	return fmt.Sprintf("rebalance pause (no commits after a membership change): %d pauses after %d churn events, median %.0f ms, "+
		"p99 %.0f ms, max %.0f ms, total %.1f s (normal gap between commits %.0f ms)",
		p.Pauses, p.Events, p.MedianMs, p.P99Ms, p.MaxMs, p.TotalMs/1000, p.NormalGapMs)
}

// GroupProtocolComparison is the group-protocols comparison: the same
// runs (mode under a fault plan, with group-churn) under each consumer
// group protocol, interleaved over rounds (the protocols' order rotated
// by one per round), with each protocol's rebalance pauses and the
// checker's counts, and the ratio of consumer's pauses to classic's.
type GroupProtocolComparison struct {
	Rounds    int      `json:"rounds"`
	Protocols []string `json:"protocols"`
	// Baseline is the protocol the ratios divide by (classic).
	Baseline     string             `json:"baseline"`
	Resamples    int                `json:"resamples"`
	Confidence   float64            `json:"confidence"`
	RandomStream uint64             `json:"random_stream"`
	Rows         []GroupProtocolRow `json:"rows"`
}

// GroupProtocolRow is one run's comparison (mode and fault plan).
type GroupProtocolRow struct {
	Mode      string              `json:"mode"`
	FaultPlan string              `json:"fault_plan"`
	Sides     []GroupProtocolSide `json:"sides"`
	// MedianPauseRatio is, per round, the other protocol's median pause
	// over the baseline's; TotalPauseRatio the same for the total paused
	// time (RatioStat's Values are the other protocol's, Baseline the
	// baseline's).
	MedianPauseRatio RatioStat `json:"median_pause_ratio"`
	TotalPauseRatio  RatioStat `json:"total_pause_ratio"`
}

// GroupProtocolSide is one protocol's runs of a row.
type GroupProtocolSide struct {
	Protocol string   `json:"protocol"`
	Runs     []string `json:"runs"`
	// MedianPause and TotalPaused are the median over the rounds of the
	// runs' median pause and total paused time, with a bootstrap
	// interval (milliseconds).
	MedianPause Estimate `json:"median_pause_ms"`
	TotalPaused Estimate `json:"total_paused_ms"`
	// Passed counts the runs that passed their expectation; Lost and
	// Duplicated are the checker's counts summed over the rounds.
	Passed     int    `json:"passed"`
	Lost       uint64 `json:"lost"`
	Duplicated uint64 `json:"duplicated"`
}

// Estimate is a median over rounds with its bootstrap interval.
type Estimate struct {
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
	Low    float64   `json:"ci_low"`
	High   float64   `json:"ci_high"`
}

// Text renders "812 [640, 1210]" (or "-" when no round measured it).
func (e Estimate) Text() string {
	if len(e.Values) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f [%.0f, %.0f]", e.Median, e.Low, e.High)
}

// WriteGroupProtocols prints the comparison table, if the results have
// one.
func WriteGroupProtocols(w io.Writer, results *Results) error {
	comparison := results.GroupProtocols
	if comparison == nil {
		return nil
	}
	fmt.Fprintf(w, "\nrebalance pause under group-churn, %s: %d rounds interleaved; median over the rounds [%.0f%% bootstrap interval]\n",
		strings.Join(comparison.Protocols, " vs "), comparison.Rounds, comparison.Confidence*100)
	table := tabwriter.NewWriter(&lineTrimmer{w: w}, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "run\tprotocol\tpassed\tlost\tdup\tmedian pause ms\ttotal paused ms\tmedian pause ratio\ttotal paused ratio")
	for _, row := range comparison.Rows {
		for i, side := range row.Sides {
			medianRatio, totalRatio := "1 (baseline)", "1 (baseline)"
			if side.Protocol != comparison.Baseline {
				medianRatio, totalRatio = row.MedianPauseRatio.RatioText(), row.TotalPauseRatio.RatioText()
			}
			name := ""
			if i == 0 {
				name = row.Mode + ":" + row.FaultPlan
			}
			fmt.Fprintf(table, "%s\t%s\t%d/%d\t%d\t%d\t%s\t%s\t%s\t%s\n", name, side.Protocol, side.Passed, len(side.Runs),
				side.Lost, side.Duplicated, side.MedianPause.Text(), side.TotalPaused.Text(), medianRatio, totalRatio)
		}
	}
	if err := table.Flush(); err != nil {
		return fmt.Errorf("write group protocols: %w", err)
	}
	_, err := fmt.Fprintf(w, "pause: per churn event, the longest time no member of the group committed in the churn period after it; "+
		"ratio: %s over %s, round by round\n", otherProtocols(comparison), comparison.Baseline)
	return err
}

func otherProtocols(comparison *GroupProtocolComparison) string {
	var others []string
	for _, protocol := range comparison.Protocols {
		if protocol != comparison.Baseline {
			others = append(others, protocol)
		}
	}
	return strings.Join(others, ", ")
}
