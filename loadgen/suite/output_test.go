package suite

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// testResults are the results of a search without runs on no target.
func testResults(t *testing.T) *report.Results {
	t.Helper()
	workload, err := loadgen.LoadWorkload("smoke")
	if err != nil {
		t.Fatal(err)
	}
	results, err := newResults(workload, nil)
	if err != nil {
		t.Fatal(err)
	}
	results.FindMax = &report.FindMax{}
	return results
}

// The one writer writes the results file, the dashboard next to it and
// the CSV file, and says where they are: after the tables as plain lines
// (a suite without a printer: the CSV file's last; a search or the
// security workload: its first), or, with JSON progress, without tables
// in one line of the suite's event.
func TestWriteResults(t *testing.T) {
	for _, test := range []struct {
		name  string
		json  bool
		done  finish
		lines func(p written) []string
	}{
		{"suite", false, finish{}, func(p written) []string {
			return []string{"tables", "results: " + p.Results, "dashboard: " + p.Dashboard, "csv: " + p.CSV}
		}},
		{"search", false, finish{event: "find_max_finished"}, func(p written) []string {
			return []string{"tables", "csv: " + p.CSV, "results: " + p.Results, "dashboard: " + p.Dashboard}
		}},
		{"search, JSON progress", true, finish{event: "find_max_finished", interrupted: true}, func(p written) []string {
			line, _ := json.Marshal(map[string]any{"event": "find_max_finished", "passed": false, "interrupted": true,
				"results": p.Results, "dashboard": p.Dashboard})
			return []string{string(line)}
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			dir := t.TempDir()
			var stdout bytes.Buffer
			output := Output{Stdout: &stdout, Dir: filepath.Join(dir, "out"), CSV: filepath.Join(dir, "csv", "runs.csv"), JSONProgress: test.json}
			paths, err := output.writeResults(testResults(t), func(w io.Writer, _ *report.Results, _ bool) error {
				_, err := io.WriteString(w, "tables\n")
				return err
			}, test.done)
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{paths.Results, paths.Dashboard, paths.CSV} {
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: %v", path, err)
				}
			}
			if filepath.Dir(paths.Results) != output.Dir || strings.TrimSuffix(paths.Results, ".json")+".html" != paths.Dashboard || paths.CSV != output.CSV {
				t.Errorf("paths %+v", paths)
			}
			want := strings.Join(test.lines(paths), "\n") + "\n"
			if stdout.String() != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
			}
		})
	}
}
