package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Style is how a Printer renders progress.
type Style int

const (
	// Plain prints lines only: the header, a status line at most every
	// PlainStatusEvery (and when a phase overruns its budget), and a
	// permanent line per finished cell. For logs, pipes and CI.
	Plain Style = iota
	// Terminal prints the same permanent lines and keeps one live status
	// line under them, rewritten in place about once a second.
	Terminal
	// JSON prints one JSON object per event and line, for scripts.
	JSON
)

// PlainStatusEvery is how often Plain prints a status line for a running
// cell.
const PlainStatusEvery = 10 * time.Second

// defaultOverhead is the time a cell is expected to take beyond its
// producing time (setting up, draining, verifying) until finished cells
// show the real figure; about what the standard suite shows on two cores.
const defaultOverhead = 3 * time.Second

// Printer renders a suite's progress to a writer in one Style. It is safe
// for concurrent use: a mutex orders the runner's events and the status
// goroutine's lines.
type Printer struct {
	out   io.Writer
	style Style
	// width is the terminal's width in columns (Terminal; 0: unknown),
	// used to keep the live line on one row.
	width int
	// now is the clock (tests replace it).
	now func() time.Time

	mu            sync.Mutex // guards what follows
	suite         Suite
	started       time.Time
	current       int // index of the running cell (0: none)
	lastFinished  int // index of the last finished cell (0: none)
	cellStarted   time.Time
	verdicts      map[string]int
	overheadSum   time.Duration // over finished cells that ran
	overheadCount int
	liveShown     bool      // Terminal: a live line is on screen
	lastPlain     time.Time // Plain: when the last status line was printed
	overrunShown  Phase     // Plain: the phase whose overrun was reported
}

// NewPrinter returns a Printer writing to out in style; width is the
// terminal's width in columns (0: unknown), used by Terminal.
func NewPrinter(out io.Writer, style Style, width int) *Printer {
	return &Printer{out: out, style: style, width: width, now: time.Now, verdicts: map[string]int{}}
}

// SuiteStarted prints the header.
func (p *Printer) SuiteStarted(suite Suite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.suite, p.started = suite, p.now()
	expected := p.remainingLocked(0, 0)
	if p.style == JSON {
		cells := make([]jsonCell, len(suite.Cells))
		for i, cell := range suite.Cells {
			cells[i] = jsonCell{Index: cell.Index, Name: cell.Name, LoadSeconds: cell.Load.Seconds(),
				DrainSeconds: cell.Drain.Seconds(), NotApplicable: cell.NotApplicable}
		}
		event := map[string]any{"event": "suite", "run_id": suite.RunID, "target": suite.Target,
			"target_description": suite.TargetDescription, "workload": suite.Workload,
			"expected_seconds": expected.Seconds(), "cells": cells}
		if len(suite.Notes) > 0 {
			event["notes"] = suite.Notes
		}
		p.emit(event)
		return
	}
	skipped := 0
	for _, cell := range suite.Cells {
		if cell.NotApplicable != "" {
			skipped++
		}
	}
	counts := fmt.Sprintf("%d cells", len(suite.Cells))
	if skipped > 0 {
		counts += fmt.Sprintf(" (%d to run, %d not applicable here)", len(suite.Cells)-skipped, skipped)
	}
	fmt.Fprintf(p.out, "exactly loadgen %s: workload %s, %s\n", suite.RunID, suite.Workload, counts)
	printWrapped(p.out, fmt.Sprintf("  against %s (%s)", suite.Target, suite.TargetDescription), "    ")
	fmt.Fprintf(p.out, "expected duration about %s; each cell produces under its faults, drains, then reads back and checks every record\n",
		clock(expected))
	for _, note := range suite.Notes {
		printWrapped(p.out, note, "  ")
	}
}

// CellStarted notes the running cell.
func (p *Printer) CellStarted(cell int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current, p.cellStarted, p.lastPlain, p.overrunShown = cell, p.now(), p.now(), ""
	if p.style == JSON {
		p.emit(map[string]any{"event": "cell_started", "cell": cell, "cells": len(p.suite.Cells), "name": p.cellName(cell)})
	}
}

// Status shows the running cell's state: the live line (Terminal), a
// line every PlainStatusEvery or on an overrun (Plain), or an event (JSON).
func (p *Printer) Status(status Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if status.Cell != p.current {
		return // a late tick of a finished cell
	}
	now := p.now()
	switch p.style {
	case JSON:
		p.emit(map[string]any{"event": "status", "cell": status.Cell, "cells": len(p.suite.Cells),
			"name": p.cellName(status.Cell), "phase": status.Phase, "phase_seconds": status.Elapsed.Seconds(),
			"phase_budget_seconds": status.Budget.Seconds(), "overrun_seconds": status.Overrun().Seconds(),
			"records_per_second": status.RecordsPerSecond, "megabytes_per_second": status.MegabytesPerSecond,
			"measured": status.Measured, "p99_ms": status.P99Milliseconds, "errors": status.Errors, "retries": status.Retries, "faults": status.Faults,
			"passed": p.verdicts["pass"], "failed": p.failedLocked(),
			"elapsed_seconds": now.Sub(p.started).Seconds(), "eta_seconds": p.etaLocked(now).Seconds()})
	case Terminal:
		line := p.statusLineLocked(status, now)
		if p.width > 1 && len(line) >= p.width {
			line = line[:p.width-1] // one row, or \r cannot take it back
		}
		fmt.Fprint(p.out, "\r\033[K"+line)
		p.liveShown = true
	default:
		overrun := status.Overrun() > 0 && p.overrunShown != status.Phase
		if now.Sub(p.lastPlain) < PlainStatusEvery && !overrun {
			return
		}
		if overrun {
			p.overrunShown = status.Phase
		}
		p.lastPlain = now
		fmt.Fprintln(p.out, "  "+p.statusLineLocked(status, now))
	}
}

// statusLineLocked is the status line: the cell of the total, its phase
// against the phase's budget, rates, the counts so far, elapsed and ETA.
func (p *Printer) statusLineLocked(status Status, now time.Time) string {
	var line strings.Builder
	fmt.Fprintf(&line, "cell %d/%d %s  %s", status.Cell, len(p.suite.Cells), p.cellName(status.Cell), phaseText(status))
	switch {
	case status.Phase != PhaseProducing && status.Phase != PhaseFlushing:
	case !status.Measured:
		line.WriteString("  starting…") // no second measured yet: no figures to show
	default:
		fmt.Fprintf(&line, "  %.0f rec/s  p99 %.1f ms", status.RecordsPerSecond, status.P99Milliseconds)
	}
	fmt.Fprintf(&line, "  faults %d  errors %d", status.Faults, status.Errors)
	fmt.Fprintf(&line, "  | %d passed, %d failed | %s elapsed, about %s left",
		p.verdicts["pass"], p.failedLocked(), clock(now.Sub(p.started)), clock(p.etaLocked(now)))
	return line.String()
}

// phaseText is "producing 5.2s/12s", or the overrun spelled out.
func phaseText(status Status) string {
	elapsed := status.Elapsed.Round(100 * time.Millisecond).Seconds()
	switch {
	case status.Budget <= 0:
		return fmt.Sprintf("%s %.1fs", status.Phase, elapsed)
	case status.Overrun() > 0:
		return fmt.Sprintf("%s %.1fs (over its %s budget by %.1fs)", status.Phase, elapsed,
			status.Budget, status.Overrun().Round(100*time.Millisecond).Seconds())
	default:
		return fmt.Sprintf("%s %.1fs/%s", status.Phase, elapsed, status.Budget)
	}
}

// CellFinished prints the cell's permanent line.
func (p *Printer) CellFinished(finished Finished) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.verdicts[finished.Verdict]++
	cell := p.cell(finished.Cell)
	if cell.NotApplicable == "" && finished.Verdict != "not-applicable" {
		p.overheadSum += max(finished.Elapsed-cell.Load, 0)
		p.overheadCount++
	}
	p.current, p.lastFinished = 0, finished.Cell
	if p.style == JSON {
		p.emit(map[string]any{"event": "cell_finished", "cell": finished.Cell, "cells": len(p.suite.Cells),
			"name": cell.Name, "verdict": finished.Verdict, "seconds": finished.Elapsed.Seconds(),
			"records_per_second": finished.RecordsPerSecond, "observed": finished.Observed, "why": finished.Why,
			"passed": p.verdicts["pass"], "failed": p.failedLocked()})
		return
	}
	p.clearLiveLocked()
	width := len(fmt.Sprint(len(p.suite.Cells)))
	line := fmt.Sprintf("[%*d/%d] %-10s %-34s", width, finished.Cell, len(p.suite.Cells),
		strings.ToUpper(finished.Verdict), cell.Name)
	indent := strings.Repeat(" ", 2*width+4)
	if finished.Verdict == "not-applicable" {
		printWrapped(p.out, line+"  "+finished.Why, indent)
		return
	}
	line += fmt.Sprintf(" %6.1fs", finished.Elapsed.Seconds())
	if finished.RecordsPerSecond > 0 {
		line += fmt.Sprintf("  %6.0f rec/s", finished.RecordsPerSecond)
	}
	if finished.Observed != "" {
		line += "  " + finished.Observed
	}
	printWrapped(p.out, line, indent)
	if finished.Why != "" && finished.Verdict != "pass" {
		printWrapped(p.out, indent+"why: "+finished.Why, indent+"     ")
	}
}

// lineWidth is the width the permanent lines are wrapped to, that of the
// summary tables.
const lineWidth = 120

// printWrapped prints text wrapped at lineWidth, breaking after the
// commas and semicolons between the checker's counts or before a " | "
// (or at spaces when a part is longer), each further line after indent.
func printWrapped(w io.Writer, text, indent string) {
	for utf8.RuneCountInString(text) > lineWidth {
		cut := -1
		for i, r := range text {
			if utf8.RuneCountInString(text[:i]) >= lineWidth {
				break
			}
			if r == ' ' && i > len(indent) && (text[i-1] == ',' || text[i-1] == ';' || strings.HasPrefix(text[i:], " | ")) {
				cut = i
			}
		}
		if cut < 0 {
			cut = strings.LastIndex(string([]rune(text)[:lineWidth]), " ")
		}
		if cut <= len(indent) {
			break
		}
		fmt.Fprintln(w, strings.TrimRight(text[:cut], " "))
		text = indent + strings.TrimLeft(text[cut:], " ")
	}
	fmt.Fprintln(w, strings.TrimRight(text, " "))
}

// SuiteFinished prints the totals and where the results are.
func (p *Printer) SuiteFinished(outcome Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := p.now().Sub(p.started)
	if p.style == JSON {
		event := map[string]any{"event": "suite_finished", "passed": outcome.Passed, "interrupted": outcome.Interrupted,
			"verdicts": p.verdicts, "seconds": elapsed.Seconds(), "results": outcome.ResultsPath,
			"dashboard": outcome.DashboardPath}
		if outcome.CSVPath != "" {
			event["csv"] = outcome.CSVPath
		}
		p.emit(event)
		return
	}
	p.clearLiveLocked()
	var counts []string
	for _, verdict := range []string{"pass", "fail", "error", "untestable", "unsupported", "not-applicable"} {
		if n := p.verdicts[verdict]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, verdict))
		}
	}
	state := "PASS"
	switch {
	case outcome.Interrupted:
		state = "INTERRUPTED"
	case !outcome.Passed:
		state = "FAIL"
	}
	fmt.Fprintf(p.out, "%s after %s: %s\n", state, clock(elapsed), strings.Join(counts, ", "))
	if outcome.ResultsPath != "" {
		fmt.Fprintf(p.out, "results: %s\n", outcome.ResultsPath)
	}
	if outcome.DashboardPath != "" {
		fmt.Fprintf(p.out, "dashboard: %s (open it in a browser)\n", outcome.DashboardPath)
	}
	if outcome.CSVPath != "" {
		fmt.Fprintf(p.out, "csv: %s\n", outcome.CSVPath)
	}
}

// etaLocked estimates the time left: the running cell's expected rest and
// the expected time of every cell after it.
func (p *Printer) etaLocked(now time.Time) time.Duration {
	if p.current == 0 {
		return p.remainingLocked(p.lastFinished+1, 0)
	}
	return p.remainingLocked(p.current, now.Sub(p.cellStarted))
}

// remainingLocked is the expected time of cells from index from on, less
// elapsed of the first (never below zero for it).
func (p *Printer) remainingLocked(from int, elapsed time.Duration) time.Duration {
	overhead := defaultOverhead
	if p.overheadCount > 0 {
		overhead = p.overheadSum / time.Duration(p.overheadCount)
	}
	return remaining(p.suite.Cells, from, elapsed, overhead)
}

// ExpectedDuration is how long cells are expected to take, as the header
// of a suite says before it starts: each cell to run its load plus the
// usual time to set up, drain and check.
func ExpectedDuration(cells []Cell) time.Duration {
	return remaining(cells, 0, 0, defaultOverhead)
}

// remaining is the expected time of cells from index from on, each its
// load plus overhead, less elapsed of the first.
func remaining(cells []Cell, from int, elapsed, overhead time.Duration) time.Duration {
	var total time.Duration
	for _, cell := range cells {
		if cell.Index < from || cell.NotApplicable != "" {
			continue
		}
		expected := cell.Load + overhead
		if cell.Index == from {
			expected = max(expected-elapsed, 0)
		}
		total += expected
	}
	return total
}

func (p *Printer) failedLocked() int {
	return p.verdicts["fail"] + p.verdicts["error"]
}

func (p *Printer) clearLiveLocked() {
	if p.liveShown {
		fmt.Fprint(p.out, "\r\033[K")
		p.liveShown = false
	}
}

func (p *Printer) cell(index int) Cell {
	if index >= 1 && index <= len(p.suite.Cells) {
		return p.suite.Cells[index-1]
	}
	return Cell{Index: index}
}

func (p *Printer) cellName(index int) string {
	return p.cell(index).Name
}

// emit writes one JSON event line. Encoding a map of plain values cannot
// fail; a write error is the reader's problem (a closed pipe), not the run's.
func (p *Printer) emit(event map[string]any) {
	line, err := json.Marshal(event)
	if err != nil {
		return
	}
	_, _ = p.out.Write(append(line, '\n'))
}

type jsonCell struct {
	Index         int     `json:"index"`
	Name          string  `json:"name"`
	LoadSeconds   float64 `json:"load_seconds"`
	DrainSeconds  float64 `json:"drain_seconds"`
	NotApplicable string  `json:"not_applicable,omitempty"`
}

// clock formats a duration as 1m05s or 42s.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
