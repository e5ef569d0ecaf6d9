// Package worker is the protocol between the load generator's runner and
// its worker processes: the load workers that run the load's producers
// (--workers), on this machine or on others through a command transport
// (ssh, kubectl exec), and the processes a client fault freezes or kills
// (a transactional producer for zombie-producer, a consume worker for
// consumer-crash).
//
// The runner starts a worker (Start, StartWith) with a Launch: the
// exactly binary, or the operator's command template. The worker (Serve)
// says hello first, a frame naming the Protocol it speaks; the runner
// writes a Handshake line on its stdin (the Spec and the SASL password),
// then command lines (a crash point to kill itself at); closing stdin
// asks it to finish. Each side refuses another protocol in one line. The
// worker's stdout is a stream of frames (frame.go): JSON Events for what
// is rare, compressed record batches (RecordStream, ApplyRecords) of its
// producers' outcomes, and Summaries of its measurements with sparse
// HdrHistograms, which the runner merges. A Slot keeps one worker
// position filled: it replaces a worker killed on purpose and reports
// any other exit.
//
// What a worker runs is the load generator's: package loadgen gives Serve
// one Role function per role (its producers, its consume stages) and
// applies the reports to its ledger, measurements and poll trackers.
package worker

import (
	"bufio"
	"io"
	"sync/atomic"
	"time"

	"github.com/exactly-eos/exactly/loadgen/clientsec"
)

// Roles: what a worker subprocess runs.
const (
	// RoleProducer is a transactional load producer (zombie-producer).
	RoleProducer = "producer"
	// RolePipeline is a consume-transform-produce worker (consumer-crash).
	RolePipeline = "pipeline"
	// RoleDBStage is a consume worker writing to the application
	// database (consumer-crash).
	RoleDBStage = "db-stage"
	// RoleConsumer is a live consumer (--workers): it reads Assigned
	// partitions of Topic from the start, measuring end-to-end latency,
	// and reports its polls and summaries.
	RoleConsumer = "consumer"
	// RoleLoad runs a share of the workload's load producers (--workers):
	// Producers, each with its budget and rate, paced from Start. It
	// streams record batches and summaries, not an event per record.
	RoleLoad = "load"
)

// Commands the runner writes to a worker's stdin, one per line.
const (
	// CommandCrashAfterCommit: kill yourself right after your next
	// database commit, before the next poll.
	CommandCrashAfterCommit = "crash-after-commit"
	// CommandCrashInTransaction: kill yourself inside your next database
	// transaction, before it commits.
	CommandCrashInTransaction = "crash-in-transaction"
)

// Crash points of a database stage worker: it kills itself (SIGKILL)
// there when the runner asked (see Commands).
const (
	CrashNone = iota
	// CrashAfterCommit: the database transaction committed, the next
	// poll (and the Kafka offset commit) not begun.
	CrashAfterCommit
	// CrashInTransaction: output rows inserted, not committed.
	CrashInTransaction
)

// Spec is what a worker is told, in the runner's handshake (JSON).
// Durations are nanoseconds; times are absolute (the runner's clock).
type Spec struct {
	Role string `json:"role"`
	// Mode is the run's delivery mode (producer and database stage
	// roles), looked up in the worker's own mode registry.
	Mode      string   `json:"mode,omitempty"`
	Bootstrap []string `json:"bootstrap"`
	// Security is how the worker's clients connect; its SASL password
	// is not in the spec but in the handshake (Password).
	Security clientsec.Config `json:"security,omitzero"`
	// Password is the handshake's SASL password, set by Serve.
	Password           string        `json:"-"`
	FastRetries        bool          `json:"fast_retries"`
	ClientID           string        `json:"client_id"`
	TransactionalID    string        `json:"transactional_id"`
	TransactionTimeout time.Duration `json:"transaction_timeout"`
	// Producer role.
	Topic           string        `json:"topic,omitempty"`
	RunID           uint64        `json:"run_id,omitempty"`
	Producer        uint32        `json:"producer,omitempty"`
	RecordSize      int           `json:"record_size,omitempty"`
	KeyDistribution string        `json:"key_distribution,omitempty"`
	KeySpace        int           `json:"key_space,omitempty"`
	Rate            float64       `json:"rate,omitempty"`
	Budget          uint64        `json:"budget,omitempty"`
	Deadline        time.Time     `json:"deadline"`
	CommitInterval  time.Duration `json:"commit_interval,omitempty"`
	CommitRecords   int           `json:"commit_records,omitempty"`
	// Load role (also Mode, Topic, RunID, RecordSize, keys, Deadline and
	// the commit settings): the producers it runs, their budgets (one
	// per producer) and rate each, the transactional id of each (a
	// transactional mode), the abort share, unique keys, the start of
	// pacing and the end of the warm-up.
	Producers        []uint32      `json:"producers,omitempty"`
	Budgets          []uint64      `json:"budgets,omitempty"`
	TransactionalIDs []string      `json:"transactional_ids,omitempty"`
	AbortShare       float64       `json:"abort_share,omitempty"`
	UniqueKeys       bool          `json:"unique_keys,omitempty"`
	Drain            time.Duration `json:"drain,omitempty"`
	Start            time.Time     `json:"start,omitzero"`
	WarmupEnd        time.Time     `json:"warmup_end,omitzero"`
	// DuplicateOnce, a test's fault: the worker writes its first
	// acknowledged record a second time, as a plain copy, so the checker
	// must report one duplicate.
	DuplicateOnce bool `json:"duplicate_once,omitempty"`
	// Consumer role (also Topic and WarmupEnd): its partitions and
	// whether it reads committed records only.
	Assigned      []int32 `json:"assigned,omitempty"`
	ReadCommitted bool    `json:"read_committed,omitempty"`
	// Pipeline role.
	Group string `json:"group,omitempty"`
	// GroupProtocol is the group consumer's protocol (Kafka's
	// group.protocol: "classic" or "", or "consumer"), pipeline and
	// database stage roles.
	GroupProtocol string `json:"group_protocol,omitempty"`
	InstanceID    string `json:"instance_id,omitempty"`
	Input         string `json:"input,omitempty"`
	Output        string `json:"output,omitempty"`
	// Database stage role (also Group, Input).
	Database string `json:"database,omitempty"` // where the worker connects: an SQLite path or a postgres:// URL
	Run      string `json:"run,omitempty"`
	Worker   string `json:"worker,omitempty"`
	Window   int64  `json:"window,omitempty"`
}

// CrashPoint is the crash point the runner asked a worker for (a Crash
// constant); the worker's command reader sets it, its stage reads it.
type CrashPoint struct{ point atomic.Int32 }

// Load returns the point asked for, CrashNone if none.
func (c *CrashPoint) Load() int { return int(c.point.Load()) }

// readCommands reads the runner's command lines until stdin ends, noting
// a requested crash point in crash.
func readCommands(stdin io.Reader, crash *CrashPoint) {
	scanner := bufio.NewScanner(stdin)
	for scanner.Scan() {
		switch scanner.Text() {
		case CommandCrashAfterCommit:
			crash.point.Store(CrashAfterCommit)
		case CommandCrashInTransaction:
			crash.point.Store(CrashInTransaction)
		}
	}
}
