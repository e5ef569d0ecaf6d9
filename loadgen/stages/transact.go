package stages

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/pollwatch"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// SessionSpec is one worker's session settings, in process or in a
// worker subprocess.
type SessionSpec struct {
	Options            []kgo.Opt // seed brokers and fault settings
	ClientID           string
	TransactionalID    string
	TransactionTimeout time.Duration
	Group, Input       string
	// InstanceID, when set, makes the worker a static group member, so a
	// replacement of a killed worker takes its place without waiting for
	// its session to time out.
	InstanceID string
	// ShortSession sets a ShortSessionTimeout session (classic protocol;
	// on the consumer protocol the broker's
	// group.consumer.session.timeout.ms rules), so the group notices a
	// killed worker quickly.
	ShortSession bool
	// OnAssignment, when set, is told how many input partitions the
	// worker holds after each change.
	OnAssignment func(count int)
}

// ShortSessionTimeout and ShortHeartbeatInterval are the group session of
// a ShortSession worker (the consumer-crash fault's subprocesses).
const (
	ShortSessionTimeout    = 6 * time.Second
	ShortHeartbeatInterval = 500 * time.Millisecond
)

// NewSession creates one worker's GroupTransactSession.
func NewSession(spec SessionSpec, metrics Metrics) (*kgo.GroupTransactSession, error) {
	options := append(append([]kgo.Opt(nil), spec.Options...),
		kgo.ClientID(spec.ClientID),
		kgo.TransactionalID(spec.TransactionalID),
		kgo.TransactionTimeout(spec.TransactionTimeout),
		kgo.ConsumerGroup(spec.Group),
		kgo.ConsumeTopics(spec.Input),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.WithLogger(metrics.Logger()),
	)
	options = append(options, AssignmentOptions(spec.Input, false, spec.OnAssignment)...)
	if spec.InstanceID != "" {
		options = append(options, kgo.InstanceID(spec.InstanceID))
	}
	if spec.ShortSession {
		options = append(options, kgo.SessionTimeout(ShortSessionTimeout), kgo.HeartbeatInterval(ShortHeartbeatInterval))
	}
	return kgo.NewGroupTransactSession(options...)
}

// Transact runs one consume-transform-produce worker until ctx ends or
// its session fails, or, under group-churn (leave not nil), until it ends
// a transaction with an abort to leave the group.
func (p *Group) Transact(ctx context.Context, session *kgo.GroupTransactSession, output Output, metrics Metrics, leave *Departure) error {
	// Close leaves the group; transform ends every transaction it begins.
	defer session.Close()
	polls := pollwatch.Of(session.Client()) // the poll checker's (package pollwatch)
	loop := pollLoop{
		poll:             session.PollFetches,
		checkUnsupported: true,
		process: func(ctx context.Context, fetches kgo.Fetches, commit bool) (bool, error) {
			return p.transform(ctx, session, fetches, output, metrics, commit)
		},
		ended: polls.Ended, // an End that did not commit rewinds to the committed offsets
	}
	return loop.run(ctx, polls, metrics, leave)
}

// Output is where a pipeline worker writes: the topic, and the stage
// number its records carry in their header (1; stage k of a chain under
// group-churn).
type Output struct {
	Topic string
	Stage uint8
}

// transform writes one poll's records in one transaction and ends it:
// with a commit of the poll's offsets, or, when commit is false, with an
// abort (a worker leaving under group-churn). A transaction aborted
// because of a rebalance is not an error: the records are consumed again
// by their new owner. It reports whether the transaction committed.
func (p *Group) transform(ctx context.Context, session *kgo.GroupTransactSession, fetches kgo.Fetches, output Output,
	metrics Metrics, commit bool) (bool, error) {
	if err := session.Begin(); err != nil {
		metrics.RecordError(err)
		return false, fmt.Errorf("begin: %w", err)
	}
	if p.OnBegin != nil {
		p.OnBegin()
	}
	produced := int64(0)
	var produceErr error
	fetches.EachRecord(func(record *kgo.Record) {
		value := append([]byte(nil), record.Value...)
		if verify.SetStage(value, output.Stage) != nil {
			return // not a loadgen record: nothing to carry over
		}
		out := &kgo.Record{Topic: output.Topic, Partition: record.Partition, Key: record.Key, Value: value}
		// Produce is asynchronous; End flushes and fails the commit if any
		// record failed, so the promise only counts errors.
		session.Produce(ctx, out, func(_ *kgo.Record, err error) {
			if err != nil {
				metrics.RecordError(err)
			}
		})
		produced++
	})
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	started := time.Now()
	committed, err := session.End(endCtx, kgo.TransactionEndTry(commit))
	took := time.Since(started)
	if err != nil {
		metrics.RecordError(err)
		produceErr = fmt.Errorf("end transaction: %w", unconfirmedEnd(err))
	}
	metrics.RecordTransactionEnd(committed, !committed && err == nil, took)
	if !committed {
		produced = 0
	}
	if p.Identities == nil {
		p.Committed.Add(produced)
	}
	if p.OnEnd != nil {
		p.OnEnd(produced, TransactionEnd{Committed: committed, Aborted: !committed && err == nil, Took: took})
	}
	return committed, produceErr
}
