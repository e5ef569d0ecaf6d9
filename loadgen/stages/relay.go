package stages

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/pollwatch"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Relay is the consume stage a mode without one runs under group-churn:
// the classic at-least-once consume-produce loop. Workers in one consumer
// group read the input topic; for each poll a worker produces every
// record (its header's stage set to 1) to the same partition of the
// output topic with the mode's producer settings (acks=all, retries,
// idempotence off), waits until all are acknowledged, and only then
// commits the poll's offsets. A worker that stops between the produce and
// the commit (a churning worker leaving: the at-least-once form of an
// aborted transaction) leaves its output written and its offsets not
// committed, so the partition's next owner produces those records again:
// duplicates, never losses. The worker's goroutine owns the client.
type Relay struct {
	client  *kgo.Client
	output  string
	metrics Metrics
}

// RelaySpec is one Relay worker's settings.
type RelaySpec struct {
	// Mode is the run's mode, whose producer options the relay uses.
	Mode            string
	Options         []kgo.Opt // seed brokers, fault and group settings
	ClientID, Group string
	Input, Output   string
	// OnAssignment, when set, is told how many input partitions the
	// worker holds after each change.
	OnAssignment func(count int)
}

// NewRelay creates a relay worker's client: a group consumer without
// auto-commit whose rebalances wait for the poll being relayed, and a
// producer with the mode's producer options.
func NewRelay(spec RelaySpec, metrics Metrics) (*Relay, error) {
	mode, ok := modes.Lookup(spec.Mode)
	if !ok {
		return nil, fmt.Errorf("unknown delivery mode %q", spec.Mode)
	}
	producer := mode.ProducerOptions(modes.ProducerParams{})
	options := append(append(append([]kgo.Opt(nil), spec.Options...), producer...),
		kgo.ClientID(spec.ClientID),
		kgo.ConsumerGroup(spec.Group),
		kgo.ConsumeTopics(spec.Input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.WithLogger(metrics.Logger()),
	)
	options = append(options, AssignmentOptions(spec.Input, false, spec.OnAssignment)...)
	client, err := kgo.NewClient(options...)
	if err != nil {
		return nil, fmt.Errorf("at-least-once relay %s: %w", spec.ClientID, err)
	}
	return &Relay{client: client, output: spec.Output, metrics: metrics}, nil
}

// Work relays polls until ctx ends, or, under group-churn (leave not
// nil), until it leaves after a poll it produced but did not commit.
func (r *Relay) Work(ctx context.Context, leave *Departure) error {
	defer r.client.Close()
	polls := pollwatch.Of(r.client) // the poll checker's (package pollwatch)
	loop := pollLoop{
		poll:           r.client.PollFetches,
		allowRebalance: r.client.AllowRebalance,
		process:        r.relayPoll,
	}
	return loop.run(ctx, polls, r.metrics, leave)
}

// relayPoll produces one poll's records and waits for their acks, then,
// when commit is set, commits the poll's offsets. It reports whether the
// offsets were committed. A failed commit is not an error: the records
// are relayed again by the partition's next owner, as at-least-once
// allows.
func (r *Relay) relayPoll(ctx context.Context, fetches kgo.Fetches, commit bool) (bool, error) {
	var out []*kgo.Record
	fetches.EachRecord(func(record *kgo.Record) {
		value := append([]byte(nil), record.Value...)
		if verify.SetStage(value, 1) != nil {
			return // not a loadgen record: nothing to carry over
		}
		out = append(out, &kgo.Record{Topic: r.output, Partition: record.Partition, Key: record.Key, Value: value})
	})
	if err := r.client.ProduceSync(ctx, out...).FirstErr(); err != nil {
		if ctx.Err() != nil {
			return false, nil // stopping: the poll stays uncommitted
		}
		r.metrics.RecordError(err)
		return false, fmt.Errorf("relay produce: %w", err)
	}
	if !commit {
		return false, nil
	}
	if err := r.client.CommitRecords(ctx, fetches.Records()...); err != nil {
		if ctx.Err() == nil {
			r.metrics.RecordError(err)
		}
		return false, nil
	}
	return true, nil
}
