package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// FindMax is the find_max section of a results file: the sustainable rate
// of each mode on each target, found by `exactly loadgen --find-max`
// (package loadgen/findmax says how).
type FindMax struct {
	// Criteria say what a step had to do to hold.
	Criteria FindMaxCriteria `json:"criteria"`
	// Targets holds one search per mode for each target, in the order run.
	Targets []FindMaxTarget `json:"targets"`
	// EqualLoad, with --rate-fraction, says at which rates the file's runs
	// ran: fractions of at-least-once's sustainable rate.
	EqualLoad *EqualLoad `json:"equal_load,omitempty"`
}

// EqualLoad is the runs of --rate-fraction: every mode at the same offered
// loads, each a fraction of at-least-once's sustainable rate.
type EqualLoad struct {
	// BaselineRecordsPerSecond is the sustainable rate the fractions are of.
	BaselineRecordsPerSecond int `json:"baseline_records_per_second"`
	// Source says where it came from: "find-max on <target>" or
	// "--sustainable-rate".
	Source string          `json:"source"`
	Cells  []EqualLoadCell `json:"cells"`
}

// EqualLoadCell is the runs at one fraction.
type EqualLoadCell struct {
	Fraction         float64 `json:"fraction"`
	RecordsPerSecond int     `json:"records_per_second"`
	// Runs are the names of the cell's runs in the file's runs list.
	Runs []string `json:"runs"`
}

// WriteEqualLoad prints the offered load of each fraction of EqualLoad.
func WriteEqualLoad(w io.Writer, load *EqualLoad) {
	if load == nil {
		return
	}
	var cells []string
	for _, cell := range load.Cells {
		cells = append(cells, fmt.Sprintf("%.0f %% = %d rec/s", 100*cell.Fraction, cell.RecordsPerSecond))
	}
	fmt.Fprintf(w, "equal offered load: fractions of at-least-once's sustainable rate %d rec/s (%s): %s\n",
		load.BaselineRecordsPerSecond, load.Source, strings.Join(cells, ", "))
}

// FindMaxCriteria are the settings of the search.
type FindMaxCriteria struct {
	// Tolerance: a held step achieved at least (1 - tolerance) × its target.
	Tolerance float64 `json:"tolerance"`
	// MaxP99Millis: a held step's p99 acknowledgement latency is at most this.
	MaxP99Millis float64 `json:"max_p99_ms"`
	// Precision: the search stops once the lowest failed rate is within
	// precision × the highest held rate of it.
	Precision float64 `json:"precision"`
	// StartRecordsPerSecond is the first rate tried.
	StartRecordsPerSecond int `json:"start_records_per_second"`
	// Retries is how many times a failed step is run again at its rate
	// (the rate holds if any attempt held).
	Retries int `json:"retries"`
	// MaxSteps (retries included) and BudgetSeconds bound each mode's search.
	MaxSteps      int     `json:"max_steps"`
	BudgetSeconds float64 `json:"budget_seconds"`
	// StepWarmupSeconds and StepSeconds are each step's warm-up and
	// measured time.
	StepWarmupSeconds float64 `json:"step_warmup_seconds"`
	StepSeconds       float64 `json:"step_seconds"`
	// ConfirmSeconds is the measured time of a confirmation step (after
	// the same warm-up): the rate the short steps found is run once more
	// this long, and, while long steps fail, StepDown under the last; once
	// one held, bisected between them; at most Confirmations long steps.
	// 0: no confirmation.
	ConfirmSeconds float64 `json:"confirm_seconds,omitempty"`
	Confirmations  int     `json:"confirmations,omitempty"`
	StepDown       float64 `json:"step_down,omitempty"`
}

// StepDownPercent is StepDown in percent, for the dashboard.
func (c FindMaxCriteria) StepDownPercent() float64 { return 100 * c.StepDown }

// FindMaxTarget is the searches on one target.
type FindMaxTarget struct {
	Target Target        `json:"target"`
	Modes  []FindMaxMode `json:"modes"`
}

// FindMaxMode is one mode's search.
type FindMaxMode struct {
	// Name is the mode, with its commit interval for a transactional sweep.
	Name string `json:"name"`
	Mode string `json:"mode"`
	// SustainableRecordsPerSecond is the rate reported (0: none held). It
	// is always a rate that was measured as held: with confirmation, the
	// rate a long step held; without, the highest held short step.
	SustainableRecordsPerSecond int `json:"sustainable_records_per_second"`
	// SearchedRecordsPerSecond is the highest rate the short steps held,
	// before confirmation.
	SearchedRecordsPerSecond int `json:"searched_records_per_second,omitempty"`
	// Confirmed says a long confirmation step held at the sustainable rate.
	Confirmed bool `json:"confirmed,omitempty"`
	// FailedRecordsPerSecond is the lowest target above it that failed (0:
	// none did, so the rate may be higher still).
	FailedRecordsPerSecond int `json:"failed_records_per_second"`
	// RatioToBaseline is the sustainable rate over the at-least-once
	// search's on the same target (0 when there is none).
	RatioToBaseline float64 `json:"ratio_to_baseline"`
	// Stopped says why the search ended: precision, max-rate, max-steps,
	// budget, none-held, error, or unconfirmed (no confirmation step held).
	Stopped string `json:"stopped"`
	// Error is the error that ended it (stopped "error").
	Error string        `json:"error,omitempty"`
	Steps []FindMaxStep `json:"steps"`
}

// FindMaxStep is one fixed-rate step of a search.
type FindMaxStep struct {
	TargetRecordsPerSecond int `json:"target_records_per_second"`
	// Attempt is 1 for a rate's first step, 2 for the retry of a failed
	// one, ….
	Attempt int `json:"attempt"`
	// Confirmation says the step was a long confirmation step.
	Confirmation             bool    `json:"confirmation,omitempty"`
	AchievedRecordsPerSecond float64 `json:"achieved_records_per_second"`
	P99Millis                float64 `json:"p99_ms"`
	Held                     bool    `json:"held"`
	// Why says why the step failed.
	Why string `json:"why,omitempty"`
	// Status is the step's run status (pass, fail, error, …).
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
}

// WriteFindMax prints the sustainable rate of each mode on each target,
// and, with more than one target, each mode's rates side by side with
// their ratio to the first target's.
func WriteFindMax(w io.Writer, section *FindMax) error {
	if section == nil || len(section.Targets) == 0 {
		return nil
	}
	c := section.Criteria
	fmt.Fprintf(w, "sustainable rate: the highest offered rate that held (achieved within %.0f %%, ack p99 <= %.0f ms), to %.0f %%",
		100*c.Tolerance, c.MaxP99Millis, 100*c.Precision)
	if c.ConfirmSeconds > 0 {
		fmt.Fprintf(w, ", confirmed by a %.0f s step", c.ConfirmSeconds)
	}
	fmt.Fprintln(w)
	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "target\tmode\tsustainable rec/s\tvs base\tshort steps found\tfirst failed\tsteps\tstopped\t")
	for _, target := range section.Targets {
		for _, mode := range target.Modes {
			fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", target.Target.Kind, mode.Name,
				rateText(mode.SustainableRecordsPerSecond), ratioText(mode.RatioToBaseline),
				rateText(mode.SearchedRecordsPerSecond), rateText(mode.FailedRecordsPerSecond), len(mode.Steps),
				stoppedText(mode))
		}
	}
	if err := table.Flush(); err != nil {
		return fmt.Errorf("write find-max table: %w", err)
	}
	if len(section.Targets) > 1 {
		if err := writeTargetComparison(w, section.Targets); err != nil {
			return err
		}
	}
	for _, target := range section.Targets {
		for _, mode := range target.Modes {
			if mode.Error != "" {
				fmt.Fprintf(w, "  %s %s: %s\n", target.Target.Kind, mode.Name, mode.Error)
			}
		}
	}
	return nil
}

// writeTargetComparison prints each mode's sustainable rate per target and
// the ratio of each target's to the first target's.
func writeTargetComparison(w io.Writer, targets []FindMaxTarget) error {
	header := []string{"mode"}
	for _, target := range targets {
		header = append(header, target.Target.Kind)
	}
	for _, target := range targets[1:] {
		header = append(header, target.Target.Kind+"/"+targets[0].Target.Kind)
	}
	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, strings.Join(header, "\t")+"\t")
	for _, mode := range targets[0].Modes {
		row := []string{mode.Name}
		rates := make([]int, len(targets))
		for i, target := range targets {
			rates[i] = target.sustainable(mode.Name)
			row = append(row, rateText(rates[i]))
		}
		for i := range targets[1:] {
			row = append(row, ratioValue(rates[i+1], rates[0]))
		}
		fmt.Fprintln(table, strings.Join(row, "\t")+"\t")
	}
	if err := table.Flush(); err != nil {
		return fmt.Errorf("write find-max comparison: %w", err)
	}
	return nil
}

// sustainable is the sustainable rate of the mode named name (0 if not searched).
func (t FindMaxTarget) sustainable(name string) int {
	for _, mode := range t.Modes {
		if mode.Name == name {
			return mode.SustainableRecordsPerSecond
		}
	}
	return 0
}

// stoppedText is why a mode's search stopped, and whether a long step
// confirmed its rate.
func stoppedText(mode FindMaxMode) string {
	if mode.Confirmed {
		return mode.Stopped + ", confirmed"
	}
	return mode.Stopped
}

func rateText(rate int) string {
	if rate <= 0 {
		return "-"
	}
	return fmt.Sprint(rate)
}

func ratioText(value float64) string {
	if value <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", value)
}

func ratioValue(a, b int) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}
