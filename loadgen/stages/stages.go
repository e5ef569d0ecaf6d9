// Package stages holds the load generator's consume stages: the workers,
// in one consumer group, that read the topic the load's producers write.
//
//	transact.go  consume-transform-produce in one Kafka transaction per
//	             poll (GroupTransactSession), chained under
//	             group-churn
//	database.go  the database stages (the application's road): a
//	             deduplicating consumer, or output rows and offsets in one
//	             database transaction with a seek to the stored offsets on
//	             every assignment (the application database is appdb's)
//	relay.go     the at-least-once relay run under group-churn: produce
//	             the poll, then commit its offsets
//	restart.go   a transact worker replaces its session when a
//	             transaction end got no definitive answer from the
//	             cluster (its coordinator's broker killed)
//
// A Group runs a stage's workers and follows their assignment (which the
// load waits to settle) and progress (which the drain waits for); a
// Departure tells a group-churn worker when to leave. Which stage a mode
// runs is its modes.Spec's; the runner (package loadgen) builds each
// worker's spec from its run plan, in process or, under consumer-crash,
// in a worker subprocess (package worker).
package stages

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Metrics is where a stage's workers record what they measured: the run's
// measurements in process, a worker subprocess's own otherwise. Its
// methods are safe for concurrent use.
type Metrics interface {
	// RecordError counts a client or database error.
	RecordError(err error)
	// RecordEndToEnd records a record's latency from its send time.
	RecordEndToEnd(sendTime, now time.Time)
	// RecordTransactionEnd records a transaction's end and how long it
	// took.
	RecordTransactionEnd(committed, aborted bool, took time.Duration)
	// UnsupportedMode says why the target cannot run the mode, or "".
	UnsupportedMode() string
	// Logger is the stage clients' logger (it notes unsupported features).
	Logger() kgo.Logger
}

// Stats counts what the application-level machinery did in one run:
// recoveries of single writers, duplicates a dedup consumer dropped,
// offset conflicts of the stored-offsets stage. Every goroutine of the
// run may add (atomics).
type Stats struct {
	Recoveries, FoundWritten, Resent, WriterCopies atomic.Int64
	Dropped, Conflicts, DatabaseCommits, Seeks     atomic.Int64
	// Processed, when set, follows how far the database stage's
	// committed transactions reached in the input (in-process workers
	// only; the drain waits on it).
	Processed *Positions
}

// retryBackoff spaces the retries of a database transaction, as the
// clients' retries are spaced under faults.
func retryBackoff(tries int) time.Duration {
	return min(10*time.Millisecond<<min(tries, 5), 250*time.Millisecond)
}
