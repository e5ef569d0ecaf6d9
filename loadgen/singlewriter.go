package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/wait"
	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// recoveryReadTimeout bounds one read of a partition's tail; a recovery
// that cannot read (the broker is down) waits and tries again.
const recoveryReadTimeout = 5 * time.Second

// writerState is what a single writer knows of its records on its
// partition: the pure core of the partition writers (no client),
// so its recovery decisions can be tested from a partition's tail alone.
//
// Invariant: every record of this writer at an offset below knownGood is
// accounted for (acknowledged, or found by a recovery), so a recovery need
// read only [knownGood, end). It holds because one writer owns the
// partition, records are sent in sequence order without client retries,
// and kgo calls a partition's promises in send order: when a record is
// acknowledged while nothing is unresolved, every record sent before it
// has an outcome and none failed.
//
// The writer's goroutine and kgo's promise goroutine share it: mu guards
// every field.
type writerState struct {
	mu         sync.Mutex
	knownGood  int64
	unresolved map[uint64]*kgo.Record // failed produces awaiting recovery, by sequence
}

func newWriterState() *writerState {
	return &writerState{unresolved: make(map[uint64]*kgo.Record)}
}

// acknowledged notes that seq was written at offset.
func (s *writerState) acknowledged(offset int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unresolved) == 0 {
		s.knownGood = max(s.knownGood, offset+1)
	}
}

// failed notes that producing record (sequence seq) failed: it may or may
// not have been written.
func (s *writerState) failed(seq uint64, record *kgo.Record) {
	s.mu.Lock()
	s.unresolved[seq] = record
	s.mu.Unlock()
}

// needsRecovery reports whether any produce failed since the last
// recovery.
func (s *writerState) needsRecovery() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.unresolved) > 0
}

// recoveryStart returns where the tail read must start and the records in
// doubt, in sequence order.
func (s *writerState) recoveryStart() (from int64, pending []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq := range s.unresolved {
		pending = append(pending, seq)
	}
	slices.Sort(pending)
	return s.knownGood, pending
}

// recoveryDecision is what a recovery learnt from the partition's tail.
type recoveryDecision struct {
	// written were found in the tail: the lost part was the
	// acknowledgement. resend were not: the request was lost.
	written, resend []*kgo.Record
	writtenSeqs     []uint64
	// copies counts records of this writer found more than once in the
	// tail: duplicates the writer caused (0 when the method works).
	copies int
}

// finishRecovery decides, from the sequences found at offsets [from, end)
// (found counts the distinct offsets each was read at), which pending
// records were written and which must be resent, and moves knownGood to
// end: after the decision every record below end is accounted for.
func (s *writerState) finishRecovery(pending []uint64, found map[uint64]int, end int64) recoveryDecision {
	s.mu.Lock()
	defer s.mu.Unlock()
	var decision recoveryDecision
	for _, count := range found {
		if count > 1 {
			decision.copies += count - 1
		}
	}
	for _, seq := range pending {
		record := s.unresolved[seq]
		delete(s.unresolved, seq)
		if found[seq] > 0 {
			decision.written = append(decision.written, record)
			decision.writtenSeqs = append(decision.writtenSeqs, seq)
			continue
		}
		decision.resend = append(decision.resend, record)
	}
	s.knownGood = max(s.knownGood, end)
	return decision
}

// tailSequences returns, for the records read at offsets [from, end) of a
// partition, how many distinct offsets each sequence of producer was read
// at. Other producers' and other runs' records are ignored.
func tailSequences(runID uint64, producer uint32, from, end int64, offsets []int64, values [][]byte) map[uint64]int {
	found := make(map[uint64]int)
	seenOffsets := make(map[int64]bool)
	for i, offset := range offsets {
		if offset < from || offset >= end || seenOffsets[offset] {
			continue
		}
		seenOffsets[offset] = true
		header, err := verify.DecodeHeader(values[i])
		if err != nil || header.RunID != runID || header.Producer != producer || header.Stage != 0 {
			continue
		}
		found[header.Sequence]++
	}
	return found
}

// singleWriter is the only producer of one partition. Its run method is
// called on one goroutine, which owns every field except state (shared
// with kgo's promise goroutine) and the shared log, metrics and stats.
type singleWriter struct {
	id         uint32 // ledger slot: the partition number
	partition  int32
	client     *kgo.Client // the producer
	reader     *kgo.Client // reads the partition's tail in recoveries
	topic      string
	runID      uint64
	recordSize int
	log        recordLog
	metrics    *runMetrics
	stats      *stages.Stats
	pacer      pacer
	// created: when each paced record was first handed to the client
	// (shared with promises; see sendTimeOf).
	created  *creationTimes
	budget   uint64
	deadline time.Time
	next     uint64
	state    *writerState
}

// newSingleWriter creates partition's writer and its tail reader.
func newSingleWriter(plan runPlan, partition int, log recordLog, metrics *runMetrics, stats *stages.Stats, budget uint64, deadline, start time.Time) (*singleWriter, error) {
	workload := plan.workload
	modeOptions, err := producerOptions(plan.mode, "", 0)
	if err != nil {
		return nil, err
	}
	clientID := fmt.Sprintf("exactly-loadgen-%s-writer-%d", plan.topicSuffix, partition)
	client, err := kgo.NewClient(append(append([]kgo.Opt{kgo.ClientID(clientID), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.WithLogger(clientLogger{metrics: metrics})}, plan.clientOptions()...), modeOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("single writer %d client: %w", partition, err)
	}
	reader, err := kgo.NewClient(append(plan.clientOptions(), kgo.ClientID(clientID+"-tail"), kgo.FetchMaxWait(50*time.Millisecond))...)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("single writer %d tail reader: %w", partition, err)
	}
	pacer := newPacer(float64(workload.Rate)/float64(workload.Partitions), start)
	return &singleWriter{
		id: uint32(partition), partition: int32(partition), client: client, reader: reader, topic: plan.topic,
		runID: plan.runID, recordSize: workload.RecordSize, log: log, metrics: metrics, stats: stats,
		pacer: pacer, created: newCreationTimes(pacer.paced()),
		budget: budget, deadline: deadline, state: newWriterState(),
	}, nil
}

// close closes both clients.
func (w *singleWriter) close() {
	w.client.Close()
	w.reader.Close()
}

func (w *singleWriter) running(ctx context.Context) bool {
	return w.next < w.budget && ctx.Err() == nil && time.Now().Before(w.deadline) && !w.metrics.stopped.Load()
}

// run sends until the budget, the deadline or ctx ends, recovering after
// every failure; at the end it flushes and recovers until every record is
// resolved or ctx ends. Records still unresolved then are logged errored.
func (w *singleWriter) run(ctx context.Context) error {
	var runErr error
	for w.running(ctx) {
		if w.state.needsRecovery() {
			if runErr = w.recover(ctx); runErr != nil {
				break
			}
		}
		due, err := w.pacer.wait(ctx)
		if err != nil {
			break
		}
		seq := w.next
		w.next++
		if err := w.log.RecordSent(seq, verify.FateCommit); err != nil {
			return err
		}
		w.metrics.recordSent()
		now := time.Now()
		w.created.note(seq, now)
		value := verify.NewValue(verify.Header{RunID: w.runID, Producer: w.id, Sequence: seq, SendTime: sendTimeOf(due, now).UnixNano()}, w.recordSize)
		w.produce(ctx, &kgo.Record{Topic: w.topic, Partition: w.partition, Key: fmt.Appendf(nil, "w%d-%d", w.id, seq), Value: value})
	}
	if err := w.client.Flush(ctx); err != nil && runErr == nil {
		runErr = fmt.Errorf("single writer %d flush: %w", w.partition, err)
	}
	for runErr == nil && ctx.Err() == nil && w.state.needsRecovery() {
		runErr = w.recover(ctx)
	}
	_, pending := w.state.recoveryStart()
	for _, seq := range pending {
		w.log.RecordErrored(seq) // given up: it may or may not be written
		w.metrics.recordFailed()
	}
	return runErr
}

// produce hands record to the client; its promise resolves it or marks it
// for recovery.
func (w *singleWriter) produce(ctx context.Context, record *kgo.Record) {
	w.client.Produce(ctx, record, func(record *kgo.Record, err error) {
		header, decodeErr := verify.DecodeHeader(record.Value)
		if decodeErr != nil {
			return // cannot happen: the writer wrote the value
		}
		if err != nil {
			w.metrics.recordError(err)
			w.state.failed(header.Sequence, record)
			return
		}
		w.state.acknowledged(record.Offset)
		w.resolved(header, record)
	})
}

// resolved logs a record known written.
func (w *singleWriter) resolved(header verify.Header, record *kgo.Record) {
	w.log.RecordAcknowledged(header.Sequence, verify.Ack{Partition: record.Partition, Offset: record.Offset,
		Writer: verify.Writer{ProducerID: record.ProducerID, ProducerEpoch: record.ProducerEpoch}})
	created, paced := w.created.take(header.Sequence)
	w.metrics.recordAck(ackTimes{sent: time.Unix(0, header.SendTime), created: created, paced: paced}, time.Now(), len(record.Value))
}

// recover waits for every outstanding outcome, reads the partition from
// the last known-good offset to its end, marks the failed records found
// there written and resends the others. A read that fails (broker down)
// is retried until ctx ends.
func (w *singleWriter) recover(ctx context.Context) error {
	w.stats.Recoveries.Add(1)
	if err := w.client.Flush(ctx); err != nil {
		return fmt.Errorf("single writer %d recovery flush: %w", w.partition, err)
	}
	from, pending := w.state.recoveryStart()
	for attempt := 0; ; attempt++ {
		end, found, err := w.readTail(ctx, from)
		if err == nil {
			decision := w.state.finishRecovery(pending, found, end)
			w.apply(ctx, decision)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("single writer %d recovery: %w", w.partition, errors.Join(err, ctx.Err()))
		}
		w.metrics.recordError(err)
		if !wait.Until(ctx, time.Now().Add(faultRetryBackoff(attempt))) {
			return fmt.Errorf("single writer %d recovery: %w", w.partition, err)
		}
	}
}

// apply carries out a recovery's decision.
func (w *singleWriter) apply(ctx context.Context, decision recoveryDecision) {
	w.stats.FoundWritten.Add(int64(len(decision.written)))
	w.stats.WriterCopies.Add(int64(decision.copies))
	for _, record := range decision.written {
		if header, err := verify.DecodeHeader(record.Value); err == nil {
			w.resolved(header, record)
		}
	}
	for _, record := range decision.resend {
		w.stats.Resent.Add(1)
		w.metrics.retries.Add(1)
		w.produce(ctx, &kgo.Record{Topic: record.Topic, Partition: record.Partition, Key: record.Key, Value: record.Value})
	}
}

// readTail lists the partition's end offset and reads [from, end).
func (w *singleWriter) readTail(ctx context.Context, from int64) (end int64, found map[uint64]int, err error) {
	readCtx, cancel := context.WithTimeout(ctx, recoveryReadTimeout)
	defer cancel()
	end, err = partitionEnd(readCtx, w.reader, w.topic, w.partition)
	if err != nil {
		return 0, nil, err
	}
	if end <= from {
		return end, map[uint64]int{}, nil
	}
	w.reader.AddConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: {w.partition: kgo.NewOffset().At(from)}})
	defer w.reader.RemoveConsumePartitions(map[string][]int32{w.topic: {w.partition}})
	var offsets []int64
	var values [][]byte
	for last := from - 1; last < end-1; {
		fetches := w.reader.PollFetches(readCtx)
		if readCtx.Err() != nil {
			return 0, nil, fmt.Errorf("read %s[%d] from %d to %d: %w", w.topic, w.partition, from, end, readCtx.Err())
		}
		for _, fetchErr := range fetches.Errors() {
			return 0, nil, fmt.Errorf("read %s[%d] from %d: %w", w.topic, w.partition, from, fetchErr.Err)
		}
		fetches.EachRecord(func(record *kgo.Record) {
			if record.Partition == w.partition && record.Offset >= from && record.Offset < end {
				offsets, values = append(offsets, record.Offset), append(values, record.Value)
				last = max(last, record.Offset)
			}
		})
	}
	return end, tailSequences(w.runID, w.id, from, end, offsets, values), nil
}

// partitionEnd returns a partition's high watermark (ListOffsets, latest).
func partitionEnd(ctx context.Context, client *kgo.Client, topic string, partition int32) (int64, error) {
	request := kmsg.NewPtrListOffsetsRequest()
	request.ReplicaID = -1
	requestTopic := kmsg.NewListOffsetsRequestTopic()
	requestTopic.Topic = topic
	requestPartition := kmsg.NewListOffsetsRequestTopicPartition()
	requestPartition.Partition = partition
	requestPartition.Timestamp = -1
	requestPartition.CurrentLeaderEpoch = -1
	requestTopic.Partitions = append(requestTopic.Partitions, requestPartition)
	request.Topics = append(request.Topics, requestTopic)
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return 0, fmt.Errorf("list end offset of %s[%d]: %w", topic, partition, err)
	}
	for _, responseTopic := range response.Topics {
		for _, answered := range responseTopic.Partitions {
			if answered.Partition != partition {
				continue
			}
			if err := kerr.ErrorForCode(answered.ErrorCode); err != nil {
				return 0, fmt.Errorf("list end offset of %s[%d]: %w", topic, partition, err)
			}
			return answered.Offset, nil
		}
	}
	return 0, fmt.Errorf("list end offset of %s[%d]: no answer for the partition", topic, partition)
}

// runSingleWriters runs one writer per partition to completion.
func (l *loadRun) runSingleWriters(ctx context.Context) error {
	workload := l.plan.workload
	var wait sync.WaitGroup
	errs := make([]error, workload.Partitions)
	for partition := range workload.Partitions {
		budget := splitBudget(workload.Records, workload.Partitions, partition)
		writer, err := newSingleWriter(l.plan, partition, l.logs[partition], l.metrics, l.stats, budget, l.deadline, l.start)
		if err != nil {
			errs[partition] = err
			continue
		}
		wait.Add(1)
		go func() {
			defer wait.Done()
			defer writer.close()
			errs[partition] = writer.run(ctx)
		}()
	}
	wait.Wait()
	return errors.Join(errs...)
}

// splitBudget is share index of records split count ways.
func splitBudget(records int64, count, index int) uint64 {
	budget := uint64(records / int64(count))
	if int64(index) < records%int64(count) {
		budget++
	}
	return budget
}
