package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/loadgen/report"
)

const (
	kfakeResults    = "../../loadgen/report/testdata/results-v1-kfake-smoke.json"
	embeddedResults = "../../loadgen/report/testdata/results-v1-embedded-smoke.json"
	overheadResults = "../../loadgen/report/testdata/results-v1-embedded-overhead.json"
)

// TestDashboardCommand renders two results files with the flag after the
// files, as the issue writes the command.
func TestDashboardCommand(t *testing.T) {
	output := filepath.Join(t.TempDir(), "out", "dashboard.html")
	var stdout, stderr bytes.Buffer
	code := run([]string{"dashboard", kfakeResults, embeddedResults, "-o", output}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "dashboard: "+output {
		t.Errorf("stdout %q", got)
	}
	page, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>exactly loadgen: A kfake vs B embedded</title>", `data-chart="throughput"`, "Files compared with A kfake"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestDashboardCommandErrors(t *testing.T) {
	dir := t.TempDir()
	older := filepath.Join(dir, "old.json")
	if err := os.WriteFile(older, []byte(`{"schema_version": 0, "tool": "exactly loadgen"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"dashboard"}, 2, "no results files given"},
		{[]string{"dashboard", "-o"}, 2, "exactly dashboard: -o needs a value\n"},
		{[]string{"dashboard", filepath.Join(dir, "missing.json")}, 1, "read results"},
		{[]string{"dashboard", older, "-o", filepath.Join(dir, "x.html")}, 1, "schema_version 0 is older than this build reads (schema_version 1)"},
	}
	for _, test := range cases {
		var stdout, stderr bytes.Buffer
		if code := run(test.args, &stdout, &stderr); code != test.code || !strings.Contains(stderr.String(), test.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", test.args, code, stderr.String(), test.code, test.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.html")); !os.IsNotExist(err) {
		t.Errorf("a refused input still wrote a page: %v", err)
	}
}

// colouredCell finds an element whose class says better or worse.
var colouredCell = regexp.MustCompile(`class="[^"]*\b(better|worse)\b[^"]*"`)

// writeResults writes results as a JSON file in dir.
func writeResults(t *testing.T, dir, name string, results *report.Results) string {
	t.Helper()
	data, err := json.Marshal(results)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// renderDashboard runs `exactly dashboard a b -o page` and returns the page.
func renderDashboard(t *testing.T, a, b string) string {
	t.Helper()
	output := filepath.Join(t.TempDir(), "dashboard.html")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"dashboard", a, b, "-o", output}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	page, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	return string(page)
}

// TestDashboardCommandSingleRunsColourNothing: two results files of the
// same build, one run per mode, B's records/s 1.87 times A's: nothing is
// coloured, and the page says why.
func TestDashboardCommandSingleRunsColourNothing(t *testing.T) {
	dir := t.TempDir()
	a, err := report.LoadResults(kfakeResults)
	if err != nil {
		t.Fatal(err)
	}
	b, err := report.LoadResults(kfakeResults)
	if err != nil {
		t.Fatal(err)
	}
	b.RunID = "00000000000000bb"
	for _, run := range b.Runs {
		run.Throughput.RecordsPerSecond *= 1.87
	}
	page := renderDashboard(t, writeResults(t, dir, "a.json", a), writeResults(t, dir, "b.json", b))
	if found := colouredCell.FindAllString(page, -1); len(found) > 0 {
		t.Errorf("single runs coloured: %v", found)
	}
	if !strings.Contains(page, "one run each: no interval") || strings.Contains(page, "×1.87") {
		t.Error("single runs not shown side by side without a ratio")
	}
}

// TestDashboardCommandRoundsColourOnlyBeyondTheFloor: a real five-round
// overhead file beside a copy whose transactional@10ms slot (at
// saturation) ran at half the throughput: that cell alone is coloured; the
// same slots unchanged read within the file's A/A floor.
func TestDashboardCommandRoundsColourOnlyBeyondTheFloor(t *testing.T) {
	dir := t.TempDir()
	a, err := report.LoadResults(overheadResults)
	if err != nil {
		t.Fatal(err)
	}
	b, err := report.LoadResults(overheadResults)
	if err != nil {
		t.Fatal(err)
	}
	b.RunID = "00000000000000bb"
	rows := b.Overhead.Loads[0].Rows
	for index := range rows {
		if rows[index].Slot == "transactional@10ms" {
			for round := range rows[index].Throughput.Values {
				rows[index].Throughput.Values[round] *= 0.5
			}
		}
	}
	page := renderDashboard(t, writeResults(t, dir, "a.json", a), writeResults(t, dir, "b.json", b))
	comparison := page[strings.Index(page, `<section id="comparison">`):]
	comparison = comparison[:strings.Index(comparison, "</section>")]
	found := colouredCell.FindAllString(comparison, -1)
	if len(found) != 1 || found[0] != `class="text ratio worse"` {
		t.Errorf("coloured cells %v, want one: transactional@10ms throughput at saturation", found)
	}
	row := regexp.MustCompile(`<tr data-run="transactional@10ms at saturation[^"]*" data-slot="transactional@10ms" data-rate="0">.*</tr>`).FindString(comparison)
	if !strings.Contains(row, `<td class="text ratio worse">×0.50 [`) {
		t.Errorf("halved slot: %s", row)
	}
	if got := strings.Count(comparison, "no difference (within noise ±"); got != 2*12-1 {
		t.Errorf("%d cells within noise, want every other one of 12 slots by 2 measures", got)
	}
}
