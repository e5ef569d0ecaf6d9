package report

import (
	"bytes"
	"encoding/csv"
	"path/filepath"
	"slices"
	"testing"
)

// The CSV of a realistic result parses back: the header, then one row
// per run with every column, the run's figures in their places.
func TestSummaryCSVParsesBack(t *testing.T) {
	examples, _ := filepath.Glob("../../results/examples/*.json")
	checked := 0
	for _, file := range examples {
		results, err := LoadResults(file)
		if err != nil || len(results.Runs) == 0 {
			continue
		}
		var buffer bytes.Buffer
		if err := WriteSummaryCSV(&buffer, results); err != nil {
			t.Fatal(err)
		}
		records, err := csv.NewReader(&buffer).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(records) != len(results.Runs)+1 || !slices.Equal(records[0], SummaryCSVHeader) {
			t.Fatalf("%s: %d records for %d runs, header %v", file, len(records), len(results.Runs), records[0])
		}
		column := func(name string) int { return slices.Index(SummaryCSVHeader, name) }
		for i, run := range results.Runs {
			row := records[i+1]
			if row[column("run")] != run.Name || row[column("status")] != run.Status || row[column("fault_plan")] != run.FaultPlan {
				t.Errorf("%s: row %d = %v for run %s", file, i+1, row[:4], run.Name)
			}
			if want := totalsOf(run).lost; row[column("lost")] != want {
				t.Errorf("%s: %s lost %s, want %s", file, run.Name, row[column("lost")], want)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no example results with runs")
	}
}

// totalsOf is the lost count of run as the CSV writes it.
func totalsOf(run *Run) struct{ lost string } {
	t := checkTotals(run.Checks)
	return struct{ lost string }{lost: csvCount(t.lost)}
}
