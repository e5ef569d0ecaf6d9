package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen/modes"
)

// BaselineModeName is the delivery mode whose throughput the others are
// compared with (the registered mode marked Baseline, at-least-once:
// acks=all, retries, no idempotence). ratio_to_baseline in a results file
// is relative to that run.
var BaselineModeName = modes.Baseline()

// DashboardOptions adjust a rendered dashboard.
type DashboardOptions struct {
	// Title heads the page; empty: derived from the results.
	Title string
	// Profiles maps a results RunID to links to the profiles recorded
	// during that invocation, relative to the page (see FindProfiles).
	Profiles map[string][]string
	// Generated is stamped on the page; zero: not stamped.
	Generated time.Time
}

//go:embed dashboard.html.tmpl
var dashboardTemplateText string

var dashboardTemplate = template.Must(template.New("dashboard").Parse(dashboardTemplateText))

// WriteDashboard renders results into one self-contained HTML page at path
// (no network at view time: CSS and SVG charts are inline). Profiles whose
// file names carry a results' run id next to path are linked. The write
// goes through a temporary file, so a reader never sees half a page.
func WriteDashboard(path string, results ...*Results) error {
	if path == "" {
		return fmt.Errorf("write dashboard: no output path")
	}
	options := DashboardOptions{Generated: time.Now(), Profiles: map[string][]string{}}
	dir := filepath.Dir(path)
	for _, result := range results {
		if result == nil {
			continue
		}
		options.Profiles[result.RunID] = RelativeLinks(dir, FindProfiles(result.RunID, dir, filepath.Join(dir, "profiles"))...)
	}
	return WriteDashboardWith(path, options, results...)
}

// WriteDashboardNextTo writes the dashboard of one invocation next to its
// results file (results/loadgen-….json → results/loadgen-….html) and
// returns the page's path; `exactly loadgen` calls it after Write.
func WriteDashboardNextTo(resultsPath string, results *Results) (string, error) {
	path := strings.TrimSuffix(resultsPath, filepath.Ext(resultsPath)) + ".html"
	if err := WriteDashboard(path, results); err != nil {
		return "", err
	}
	return path, nil
}

// WriteDashboardWith is WriteDashboard with explicit options.
func WriteDashboardWith(path string, options DashboardOptions, results ...*Results) error {
	var page bytes.Buffer
	if err := RenderDashboard(&page, options, results...); err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write dashboard: create directory: %w", err)
		}
	}
	temporary := path + ".tmp"
	if err := os.WriteFile(temporary, page.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write dashboard %s: %w", path, err)
	}
	if err := os.Rename(temporary, path); err != nil {
		_ = os.Remove(temporary)
		return fmt.Errorf("write dashboard %s: %w", path, err)
	}
	return nil
}

// RelativeLinks turns paths into slash-separated links relative to dir,
// for a page stored in dir; a path that cannot be made relative is linked
// as an absolute file URL.
func RelativeLinks(dir string, paths ...string) []string {
	links := make([]string, 0, len(paths))
	for _, path := range paths {
		relative, err := filepath.Rel(dir, path)
		if err != nil {
			absolute, absErr := filepath.Abs(path)
			if absErr != nil {
				continue
			}
			links = append(links, "file://"+filepath.ToSlash(absolute))
			continue
		}
		links = append(links, filepath.ToSlash(relative))
	}
	return links
}

// RenderDashboard writes the dashboard page for results to w. The page
// opens with the verdicts of the fault matrix and the cost tables (the
// overhead sections), then each results file is one column: its setup,
// throughput, latency spectra, throughput over time, checker verdicts.
// Several files are compared with the first: a difference only where
// both measured it over rounds and it clears the noise floor (see
// compareRounds).
func RenderDashboard(w io.Writer, options DashboardOptions, results ...*Results) error {
	if len(results) == 0 {
		return fmt.Errorf("render dashboard: no results")
	}
	for index, result := range results {
		if result == nil {
			return fmt.Errorf("render dashboard: results %d is nil", index+1)
		}
		for runIndex, run := range result.Runs {
			if run == nil {
				return fmt.Errorf("render dashboard: results %s: run %d is nil", result.RunID, runIndex)
			}
		}
	}
	page := buildPage(options, results)
	if err := dashboardTemplate.Execute(w, page); err != nil {
		return fmt.Errorf("render dashboard: %w", err)
	}
	return nil
}

// dashboardPage is everything the template shows. It is built once per
// rendering and only read by the template.
type dashboardPage struct {
	Title     string
	Generated string
	Baseline  string
	Files     []*fileView
	// Columns is how many results files sit side by side (CSS grid).
	Columns    int
	Throughput chartView
	Overhead   chartView
	RunRows    []runRow
	RunNotes   []runRow
	// BrokerRows are the runs' broker-side figures (runs with broker
	// metrics only; the section is left out without any).
	BrokerRows []brokerRow
	Comparison *comparisonView
	Latency    []latencyGroup
	TimeSeries []chartView
	Faults     []faultRow
	// FaultKinds summarizes Faults by run and kind.
	FaultKinds []faultSummaryRow
	Checks     []checkRow
	// Expectations are the fault matrix's verdicts (runs with an
	// Expectation only).
	Expectations []expectationRow
	Sweep        []chartView
	SweepNote    string
	// CheckColumns head the checker's count columns; CheckSpan is how
	// many columns a run that was not read back spans.
	CheckColumns []string
	CheckSpan    int
	// MaxListedEvents is how many events of a run the event list shows.
	MaxListedEvents int

	// VerdictMatrices are the fault matrices at a glance (mode × fault
	// plan), the page's first section (files with judged runs only).
	VerdictMatrices []verdictMatrix
	// OverheadTables are the overhead sections' tables, the page's first
	// section after the verdict matrices (results of interleaved rounds
	// only).
	OverheadTables []overheadTable
	// SecurityTables are the security workload's tables (results with a
	// security section only).
	SecurityTables []securityTable
	// WorkersTables are the runs whose producers ran in load workers,
	// merged and per worker.
	WorkersTables []workersTable
	// GroupProtocolsTables are the consumer group protocols' comparison
	// and the group-churn runs' rebalance pauses.
	GroupProtocolsTables []groupProtocolsTable
	// CommitCurves are the transactional slots' ratios against commit
	// interval, drawn from the overhead sections.
	CommitCurves []curveChart
	// Network is the cost against round-trip time, one view per file and
	// network sweep (overhead sections whose loads carry a network step
	// only).
	Network []networkView
	// SharedWarnings are the files' shared-machine warnings, each text
	// once, with the letters of the files it is about.
	SharedWarnings []sharedWarning
}

// latencyGroup is one latency kind, one chart per results file.
type latencyGroup struct {
	Title  string
	Charts []chartView
}

func buildPage(options DashboardOptions, results []*Results) *dashboardPage {
	files := make([]*fileView, len(results))
	for index, result := range results {
		files[index] = newFileView(index, result, options.Profiles[result.RunID])
	}
	labelFiles(files)
	names, nameIndex := runNames(files)
	page := &dashboardPage{Title: options.Title, Baseline: BaselineModeName, Files: files, Columns: min(len(files), 3),
		CheckColumns: checkColumns, CheckSpan: len(checkColumns) + 3, MaxListedEvents: maxMarkedEvents}
	if page.Title == "" {
		page.Title = defaultTitle(files)
	}
	if !options.Generated.IsZero() {
		page.Generated = options.Generated.UTC().Format(time.RFC3339)
	}
	page.SharedWarnings = sharedWarnings(files)
	page.VerdictMatrices = verdictMatrices(files)
	page.OverheadTables = overheadTables(files)
	page.SecurityTables = securityTables(files)
	page.GroupProtocolsTables = groupProtocolsTables(files)
	page.WorkersTables = workersTables(files)
	page.CommitCurves = curveCharts(files)
	page.Network = networkViews(files)
	page.Throughput, page.Overhead = throughputCharts(files, names)
	page.RunRows = runRows(files, names)
	page.RunNotes = runNotes(page.RunRows)
	page.BrokerRows = brokerRows(files, names)
	if len(files) > 1 {
		page.Comparison = compareFiles(files, names)
	}
	for _, kind := range []string{LatencyProduceAck, LatencyProduceAckUncorrected, LatencyEndToEnd, LatencyTransactionCommit} {
		group := latencyGroup{Title: latencyTitle(kind)}
		anyDrawn := false
		for _, file := range files {
			view, drawn := latencyChart(file, kind, names, nameIndex)
			anyDrawn = anyDrawn || drawn
			if !drawn {
				view.Note = "no " + kind + " latency recorded"
			}
			group.Charts = append(group.Charts, view)
		}
		if anyDrawn {
			page.Latency = append(page.Latency, group)
		}
	}
	for _, file := range files {
		page.TimeSeries = append(page.TimeSeries, timeSeriesChart(file, names, nameIndex, file.faultEvents()))
		page.Faults = append(page.Faults, faultRows(file)...)
		page.FaultKinds = append(page.FaultKinds, faultSummaryRows(file)...)
		page.Checks = append(page.Checks, checkRows(file)...)
		page.Expectations = append(page.Expectations, expectationRows(file)...)
	}
	if throughput, latency, ok := sweepCharts(files); ok {
		page.Sweep = []chartView{throughput, latency}
		page.SweepNote = sweepNote(files)
	}
	return page
}

func defaultTitle(files []*fileView) string {
	if len(files) == 1 {
		var workload struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(files[0].Results.Workload, &workload) == nil && workload.Name != "" {
			return fmt.Sprintf("exactly loadgen: workload %s against %s", workload.Name, files[0].Label)
		}
	}
	var parts []string
	for _, file := range files {
		parts = append(parts, file.Label)
	}
	return "exactly loadgen: " + strings.Join(parts, " vs ")
}

// sweepNote explains a sweep of one point per series.
func sweepNote(files []*fileView) string {
	for _, file := range files {
		for _, series := range sweepSeriesOf(file.Results) {
			if len(series.points) > 1 {
				return ""
			}
		}
	}
	return "one commit interval per results file: run the transactional-sweep workload (or --commit-interval 1ms,10ms,100ms,1s) for a curve"
}
