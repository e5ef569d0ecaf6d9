package progress

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fakeClock is a settable clock for the printer.
type fakeClock struct{ now time.Time }

func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }

func testSuite() Suite {
	return Suite{RunID: "00000000000000aa", Target: "embedded", TargetDescription: "127.0.0.1:9092", Workload: "standard",
		Cells: []Cell{
			{Index: 1, Name: "idempotent:none", Load: 3 * time.Second, Drain: 20 * time.Second},
			{Index: 2, Name: "idempotent:zombie-producer", Load: 8 * time.Second, NotApplicable: "zombie-producer needs the transactional mode"},
			{Index: 3, Name: "at-least-once:ack-loss", Load: 3 * time.Second, Drain: 20 * time.Second},
		}}
}

// playSuite drives a printer through a suite of three cells: one that
// passes after overrunning its producing budget, one not applicable, one
// that fails; status ticks every second.
func playSuite(p *Printer, clock *fakeClock) {
	p.SuiteStarted(testSuite())
	p.CellStarted(1)
	for second := 1; second <= 14; second++ {
		clock.advance(time.Second)
		status := Status{Cell: 1, Phase: PhaseProducing, Elapsed: time.Duration(second) * time.Second, Budget: 12 * time.Second,
			Measured: true, RecordsPerSecond: 2000, P99Milliseconds: 4.5}
		p.Status(status)
	}
	p.CellFinished(Finished{Cell: 1, Verdict: "pass", Elapsed: 14 * time.Second, RecordsPerSecond: 1999, Observed: "lost 0, dup 0"})
	p.Status(Status{Cell: 1, Phase: PhaseVerifying}) // a late tick: ignored
	p.CellStarted(2)
	p.CellFinished(Finished{Cell: 2, Verdict: "not-applicable", Why: "zombie-producer needs the transactional mode"})
	p.CellStarted(3)
	clock.advance(time.Second)
	p.Status(Status{Cell: 3, Phase: PhaseDraining, Elapsed: time.Second, Budget: 20 * time.Second})
	clock.advance(time.Second)
	p.CellFinished(Finished{Cell: 3, Verdict: "fail", Elapsed: 2 * time.Second, Observed: "lost 3", Why: "lost 3 > 0"})
	p.SuiteFinished(Outcome{ResultsPath: "results/x.json", DashboardPath: "results/x.html"})
}

func newTestPrinter(style Style, width int) (*Printer, *bytes.Buffer, *fakeClock) {
	var out bytes.Buffer
	clock := &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	p := NewPrinter(&out, style, width)
	p.now = func() time.Time { return clock.now }
	return p, &out, clock
}

// TestPlainOutput: lines only, one permanent line per cell numbered of
// the total in order, status lines at most every 10 s plus one naming an
// overrun, and the totals with where the results are.
func TestPlainOutput(t *testing.T) {
	p, out, clock := newTestPrinter(Plain, 0)
	playSuite(p, clock)
	text := out.String()
	if strings.ContainsAny(text, "\r\033") {
		t.Fatalf("plain output has terminal control characters:\n%q", text)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if lines[0] != "exactly loadgen 00000000000000aa: workload standard, 3 cells (2 to run, 1 not applicable here)" ||
		lines[1] != "  against embedded (127.0.0.1:9092)" {
		t.Errorf("header %q, %q", lines[0], lines[1])
	}
	// Expected: (3 s + 3 s overhead) twice; the not-applicable cell takes none.
	if !strings.Contains(lines[2], "expected duration about 12s") {
		t.Errorf("expected-duration line %q", lines[2])
	}
	cellLine := regexp.MustCompile(`^\[(\d)/3\] (\S+)`)
	var cells, verdicts []string
	var statusLines []string
	for _, line := range lines[2:] {
		if m := cellLine.FindStringSubmatch(line); m != nil {
			cells, verdicts = append(cells, m[1]), append(verdicts, m[2])
		}
		if strings.HasPrefix(line, "  cell ") {
			statusLines = append(statusLines, line)
		}
	}
	if strings.Join(cells, ",") != "1,2,3" || strings.Join(verdicts, ",") != "PASS,NOT-APPLICABLE,FAIL" {
		t.Errorf("permanent cell lines %v %v:\n%s", cells, verdicts, text)
	}
	// 14 ticks: one at 10 s, one when the 12 s budget is first overrun.
	if len(statusLines) != 2 {
		t.Fatalf("%d status lines, want 2:\n%s", len(statusLines), text)
	}
	if !strings.Contains(statusLines[0], "cell 1/3 idempotent:none  producing 10.0s/12s  2000 rec/s") ||
		!strings.Contains(statusLines[0], "0 passed, 0 failed | 10s elapsed, about ") {
		t.Errorf("status line %q", statusLines[0])
	}
	if !strings.Contains(statusLines[1], "producing 13.0s (over its 12s budget by 1.0s)") {
		t.Errorf("overrun line %q", statusLines[1])
	}
	for _, want := range []string{
		"[2/3] NOT-APPLICABLE idempotent:zombie-producer          zombie-producer needs the transactional mode",
		"why: lost 3 > 0",
		"FAIL after 16s: 1 pass, 1 fail, 1 not-applicable",
		"results: results/x.json", "dashboard: results/x.html",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

// TestTerminalOutput: the live line is rewritten in place, kept to one
// row of the terminal, and cleared before each permanent line.
func TestTerminalOutput(t *testing.T) {
	p, out, clock := newTestPrinter(Terminal, 80)
	playSuite(p, clock)
	text := out.String()
	if got := strings.Count(text, "\r\033[K"); got < 15 {
		t.Errorf("%d live-line rewrites, want one per status and a clear per finished cell", got)
	}
	for _, segment := range strings.Split(text, "\r\033[K") {
		if strings.HasPrefix(segment, "cell ") && len(segment) > 79 {
			t.Errorf("live line of %d columns on an 80-column terminal: %q", len(segment), segment)
		}
	}
	if !strings.Contains(text, "\r\033[K[1/3] PASS") {
		t.Errorf("the live line is not cleared before the permanent line:\n%q", text)
	}
}

// TestJSONOutput: every line is one JSON object; the events come in order
// and carry the cell of the total and the counts so far.
func TestJSONOutput(t *testing.T) {
	p, out, clock := newTestPrinter(JSON, 0)
	playSuite(p, clock)
	var events []string
	var last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var event map[string]any
		if err := json.Unmarshal([]byte(line), &event); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		events = append(events, event["event"].(string))
		if event["event"] == "cell_finished" {
			last = event
		}
		if event["event"] == "status" && event["cells"] != float64(3) {
			t.Errorf("status event without the cell count: %v", event)
		}
	}
	want := "suite,cell_started," + strings.Repeat("status,", 14) + "cell_finished,cell_started,cell_finished,cell_started,status,cell_finished,suite_finished"
	if got := strings.Join(events, ","); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	if last["verdict"] != "fail" || last["passed"] != float64(1) || last["failed"] != float64(1) || last["cell"] != float64(3) {
		t.Errorf("last cell_finished %v", last)
	}
}

// TestETAAdaptsToFinishedCells: once cells finish, the estimate uses their
// real overhead beyond the producing time instead of the default.
func TestETAAdaptsToFinishedCells(t *testing.T) {
	p, _, clock := newTestPrinter(Plain, 0)
	p.SuiteStarted(testSuite())
	if got := p.etaLocked(clock.now); got != 12*time.Second {
		t.Errorf("before any cell: %s, want 12s", got)
	}
	p.CellStarted(1)
	clock.advance(13 * time.Second)
	p.CellFinished(Finished{Cell: 1, Verdict: "pass", Elapsed: 13 * time.Second}) // 10 s beyond its 3 s load
	p.CellStarted(3)
	clock.advance(4 * time.Second)
	if got := p.etaLocked(clock.now); got != 9*time.Second {
		t.Errorf("4 s into the last cell: %s, want 9s (3 s load + 10 s overhead - 4 s)", got)
	}
}

// Before the first second of producing is measured the status line
// shows no figures (not "0 rec/s p99 0.0 ms"); after it, the figures.
func TestFirstStatusLineHasNoFiguresYet(t *testing.T) {
	p, out, clock := newTestPrinter(Terminal, 0)
	p.SuiteStarted(testSuite())
	p.CellStarted(1)
	clock.advance(time.Second)
	p.Status(Status{Cell: 1, Phase: PhaseProducing, Elapsed: 300 * time.Millisecond, Budget: 12 * time.Second})
	first := out.String()[strings.LastIndex(out.String(), "\r\033[K"):]
	if !strings.Contains(first, "producing 0.3s/12s  starting…  faults 0") || strings.Contains(first, "rec/s") || strings.Contains(first, "p99") {
		t.Errorf("first live line %q", first)
	}
	p.Status(Status{Cell: 1, Phase: PhaseProducing, Elapsed: 1300 * time.Millisecond, Budget: 12 * time.Second, Measured: true})
	second := out.String()[strings.LastIndex(out.String(), "\r\033[K"):]
	if !strings.Contains(second, "  0 rec/s  p99 0.0 ms") {
		t.Errorf("a measured second of nothing is shown as such: %q", second)
	}
}

// TestCellLinesWrapAt120: a cell's permanent line with the checker's long
// account is wrapped at 120 columns after a comma or semicolon, its
// further lines indented, and nothing of it lost.
func TestCellLinesWrapAt120(t *testing.T) {
	p, out, clock := newTestPrinter(Plain, 0)
	p.SuiteStarted(testSuite())
	p.CellStarted(1)
	clock.advance(3 * time.Second)
	observed := "lost 0, dup 0, reord 11, poll-skips 0, non-monotonic 0; faults 33 (drop-response 33); " +
		"writer recoveries 30 (found written 255, resent 11); input copies 341, dropped 341, unprotected 0 (window 20000 offsets)"
	p.CellFinished(Finished{Cell: 1, Verdict: "fail", Elapsed: 3 * time.Second, RecordsPerSecond: 1987, Observed: observed,
		Why: strings.Repeat("a reason that goes on, ", 8)})
	var cellLines []string
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")[3:] {
		if len(line) > 120 {
			t.Errorf("a line of %d columns: %q", len(line), line)
		}
		cellLines = append(cellLines, line)
	}
	if len(cellLines) < 3 || !strings.HasPrefix(cellLines[0], "[1/3] FAIL ") || !strings.HasPrefix(cellLines[1], "      non-monotonic") {
		t.Fatalf("cell lines not wrapped as expected:\n%s", strings.Join(cellLines, "\n"))
	}
	joined := strings.Join(strings.Fields(strings.Join(cellLines, " ")), " ")
	if !strings.Contains(joined, strings.Join(strings.Fields(observed), " ")) {
		t.Errorf("the wrapped lines lost part of the account:\n%s", strings.Join(cellLines, "\n"))
	}
}
