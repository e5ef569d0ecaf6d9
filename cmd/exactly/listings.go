package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/findmax"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// listWorkloads prints each shipped workload: its name, how long it is
// expected to take (the estimate the header of its run shows) and what it
// measures, wrapped to the width of the summary.
func listWorkloads(w io.Writer) error {
	names := loadgen.WorkloadNames()
	nameWidth := len("workload")
	for _, name := range names {
		nameWidth = max(nameWidth, len(name))
	}
	fmt.Fprintf(w, "%-*s  %-12s %s\n", nameWidth, "workload", "takes about", "what it measures (--workload NAME, or a YAML file of your own)")
	for _, name := range names {
		workload, err := loadgen.LoadWorkload(name)
		if err != nil {
			return err
		}
		expected, note, err := loadgen.EstimatedDuration(workload)
		if err != nil {
			return err
		}
		if name == "find-max" {
			note = fmt.Sprintf("--find-max searches up to %s per mode (the time shown is one plain run)", findmax.Defaults().Budget)
		}
		text := workload.Description
		if note != "" {
			text += "; " + note
		}
		prefix := fmt.Sprintf("%-*s  %-12s ", nameWidth, name, roundedDuration(expected))
		lines := wrap(text, report.SummaryWidth-len(prefix))
		fmt.Fprintln(w, prefix+lines[0])
		for _, line := range lines[1:] {
			fmt.Fprintln(w, strings.Repeat(" ", len(prefix))+line)
		}
	}
	return nil
}

// roundedDuration is d to the nearest ten seconds under ten minutes and
// to the nearest minute from there: "40s", "2m40s", "3m", "12m".
func roundedDuration(d time.Duration) string {
	if d >= 10*time.Minute {
		return fmt.Sprintf("%dm", int(d.Round(time.Minute).Minutes()))
	}
	d = d.Round(10 * time.Second)
	minutes, seconds := int(d.Minutes()), int(d.Seconds())%60
	switch {
	case minutes == 0:
		return fmt.Sprintf("%ds", seconds)
	case seconds == 0:
		return fmt.Sprintf("%dm", minutes)
	}
	return fmt.Sprintf("%dm%02ds", minutes, seconds)
}

// listPlans prints each shipped fault plan with its description, wrapped
// like listWorkloads.
func listPlans(w io.Writer) error {
	names := faults.PlanNames()
	nameWidth := len("fault plan")
	for _, name := range names {
		nameWidth = max(nameWidth, len(name))
	}
	fmt.Fprintf(w, "%-*s  %s\n", nameWidth, "fault plan", "what it does (--faults NAME,..., or a YAML file of your own)")
	for _, name := range names {
		plan, err := faults.LoadPlan(name)
		if err != nil {
			return err
		}
		prefix := fmt.Sprintf("%-*s  ", nameWidth, name)
		lines := wrap(plan.Description, report.SummaryWidth-len(prefix))
		fmt.Fprintln(w, prefix+lines[0])
		for _, line := range lines[1:] {
			fmt.Fprintln(w, strings.Repeat(" ", len(prefix))+line)
		}
	}
	return nil
}
