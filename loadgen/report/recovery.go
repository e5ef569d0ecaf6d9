package report

import "fmt"

// AckTimeline is a run's acknowledged records in fixed steps from the start
// of its load (LoadStartedAt), warm-up and flush included: the fine-grained
// series recovery times are read from (TimeSeries has one sample a second,
// too coarse for a broker that is back after 1.3 s). Added within schema
// version 1; omitted for runs without faults.
type AckTimeline struct {
	// StepMillis is the length of each step.
	StepMillis int `json:"step_ms"`
	// Acked[i] is the records acknowledged during step i.
	Acked []int64 `json:"acked"`
}

// Recovery is how a run's acknowledged throughput came back after each
// fault that happens at one moment (a broker killed or paused, a broker cut
// off, a producer frozen): from the fault until throughput was back to
// RecoveryLevel of what it was just before. Added within schema version 1.
type Recovery struct {
	// Continuous says the plan's faults hit a share of all requests for the
	// whole run (lost acks, resets): there is no moment to recover from, and
	// Faults is empty; the delayed records say what such a fault costs.
	Continuous bool `json:"continuous,omitempty"`
	// ConsumeSide says the plan's faults hit only the consume stage (a
	// crashed consumer, group churn): the producers' throughput does not
	// dip, and what the fault costs shows in end-to-end latency and, for
	// group churn, in the rebalance pauses.
	ConsumeSide bool `json:"consume_side,omitempty"`
	// Faults has one entry per measured fault, in time order.
	Faults []FaultRecovery `json:"faults,omitempty"`
	// WorstSeconds is the longest recovery of Faults (-1: one never
	// recovered before the load ended); 0 with no faults measured.
	WorstSeconds float64 `json:"worst_seconds"`
}

// RecoveryLevel is the share of the pre-fault throughput that counts as
// recovered.
const RecoveryLevel = 0.9

// FaultRecovery is the recovery after one fault.
type FaultRecovery struct {
	// Kind is the fault's kind (kill, pause, cut, zombie-producer, …) and
	// AtSeconds when it fired, on the run's time axis.
	Kind      string  `json:"kind"`
	AtSeconds float64 `json:"at_seconds"`
	// BeforeRecordsPerSecond is the acknowledged throughput over the
	// window just before the fault; LowestRecordsPerSecond the lowest
	// window after it.
	BeforeRecordsPerSecond float64 `json:"before_records_per_second"`
	LowestRecordsPerSecond float64 `json:"lowest_records_per_second"`
	// Seconds is the time from the fault until a window's throughput was
	// back to RecoveryLevel of BeforeRecordsPerSecond: 0 when it never
	// dipped below that, -1 when it was not back by the end of the load.
	Seconds float64 `json:"seconds"`
}

// Text renders a recovery for tables: "1.3 s", "not back", "continuous"
// or "-".
func (r *Recovery) Text() string {
	switch {
	case r == nil:
		return "-"
	case r.Continuous:
		return "continuous"
	case r.ConsumeSide:
		return "consume side"
	case len(r.Faults) == 0:
		return "-"
	case r.WorstSeconds < 0:
		return "not back"
	}
	return fmt.Sprintf("%.1f s", r.WorstSeconds)
}

// Delayed counts a run's measured records whose latency passed
// ThresholdMillis: the records a fault held up. Added within schema
// version 1.
type Delayed struct {
	ThresholdMillis float64 `json:"threshold_ms"`
	// ProduceAck counts acknowledgements later than the threshold,
	// EndToEnd records read by the live consumers later than it (both
	// counted from the scheduled send time at a fixed rate).
	ProduceAck int64 `json:"produce_ack"`
	EndToEnd   int64 `json:"end_to_end"`
}

// DelayedThresholdMillis is the latency past which a record counts as
// delayed.
const DelayedThresholdMillis = 1000
