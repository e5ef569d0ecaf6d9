package report

import "strings"

// FaultEvent is one fault fired during a run, placed on the run's time
// axis. It is the form the dashboard marks on the throughput-over-time
// chart; the load generator's fault log (loadgen/faults.Event) converts to
// it with ElapsedSeconds measured from the same start as Sample.
type FaultEvent struct {
	// ElapsedSeconds is when the fault fired, since the run's start (the
	// origin of TimeSeries' elapsed_seconds).
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Kind is what the fault did: drop-request, drop-response, kill, …
	Kind string `json:"kind"`
	// Broker is the upstream address or the process the fault hit.
	Broker string `json:"broker,omitempty"`
	// Detail says more (the request, the rule), for the events table.
	Detail string `json:"detail,omitempty"`
}

// maxMarkedEvents bounds the fault markers drawn per run and the event
// rows listed per run: a proxy rule can fire thousands of times.
const maxMarkedEvents = 60

// runFaultEvents returns the fault events recorded for run.
func runFaultEvents(run *Run) []FaultEvent {
	return run.FaultEvents
}

// thinEvents keeps at most limit events for drawing: one per kind per
// tenth of a second, then the first limit of those; dropped says how many
// were left out.
func thinEvents(events []FaultEvent, limit int) (kept []FaultEvent, dropped int) {
	type slot struct {
		kind  string
		tenth int64
	}
	seen := map[slot]bool{}
	for _, event := range events {
		key := slot{event.Kind, int64(event.ElapsedSeconds * 10)}
		if seen[key] || len(kept) == limit {
			dropped++
			continue
		}
		seen[key] = true
		kept = append(kept, event)
	}
	return kept, dropped
}

// countBound says whether a checker count may be positive in a run.
//
// A run of the fault matrix carries its Expectation, whose Expected text
// states each bound as "lost = 0" or "lost any" (likewise "dup" and
// "reord"; loadgen's expectation.describe). A count the expectation allows
// ("any") is not a violation: at-least-once duplicates under lost acks are
// what the fault should show. Without an expectation every count in
// verify.Counts.Violations must be zero.
func countBound(run *Run, name string) (mayBePositive bool) {
	if run.Expectation == nil {
		return false
	}
	return strings.Contains(run.Expectation.Expected, name+" any")
}
