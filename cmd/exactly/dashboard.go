package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/exactly-eos/exactly/loadgen/report"
)

func runDashboard(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dashboard", `Renders one or more loadgen results JSON files into one self-contained HTML page
(inline CSS and SVG charts, nothing fetched at view time): throughput and the ratio to the
at-least-once baseline per delivery mode, latency percentile spectra, throughput over time,
the checker's lost/duplicated/reordered/aborted-read counts with violations in red, the
transactional commit-interval sweep, and each run's target, machine, workload and client
settings. A file of a fault matrix (the quick and standard workloads) opens with its
verdicts, mode by fault plan, then the cost tables of a run of rounds (the overhead
workload, --rounds N).

Several files (two builds, or our broker, kfake and a real Kafka) are compared with the
first. A difference is shown only where both files measured it over rounds: the ratio of
the medians with a bootstrap 95% interval, each file's rounds resampled on their own,
coloured better or worse only when the whole interval lies outside the noise floor (the
wider of the two files' A/A bands), else "no difference (within noise)". Runs measured
once are shown side by side as "one run each: no interval", never coloured: two runs of
the same build on the same machine have differed by ×1.87.

Profiles whose names carry a file's run id, next to the JSON or the page (or under
profiles/), are linked.

  exactly dashboard results/a.json [results/b.json ...] -o results/dashboard.html`, stderr)
	output := fs.String("o", "results/dashboard.html", "output HTML file")
	title := fs.String("title", "", "page title (default: the targets compared)")
	inputs, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(inputs) == 0 {
		return usageError("no results files given (exactly dashboard results/a.json [results/b.json ...])")
	}
	results := make([]*report.Results, 0, len(inputs))
	outputDir := filepath.Dir(*output)
	options := report.DashboardOptions{Title: *title, Profiles: map[string][]string{}}
	for _, input := range inputs {
		loaded, err := report.LoadResults(input)
		if err != nil {
			return err
		}
		results = append(results, loaded)
		inputDir := filepath.Dir(input)
		profiles := report.FindProfiles(loaded.RunID, inputDir, filepath.Join(inputDir, "profiles"), outputDir, filepath.Join(outputDir, "profiles"))
		options.Profiles[loaded.RunID] = append(options.Profiles[loaded.RunID], report.RelativeLinks(outputDir, profiles...)...)
	}
	options.Generated = time.Now()
	if err := report.WriteDashboardWith(*output, options, results...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dashboard: %s\n", *output)
	return nil
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments (`a.json -o out.html b.json`), which the flag
// package alone stops at, and returns the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := parseFlagsOnly(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}
