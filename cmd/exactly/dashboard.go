package main

import (
	"fmt"
	"io"
)

func runDashboard(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dashboard", `Renders one or more loadgen results JSON files into one self-contained HTML page:
throughput and overhead per delivery mode (acks, enable.idempotence, transactional.id),
latency percentiles, faults, and the checker's lost/duplicated/reordered counts,
side by side with ratios.

  exactly dashboard results/a.json [results/b.json ...] -o results/dashboard.html`, stderr)
	fs.String("o", "results/dashboard.html", "output HTML file")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	return fmt.Errorf("%w: dashboards arrive with the dashboard issue; results JSON files are readable as they are", errNotYetAvailable)
}
