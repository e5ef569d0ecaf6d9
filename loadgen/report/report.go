package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// SchemaVersion is the version of the results file layout in the
// package doc.
const SchemaVersion = 1

// Run statuses.
const (
	// StatusPass: every check met its expectation.
	StatusPass = "pass"
	// StatusFail: a check found a violation the mode must not show.
	StatusFail = "fail"
	// StatusUnsupported: the target does not implement what the mode needs.
	StatusUnsupported = "unsupported"
	// StatusError: the run could not complete (target unreachable, timeout).
	StatusError = "error"
)

// Results is the whole results file.
type Results struct {
	SchemaVersion int             `json:"schema_version"`
	Tool          string          `json:"tool"`
	RunID         string          `json:"run_id"`
	StartedAt     time.Time       `json:"started_at"`
	FinishedAt    time.Time       `json:"finished_at"`
	Target        Target          `json:"target"`
	Machine       Machine         `json:"machine"`
	Workload      json.RawMessage `json:"workload"`
	Passed        bool            `json:"passed"`
	Runs          []*Run          `json:"runs"`
	// FindMax is the sustainable-rate search of --find-max ([WriteFindMax]);
	// added in v1, omitted when absent.
	FindMax *FindMax `json:"find_max,omitempty"`
	// Overhead holds the ratios of a run of interleaved rounds (the
	// overhead workload; added within schema version 1, omitted otherwise).
	Overhead *Overhead `json:"overhead,omitempty"`
	// Security holds the security workload's tables ([WriteSecurity]; added
	// within schema version 1, omitted otherwise).
	Security *Security `json:"security,omitempty"`
	// GroupProtocols compares the consumer group protocols over
	// interleaved rounds ([WriteGroupProtocols]; added within schema version
	// 1, omitted otherwise).
	GroupProtocols *GroupProtocolComparison `json:"group_protocols,omitempty"`
}

// Target describes the cluster a run spoke to.
type Target struct {
	Kind        string   `json:"kind"`
	Bootstrap   []string `json:"bootstrap"`
	Description string   `json:"description"`
	// SharesMachine says whether the broker runs on the load generator's
	// machine, and so shares its cores (embedded, kfake, a loopback
	// bootstrap); nil when not known (a remote address, or a file written
	// before the field was added within schema version 1). Sharing says
	// why in words.
	SharesMachine *bool  `json:"shares_machine,omitempty"`
	Sharing       string `json:"sharing,omitempty"`
	// BrokerSettings are the broker settings that shape the measurements
	// (log.fsync, Kafka's log.flush.interval.*, …) as the target's first
	// broker described them (DescribeConfigs), "unknown" for those it did
	// not describe (added within schema version 1).
	BrokerSettings map[string]string `json:"broker_settings,omitempty"`
}

// Machine describes where the load generator ran. CPUModel, GOMAXPROCS and
// Kernel were added within schema version 1.
type Machine struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	NumCPU     int    `json:"num_cpu"`
	GoVersion  string `json:"go_version"`
	Hostname   string `json:"hostname"`
	CPUModel   string `json:"cpu_model,omitempty"`
	GOMAXPROCS int    `json:"gomaxprocs,omitempty"`
	Kernel     string `json:"kernel,omitempty"`
}

// CurrentMachine describes this machine.
func CurrentMachine() Machine {
	hostname, err := os.Hostname()
	if err != nil {
		hostname = "unknown"
	}
	return Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), Hostname: hostname,
		CPUModel: cpuModel(), GOMAXPROCS: runtime.GOMAXPROCS(0), Kernel: kernelRelease()}
}

// Run is the result of one delivery mode.
type Run struct {
	Name            string                `json:"name"`
	Mode            string                `json:"mode"`
	Status          string                `json:"status"`
	Reason          string                `json:"reason,omitempty"`
	ClientSettings  map[string]string     `json:"client_settings"`
	StartedAt       time.Time             `json:"started_at"`
	FinishedAt      time.Time             `json:"finished_at"`
	MeasuredSeconds float64               `json:"measured_seconds"`
	Producers       verify.LedgerTotals   `json:"producers"`
	Transactions    Transactions          `json:"transactions"`
	Throughput      Throughput            `json:"throughput"`
	Latency         map[string]*Histogram `json:"latency"`
	// LatencyOrigin says what produce_ack and end_to_end count from:
	// LatencyFromSchedule at a fixed rate, LatencyFromCreation unpaced
	// (added within schema version 1; absent in older files, whose
	// latencies all count from the creation).
	LatencyOrigin string           `json:"latency_origin,omitempty"`
	TimeSeries    []Sample         `json:"time_series"`
	ErrorsByCode  map[string]int64 `json:"errors_by_code"`
	Retries       int64            `json:"retries"`
	FaultsFired   int64            `json:"faults_fired"`
	Checks        []Check          `json:"checks"`
	// FaultRunInfo: the fault plan, the fired faults and the expectation
	// verdict (fields added within schema version 1, omitted when empty).
	FaultRunInfo
	// Application is what the application-level machinery did (added
	// within schema version 1; omitted for the broker-level modes).
	Application *ApplicationRun `json:"application,omitempty"`
	// ShareGroup is the share-group mode's verdict and figures (added
	// within schema version 1; omitted for the other modes).
	ShareGroup *ShareGroupRun `json:"share_group,omitempty"`
	// Round and Slot place a run of interleaved rounds (the overhead
	// workload): its round, from 1, and its slot in the round (added
	// within schema version 1; omitted for other runs).
	Round int    `json:"round,omitempty"`
	Slot  string `json:"slot,omitempty"`
	// BrokerMetrics is the broker's own view of the run, from its
	// /metrics ([BrokerMetrics]; added within schema version 1, omitted
	// when no metrics address was known).
	BrokerMetrics *BrokerMetrics `json:"broker_metrics,omitempty"`
	// GroupProtocol is the consumer group protocol of the run's group
	// consumers ("classic" or "consumer"; omitted for a run without
	// any), RebalancePauses the pauses of a group-churn run
	// ([RebalancePauses]; both added within schema version 1).
	GroupProtocol   string           `json:"group_protocol,omitempty"`
	RebalancePauses *RebalancePauses `json:"rebalance_pauses,omitempty"`
	// Workers is each load worker's part of a run whose producers ran in
	// worker processes (--workers; added within schema version 1).
	Workers []WorkerShare `json:"workers,omitempty"`
	// AckTimeline, Recovery and Delayed say what a run's faults cost
	// beyond its totals: acknowledged records in 100 ms steps, how long
	// throughput took to come back after each fault, and how many
	// records were held past a second ([Recovery]; added within schema
	// version 1, omitted for runs without faults).
	AckTimeline *AckTimeline `json:"ack_timeline,omitempty"`
	Recovery    *Recovery    `json:"recovery,omitempty"`
	Delayed     *Delayed     `json:"delayed,omitempty"`
}

// Latency histogram names. produce_ack and end_to_end count from the
// record's send time as its Run's LatencyOrigin says;
// produce_ack_uncorrected (fixed-rate runs only, added within schema
// version 1) counts from when the producer handed the record to the
// client, however late that was against the schedule.
const (
	LatencyProduceAck            = "produce_ack"
	LatencyProduceAckUncorrected = "produce_ack_uncorrected"
	LatencyEndToEnd              = "end_to_end"
	LatencyTransactionCommit     = "transaction_commit"
)

// Latency origins (Run.LatencyOrigin).
const (
	// LatencyFromSchedule: at a fixed rate, latencies count from each
	// record's scheduled send time, so time the producer spent behind its
	// schedule (a stalled broker) is counted, not omitted.
	LatencyFromSchedule = "scheduled"
	// LatencyFromCreation: unpaced (maximum-rate) runs have no schedule;
	// latencies count from when the producer created the record.
	LatencyFromCreation = "created"
)

// LatencyOriginText says in plain words what a run's produce_ack and
// end_to_end latencies count from.
func LatencyOriginText(origin string) string {
	if origin == LatencyFromSchedule {
		return "latency from the scheduled send time (fixed rate: time spent behind schedule counts)"
	}
	return "latency from when the record was created (unpaced: no schedule to count from)"
}

// Transactions counts how transactions ended.
type Transactions struct {
	Committed int64 `json:"committed"`
	Aborted   int64 `json:"aborted"`
	Failed    int64 `json:"failed"`
}

// Throughput is measured over the run's measured seconds.
type Throughput struct {
	RecordsPerSecond   float64 `json:"records_per_second"`
	MegabytesPerSecond float64 `json:"megabytes_per_second"`
	RatioToBaseline    float64 `json:"ratio_to_baseline"`
}

// Sample is one second of a run.
type Sample struct {
	ElapsedSeconds     float64 `json:"elapsed_seconds"`
	RecordsPerSecond   float64 `json:"records_per_second"`
	MegabytesPerSecond float64 `json:"megabytes_per_second"`
	P99Milliseconds    float64 `json:"p99_ms"`
}

// Check is one read of a run's topic and the checker's verdict: a
// read-back (Reader read_committed or read_uncommitted), the rows of an
// application table (table), or the polls of the run's consumers of one
// kind (polls; Consumers names them), whose counts are the records polled
// (read), the distinct offsets polled (unique), inconsistent offsets, poll
// skips and non-monotonic polls.
type Check struct {
	Reader string `json:"reader"`
	Topic  string `json:"topic"`
	// Consumers names the consumers of a polls check: pipeline workers,
	// database workers, relay workers or live consumers (added within
	// schema version 1).
	Consumers string `json:"consumers,omitempty"`
	// Complete: the read reached the end of every partition; for a polls
	// check, the read-back its skips were judged against did.
	Complete   bool          `json:"complete"`
	Counts     verify.Counts `json:"counts"`
	Violations []string      `json:"violations"`
}

// PollReader is the Reader of a check of consumers' polls.
const PollReader = "polls"

// Write stores results as indented JSON in dir (created if missing) and
// returns the file's path.
func Write(dir string, results *Results) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create results directory: %w", err)
	}
	stamp := strings.NewReplacer(":", "", "-", "").Replace(results.StartedAt.UTC().Format("2006-01-02T15:04:05"))
	path := filepath.Join(dir, fmt.Sprintf("loadgen-%s-%s.json", stamp, results.RunID))
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	return path, nil
}

// Read loads a results file and checks its schema version.
func Read(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var results Results
	if err := json.Unmarshal(data, &results); err != nil {
		return nil, fmt.Errorf("decode results %s: %w", path, err)
	}
	if results.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("results %s: schema_version %d, this build reads %d", path, results.SchemaVersion, SchemaVersion)
	}
	return &results, nil
}

// WorkerShare is one load worker's part of a run (--workers): the
// producers it ran, what they measured, and whether it kept up.
type WorkerShare struct {
	Index   int    `json:"index"`
	Host    string `json:"host,omitempty"`
	Command string `json:"command"`
	// Producers are the load producers it ran; TargetRecordsPerSecond
	// their share of the workload's rate (0: unpaced).
	Producers              []uint32 `json:"producers"`
	TargetRecordsPerSecond float64  `json:"target_records_per_second,omitempty"`
	// Acknowledged counts its acknowledged records (warm-up included),
	// Measured those sent after the warm-up.
	Acknowledged       int64      `json:"acknowledged"`
	Measured           int64      `json:"measured"`
	Errors             int64      `json:"errors,omitempty"`
	RecordsPerSecond   float64    `json:"records_per_second"`
	MegabytesPerSecond float64    `json:"megabytes_per_second"`
	ProduceAck         *Histogram `json:"produce_ack,omitempty"`
	// CPUSeconds is the worker process's CPU time, StreamCPUShare the
	// part of it its reporting thread took (taking, encoding, compressing
	// and writing its reports; the few nanoseconds a record costs the
	// producer callbacks that log it are not in it), StreamBytes what the
	// reports took on the wire.
	CPUSeconds     float64 `json:"cpu_seconds,omitempty"`
	StreamCPUShare float64 `json:"stream_cpu_share,omitempty"`
	StreamBytes    int64   `json:"stream_bytes,omitempty"`
	// Status is ok, behind (a paced worker below 95% of its share of
	// the rate: the client was the limit) or died; Note says more.
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
}

// Statuses of a WorkerShare.
const (
	WorkerOK     = "ok"
	WorkerBehind = "behind"
	WorkerDied   = "died"
)
