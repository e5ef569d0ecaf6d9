package report

import "time"

// Statuses a run of the fault matrix may have besides pass, fail,
// unsupported and error.
const (
	// StatusUntestable: the run met every bound, but nothing shows the fault
	// acted (no fault fired, or the sign the fault bites, such as
	// duplicates without idempotence, did not appear): not a pass.
	StatusUntestable = "untestable"
	// StatusNotApplicable: the fault plan cannot run against this target
	// (process faults need brokers the load generator launched).
	StatusNotApplicable = "not-applicable"
)

// Expectation is what the fault matrix expected of one run (a delivery mode
// under a fault plan), what the run showed, and the verdict.
type Expectation struct {
	// Expected states the bounds in words, e.g. "lost = 0; duplicated may
	// be > 0 (> 0 shows the fault bit)".
	Expected string `json:"expected"`
	// Observed states the counts the bounds were checked against.
	Observed string `json:"observed"`
	// Verdict is the run's status: pass, fail, untestable, unsupported,
	// not-applicable or error.
	Verdict string `json:"verdict"`
	// Why explains a verdict other than pass.
	Why string `json:"why,omitempty"`
	// Offenders names some records that broke a bound, e.g.
	// "duplicated: producer 0 seq 1234 at partition 2 offsets 45, 47".
	Offenders []string `json:"offenders,omitempty"`
}

// FaultRunInfo is the part of a Run that says which faults it ran under;
// Run embeds it.
type FaultRunInfo struct {
	// FaultPlan names the fault plan of the run ("none": no faults).
	FaultPlan string `json:"fault_plan,omitempty"`
	// LoadStartedAt is the origin of time_series' and fault_events'
	// elapsed_seconds: an event's wall-clock time is LoadStartedAt plus its
	// elapsed_seconds.
	LoadStartedAt time.Time `json:"load_started_at,omitzero"`
	// FaultEvents lists every fault fired during the run, in order.
	FaultEvents []FaultEvent `json:"fault_events,omitempty"`
	// Expectation is the matrix's verdict on the run.
	Expectation *Expectation `json:"expectation,omitempty"`
	// PathRTTMs, under a plan that slows the network between the clients
	// and the brokers, is the median round trip in milliseconds of
	// ApiVersions requests through the fault proxy, measured before the
	// load (0: not measured). Added within schema version 1.
	PathRTTMs float64 `json:"path_rtt_ms,omitempty"`
}
