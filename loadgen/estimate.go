package loadgen

import (
	"fmt"
	"time"

	"github.com/exactly-eos/exactly/loadgen/progress"
)

// EstimatedDuration is how long workload is expected to take when run as
// it is, as the header of its run says (each cell's warm-up and duration
// plus the usual time to set up, drain and check, every cell counted as
// applicable), and what the figure leaves out ("" when nothing): a
// sustainable-rate search first, or consume passes.
func EstimatedDuration(workload Workload) (time.Duration, string, error) {
	planner := planRuns
	switch {
	case workload.Overhead != nil:
		planner = planSuiteRuns
	case workload.GroupProtocols != nil:
		planner = planGroupProtocolRuns
	}
	plans, err := planner(workload, 0, nil)
	if err != nil {
		return 0, "", fmt.Errorf("workload %s: %w", workload.Name, err)
	}
	cells := make([]progress.Cell, len(plans))
	for i, plan := range plans {
		cells[i] = progress.Cell{Index: i + 1, Name: plan.name, Load: time.Duration(plan.workload.Warmup + plan.workload.Duration),
			Drain: time.Duration(plan.workload.Drain)}
	}
	expected := progress.ExpectedDuration(cells)
	const search = "plus a search of at-least-once's sustainable rate (--sustainable-rate skips it)"
	switch {
	case workload.Security != nil:
		rounds := max(workload.Security.Rounds, 1)
		runs := len(workload.Security.Protocols) * rounds
		if rounds >= 2 {
			runs += rounds // the reference protocol's A/A slot
		}
		expected *= time.Duration(runs)
		if workload.Security.ConsumeBytes > 0 {
			return expected, "plus the consume passes", nil
		}
	case workload.EqualLoad != nil:
		return expected * time.Duration(len(workload.EqualLoad.Fractions)), search, nil
	case workload.Overhead.NeedsSustainableRate():
		return expected, search, nil
	}
	return expected, "", nil
}
