package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// smallSuite is a two-cell suite against the embedded broker: idempotent
// without faults (runs about a second), and under zombie-producer (not
// applicable: it needs the transactional mode).
func smallSuite(out string, extra ...string) []string {
	return append([]string{"loadgen", "--mode", "idempotent", "--faults", "none,zombie-producer",
		"--duration", "1s", "--rate", "500", "--drain", "10s", "--out", out}, extra...)
}

// TestLoadgenPlainProgress runs the main job with stdout not a terminal:
// plain lines only, a header naming target, workload and cells, one
// permanent line per cell numbered of the total in order, then the
// tables and the totals with the results and dashboard paths.
func TestLoadgenPlainProgress(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run(smallSuite(out), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	text := stdout.String()
	if strings.ContainsAny(text, "\r\033") {
		t.Fatalf("non-terminal output has terminal control characters:\n%q", text)
	}
	lines := strings.Split(text, "\n")
	header := regexp.MustCompile(`^exactly loadgen [0-9a-f]{16}: workload standard, 2 cells \(1 to run, 1 not applicable here\)$`)
	if !header.MatchString(lines[0]) || !strings.HasPrefix(lines[1], "  against embedded (exactly broker") {
		t.Errorf("header:\n%s\n%s", lines[0], lines[1])
	}
	expected := 2
	for strings.HasPrefix(lines[expected], "    ") { // the target's description, wrapped
		expected++
	}
	if !strings.HasPrefix(lines[expected], "expected duration about ") {
		t.Errorf("no expected duration after the header:\n%s", strings.Join(lines[:expected+1], "\n"))
	}
	var cellLines []string
	for _, line := range lines {
		if strings.HasPrefix(line, "[") {
			cellLines = append(cellLines, line)
		}
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^\[1/2\] PASS +idempotent:none +\d+\.\ds +\d+ rec/s  lost 0, dup 0, reord 0`),
		regexp.MustCompile(`^\[2/2\] NOT-APPLICABLE +idempotent:zombie-producer +zombie-producer needs the transactional mode$`),
	}
	if len(cellLines) != len(want) {
		t.Fatalf("%d permanent cell lines, want %d:\n%s", len(cellLines), len(want), text)
	}
	for i, pattern := range want {
		if !pattern.MatchString(cellLines[i]) {
			t.Errorf("cell line %d: %q does not match %s", i+1, cellLines[i], pattern)
		}
	}
	// The tables follow the cell lines; the totals and paths end the output.
	tail := lines[len(lines)-4:]
	if !strings.HasPrefix(tail[0], "PASS after ") || !strings.HasSuffix(tail[0], ": 1 pass, 1 not-applicable") ||
		!strings.HasPrefix(tail[1], "results: "+out) || !strings.HasPrefix(tail[2], "dashboard: "+out) || tail[3] != "" {
		t.Errorf("last lines %q", tail)
	}
	if strings.Index(text, "[2/2]") > strings.Index(text, "fault matrix against") {
		t.Errorf("the cell lines do not come before the tables:\n%s", text)
	}
	results, _ := filepath.Glob(filepath.Join(out, "loadgen-*.json"))
	if len(results) != 1 {
		t.Errorf("results files %v", results)
	}
}

// TestLoadgenJSONProgress: with --json-progress stdout is JSON lines only,
// from the suite event to suite_finished with the results path.
func TestLoadgenJSONProgress(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run(smallSuite(out, "--json-progress"), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var kinds []string
	var last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var event map[string]any
		if err := json.Unmarshal([]byte(line), &event); err != nil {
			t.Fatalf("stdout line is not JSON: %q (%v)", line, err)
		}
		if kind := event["event"].(string); kind != "status" {
			kinds = append(kinds, kind)
		}
		last = event
	}
	if got := strings.Join(kinds, ","); got != "suite,cell_started,cell_finished,cell_started,cell_finished,suite_finished" {
		t.Errorf("events %s", got)
	}
	results, ok := last["results"].(string)
	if !ok || !strings.HasPrefix(results, out) || last["passed"] != true {
		t.Errorf("suite_finished %v", last)
	}
	if _, err := os.Stat(results); err != nil {
		t.Errorf("results file: %v", err)
	}
}

// TestLoadgenQuiet: --quiet prints no progress, only the tables and the
// paths; --csv writes the runs next to them, a header and a row per run.
func TestLoadgenQuiet(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	csvPath := filepath.Join(out, "runs.csv")
	var stdout, stderr bytes.Buffer
	if code := run(smallSuite(out, "--quiet", "--csv", csvPath), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	text := stdout.String()
	for _, unwanted := range []string{"[1/2]", "expected duration", "cell 1/2"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("quiet output has %q", unwanted)
		}
	}
	if !strings.Contains(text, fmt.Sprintf("results: %s", out)) || !strings.Contains(text, "matrix: 1 pass, 1 not-applicable") {
		t.Errorf("quiet output lacks the tables or the results path:\n%s", text)
	}
	if !strings.Contains(text, "csv: "+csvPath+"\n") {
		t.Errorf("quiet output does not say where the CSV is:\n%s", text)
	}
	file, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	records, err := csv.NewReader(file).ReadAll()
	if err != nil || len(records) != 3 || records[0][0] != "run" || records[1][0] != "idempotent:none" || records[1][3] != "pass" ||
		records[2][3] != "not-applicable" {
		t.Errorf("CSV %v (%v): want a header and the two runs", records, err)
	}
}
