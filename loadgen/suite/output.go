package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/progress"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// Output is where a suite prints and writes: its progress and tables on
// Stdout, its results file and dashboard into Dir, its runs as CSV.
type Output struct {
	// Stdout receives the progress, the tables and where the files are.
	Stdout io.Writer
	// Dir is the directory of the results JSON file and its dashboard
	// (--out).
	Dir string
	// CSV is a file for the runs as CSV ("": none; --csv).
	CSV string
	// Wide prints every column of the summary, the matrix and the
	// broker-side table (--wide).
	Wide bool
	// Quiet prints no progress: only the tables and where the files are
	// (--quiet).
	Quiet bool
	// JSONProgress prints the progress as JSON lines, and no tables
	// (--json-progress).
	JSONProgress bool
}

// written are the files a suite wrote ("" for one it did not write).
type written struct{ Results, Dashboard, CSV string }

// tables prints the tables of a suite's results to w.
type tables func(w io.Writer, results *report.Results, wide bool) error

// finish says how writeResults tells where the files are.
type finish struct {
	// printer is the progress printer of a suite run in one
	// [loadgen.Run]: its SuiteFinished says where the files are (nil,
	// with event "": plain lines).
	printer *progress.Printer
	// event is the JSON progress event of a search or the security
	// workload ("find_max_finished", "security_finished"): with
	// --json-progress one line of it says where the files are, else plain
	// lines do, the CSV file's first.
	event string
	// interrupted reports whether the suite was cut short.
	interrupted bool
}

// writeResults is the one writer of a suite's outputs. It prints the
// tables of results to o.Stdout (nowhere with JSON progress: the results
// file holds what they show), writes the results JSON file into o.Dir,
// the runs to o.CSV when set and the dashboard next to the results file,
// then says where they are, as done says.
func (o Output) writeResults(results *report.Results, print tables, done finish) (written, error) {
	out := o.Stdout
	if o.JSONProgress {
		out = io.Discard
	}
	if err := print(out, results, o.Wide); err != nil {
		return written{}, err
	}
	path, err := report.Write(o.Dir, results)
	if err != nil {
		return written{}, err
	}
	csvPath, err := writeCSV(o.CSV, results)
	if err != nil {
		return written{Results: path}, err
	}
	page, err := writeDashboard(path, results)
	if err != nil {
		return written{Results: path, CSV: csvPath}, fmt.Errorf("write dashboard: %w", err)
	}
	files := written{Results: path, Dashboard: page, CSV: csvPath}
	switch {
	case done.printer != nil:
		done.printer.SuiteFinished(progress.Outcome{Passed: results.Passed, Interrupted: done.interrupted,
			ResultsPath: files.Results, DashboardPath: files.Dashboard, CSVPath: files.CSV})
	case done.event == "":
		fmt.Fprintf(o.Stdout, "results: %s\ndashboard: %s\n", files.Results, files.Dashboard)
		if files.CSV != "" {
			fmt.Fprintf(o.Stdout, "csv: %s\n", files.CSV)
		}
	case o.JSONProgress:
		line, _ := json.Marshal(map[string]any{"event": done.event, "passed": results.Passed,
			"interrupted": done.interrupted, "results": files.Results, "dashboard": files.Dashboard})
		fmt.Fprintf(o.Stdout, "%s\n", line)
	default:
		if files.CSV != "" {
			fmt.Fprintf(o.Stdout, "csv: %s\n", files.CSV)
		}
		fmt.Fprintf(o.Stdout, "results: %s\ndashboard: %s\n", files.Results, files.Dashboard)
	}
	return files, nil
}

// matrixTables are the tables of a suite run in one [loadgen.Run]: the
// summary, the expectations table of its fault matrix, its cost rounds
// (and their cost against round-trip time when they swept a slower
// network), its comparison of group protocols and the broker-side table.
func matrixTables(w io.Writer, results *report.Results, wide bool) error {
	if err := report.WriteSummaryWith(w, results, report.SummaryOptions{Wide: wide}); err != nil {
		return err
	}
	if err := loadgen.WriteMatrixWith(w, results, wide); err != nil {
		return err
	}
	if err := report.WriteOverhead(w, results); err != nil {
		return err
	}
	if err := report.WriteNetworkCost(w, results); err != nil {
		return err
	}
	if err := report.WriteWorkers(w, results); err != nil {
		return err
	}
	if err := report.WriteGroupProtocols(w, results); err != nil {
		return err
	}
	return report.WriteBrokerSideWith(w, results, wide)
}

// findMaxTables are the tables of a search: the summary and matrix of the
// runs at rate fractions (when any), the sustainable rates and the
// equal-load line.
func findMaxTables(w io.Writer, results *report.Results, wide bool) error {
	if len(results.Runs) > 0 {
		if err := report.WriteSummaryWith(w, results, report.SummaryOptions{Wide: wide}); err != nil {
			return err
		}
		if err := loadgen.WriteMatrixWith(w, results, wide); err != nil {
			return err
		}
	}
	if err := report.WriteFindMax(w, results.FindMax); err != nil {
		return err
	}
	report.WriteEqualLoad(w, results.FindMax.EqualLoad)
	return nil
}

// securityTables are the tables of the security workload: the summary of
// its runs (when any) and the security tables.
func securityTables(w io.Writer, results *report.Results, wide bool) error {
	if len(results.Runs) > 0 {
		if err := report.WriteSummaryWith(w, results, report.SummaryOptions{Wide: wide}); err != nil {
			return err
		}
	}
	return report.WriteSecurity(w, results)
}

// writeCSV writes the runs of results to path as CSV (nothing when path
// is empty) and returns the path written.
func writeCSV(path string, results *report.Results) (string, error) {
	if path == "" {
		return "", nil
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("--csv %s: %w", path, err)
		}
	}
	file, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("--csv %s: %w", path, err)
	}
	if err := report.WriteSummaryCSV(file, results); err != nil {
		file.Close()
		return "", fmt.Errorf("--csv %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return "", fmt.Errorf("--csv %s: %w", path, err)
	}
	return path, nil
}

// writeDashboard writes the dashboard next to the results file, linking
// the profiles of this run found next to it or under profiles/.
func writeDashboard(resultsPath string, results *report.Results) (string, error) {
	page := strings.TrimSuffix(resultsPath, filepath.Ext(resultsPath)) + ".html"
	dir := filepath.Dir(page)
	found := report.FindProfiles(results.RunID, dir, filepath.Join(dir, "profiles"), "profiles")
	options := report.DashboardOptions{Generated: time.Now(),
		Profiles: map[string][]string{results.RunID: report.RelativeLinks(dir, found...)}}
	if err := report.WriteDashboardWith(page, options, results); err != nil {
		return "", err
	}
	return page, nil
}

// printer returns the printer of a suite's progress on o.Stdout: none
// when Quiet, JSON lines with JSONProgress, else text, with a live line
// when Stdout is a terminal and plain lines when it is not.
func (o Output) printer() *progress.Printer {
	switch {
	case o.Quiet:
		return nil
	case o.JSONProgress:
		return progress.NewPrinter(o.Stdout, progress.JSON, 0)
	}
	if file, ok := o.Stdout.(*os.File); ok && term.IsTerminal(int(file.Fd())) {
		width, _, err := term.GetSize(int(file.Fd()))
		if err != nil {
			width = 0
		}
		return progress.NewPrinter(o.Stdout, progress.Terminal, width)
	}
	return progress.NewPrinter(o.Stdout, progress.Plain, 0)
}

// steps is where a search prints its steps: o.Stdout, or nowhere when
// Quiet or with JSON progress.
func (o Output) steps() io.Writer {
	if o.Quiet || o.JSONProgress {
		return io.Discard
	}
	return o.Stdout
}
