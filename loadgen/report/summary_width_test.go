package report

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every line of the default summary of a realistic result (the example
// results and the fixtures) fits SummaryWidth columns, names shortened
// where they must be; --wide keeps every column.
func TestSummaryFitsWidth(t *testing.T) {
	examples, _ := filepath.Glob("../../results/examples/*.json")
	fixtures, _ := filepath.Glob("testdata/*.json")
	files := append(examples, fixtures...)
	if len(examples) == 0 {
		t.Fatal("no example results")
	}
	for _, file := range files {
		results, err := LoadResults(file)
		if err != nil || len(results.Runs) == 0 {
			continue // a fixture of an old schema, or of find-max only
		}
		var summary strings.Builder
		if err := WriteSummary(&summary, results); err != nil {
			t.Fatal(err)
		}
		text := summary.String()
		for _, line := range strings.Split(text, "\n") {
			if n := utf8.RuneCountInString(line); n > SummaryWidth {
				t.Errorf("%s: a line of %d columns:\n%s", file, n, line)
			}
		}
		for _, want := range []string{"run", "status", "rec/s", "vs base", "ack p99", "e2e p99", "lost", "dup", "reord", "other"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the summary lacks the column %q", file, want)
			}
		}
		var wide strings.Builder
		if err := WriteSummaryWith(&wide, results, SummaryOptions{Wide: true}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(wide.String(), "uncorr p99.9") || !strings.Contains(wide.String(), "poll-skip") {
			t.Errorf("%s: the wide summary lacks its columns", file)
		}
	}
}

func TestShorten(t *testing.T) {
	for _, c := range []struct {
		text  string
		width int
		want  string
	}{
		{"idempotent:none", 20, "idempotent:none"},
		{"transactional@100ms:coordinator-kill", 21, "transactio…nator-kill"},
	} {
		if got := shorten(c.text, c.width); got != c.want || utf8.RuneCountInString(got) > c.width {
			t.Errorf("shorten(%q, %d) = %q, want %q", c.text, c.width, got, c.want)
		}
	}
}

// The cost table under faults and the overhead tables of every example
// result fit SummaryWidth columns too: they are what the main job ends
// with.
func TestOverheadTablesFitWidth(t *testing.T) {
	examples, _ := filepath.Glob("../../results/examples/*.json")
	checked := 0
	for _, file := range examples {
		results, err := LoadResults(file)
		if err != nil {
			t.Fatal(err)
		}
		if results.Overhead == nil {
			continue
		}
		checked++
		var tables strings.Builder
		if err := WriteOverhead(&tables, results); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(tables.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > SummaryWidth {
				t.Errorf("%s: a line of %d columns:\n%s", file, n, line)
			}
		}
	}
	if checked < 2 {
		t.Fatalf("%d example results with overhead tables; want the cost and the overhead examples", checked)
	}
}
