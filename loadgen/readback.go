package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/pollwatch"
	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// readBack reads every partition of topic from its start to the end offset
// that ListOffsets gives at the start of the read, feeding each data record
// to observe in offset order, and every record below the end, control
// records included, to polls. For read_committed the end is the last stable
// offset once the transactions still open have ended (settledEnds, which
// waits up to three quarters of ctx's time); if some did not, it reads to
// the last stable offsets it has and returns the *openTransactionsError
// naming them, with complete false. Control records are kept
// (KeepControlRecords) so a partition whose tail is a transaction marker is
// known to be read to its end. It returns the end offsets by partition and
// whether every partition was read to its end before ctx ended.
func readBack(ctx context.Context, admin *kgo.Client, seeds []kgo.Opt, topic string, partitions int,
	isolation verify.Isolation, polls verify.PollSink, observe func(record *kgo.Record)) (ends map[int32]int64, complete bool, err error) {
	var endList []int64
	var unsettled error // *openTransactionsError: read to the last stable offsets it names
	if isolation == verify.ReadCommitted {
		endList, err = settledEnds(ctx, admin, topic, partitions, settleDeadline(ctx))
		var open *openTransactionsError
		if errors.As(err, &open) {
			unsettled, err = err, nil
		}
	} else {
		endList, err = endOffsets(ctx, admin, topic, partitions, false)
	}
	if err != nil {
		return nil, false, err
	}
	ends = make(map[int32]int64, len(endList))
	assignment := make(map[int32]kgo.Offset)
	for partition, end := range endList {
		ends[int32(partition)] = end
		if end > 0 {
			assignment[int32(partition)] = kgo.NewOffset().AtStart()
		}
	}
	if len(assignment) == 0 {
		return ends, unsettled == nil, unsettled
	}
	level := kgo.ReadCommitted()
	if isolation == verify.ReadUncommitted {
		level = kgo.ReadUncommitted()
	}
	client, err := kgo.NewClient(append(seeds,
		kgo.ClientID("exactly-loadgen-verify"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assignment}),
		kgo.FetchIsolationLevel(level),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)...)
	if err != nil {
		return ends, false, fmt.Errorf("verification reader: %w", err)
	}
	defer client.Close()

	remaining := len(assignment)
	done := make(map[int32]bool, len(assignment))
	for remaining > 0 {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			return ends, false, unsettled
		}
		for _, fetchErr := range fetches.Errors() {
			if !errors.Is(fetchErr.Err, context.Canceled) && !errors.Is(fetchErr.Err, context.DeadlineExceeded) {
				return ends, false, fmt.Errorf("read back %s[%d] %s: %w", topic, fetchErr.Partition, isolation, fetchErr.Err)
			}
		}
		fetches.EachPartition(func(partition kgo.FetchTopicPartition) {
			end := ends[partition.Partition]
			// Records written after the read began are not part of
			// this check.
			below := slices.DeleteFunc(slices.Clone(partition.Records), func(record *kgo.Record) bool { return record.Offset >= end })
			polls.Polled(partition.Partition, pollwatch.PolledRecords(below), true)
			for _, record := range below {
				if !record.Attrs.IsControl() {
					observe(record)
				}
			}
			// The partition is read to its end once a record at or past
			// end-1 came back: under read_committed the record at end-1
			// may belong to an aborted transaction, which the client
			// drops, and then the first record returned after it is
			// its abort marker (kept, KeepControlRecords) or a later
			// one.
			if records := partition.Records; len(records) > 0 && records[len(records)-1].Offset >= end-1 && !done[partition.Partition] {
				done[partition.Partition] = true
				remaining--
			}
		})
	}
	return ends, unsettled == nil, unsettled
}

// settleDeadline is how long a read_committed read-back waits for open
// transactions to end before it reads what is stable: three quarters of
// the time ctx leaves (a minute without a deadline), the rest for reading.
func settleDeadline(ctx context.Context) time.Time {
	deadline, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(time.Minute)
	}
	return time.Now().Add(time.Until(deadline) * 3 / 4)
}

// liveConsumers read a run's final topic while it runs and record each
// record's end-to-end latency (send → receipt). Each consumer goroutine owns
// its client; received is shared (atomic), notify is signalled after each
// poll that returned records.
type liveConsumers struct {
	received stages.Counter
	cancel   context.CancelFunc
	done     chan struct{}
}

// startLiveConsumers starts count consumers over the partitions of topic
// (consumer i reads partitions i, i+count, ...), from the start.
func startLiveConsumers(ctx context.Context, plan runPlan, topic string, readCommitted bool, metrics *runMetrics) (*liveConsumers, error) {
	partitions, count := plan.workload.Partitions, plan.workload.Consumers
	ctx, cancel := context.WithCancel(ctx)
	consumers := &liveConsumers{received: stages.NewCounter(), cancel: cancel, done: make(chan struct{})}
	level := kgo.ReadUncommitted()
	if readCommitted {
		level = kgo.ReadCommitted()
	}
	var clients []*kgo.Client
	for index := range min(count, partitions) {
		assignment := make(map[int32]kgo.Offset)
		for partition := index; partition < partitions; partition += count {
			assignment[int32(partition)] = kgo.NewOffset().AtStart()
		}
		client, err := kgo.NewClient(append(plan.clientOptions(),
			plan.observations.watch(consumersLive),
			kgo.ClientID(fmt.Sprintf("exactly-loadgen-consumer-%d", index)),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assignment}),
			kgo.FetchIsolationLevel(level),
			kgo.FetchMaxWait(100*time.Millisecond),
		)...)
		if err != nil {
			cancel()
			for _, started := range clients {
				started.Close()
			}
			return nil, fmt.Errorf("live consumer %d: %w", index, err)
		}
		clients = append(clients, client)
	}
	finished := make(chan struct{}, len(clients))
	for _, client := range clients {
		go func() {
			defer func() { finished <- struct{}{} }()
			defer client.Close()
			consumeForLatency(ctx, client, metrics, &consumers.received)
		}()
	}
	go func() {
		for range clients {
			<-finished
		}
		close(consumers.done)
	}()
	return consumers, nil
}

// consumeForLatency polls until ctx ends.
func consumeForLatency(ctx context.Context, client *kgo.Client, metrics *runMetrics, received *stages.Counter) {
	polls := pollwatch.Of(client)
	for ctx.Err() == nil {
		fetches := client.PollFetches(ctx)
		polls.Fetched(fetches)
		now := time.Now()
		count := 0
		fetches.EachRecord(func(record *kgo.Record) {
			if header, err := verify.DecodeHeader(record.Value); err == nil {
				metrics.recordEndToEnd(time.Unix(0, header.SendTime), now)
				count++
			}
		})
		received.Add(int64(count))
	}
}

// stopAfter waits until the consumers received at least target records or
// deadline passes, then stops them and waits for them to exit.
func (c *liveConsumers) stopAfter(target int64, deadline time.Time) {
	c.received.WaitFor(target, deadline)
	c.cancel()
	<-c.done
}
