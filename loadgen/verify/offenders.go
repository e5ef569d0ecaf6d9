package verify

import (
	"fmt"
	"strings"
	"sync"
)

// Offenders: the few offending records a run names per kind of
// violation, beside the checker's counts. A TrackedLog mirrors what the
// ledger knows of each record of one producer; an OffenderSampler, fed
// each record one read returned (as a Checker is), names the lost,
// duplicated, reordered, aborted-but-visible and phantom ones.

// MaxOffenders bounds the offending records named per kind and reader.
const MaxOffenders = 5

// TrackedLog is a producer's ledger log plus a mirror of what the ledger
// knows of each record, so that the matrix can name offending records (the
// ledger only counts them). Its methods are called from the producing
// goroutine and client callbacks at once: mu guards the mirror.
type TrackedLog struct {
	*ProducerLog

	mu           sync.Mutex
	acknowledged bitmap
	doubtful     bitmap // errored, or in a transaction whose end errored
	aborted      bitmap // sent to abort, or in an aborted transaction
}

// NewTrackedLog wraps a producer's ledger log.
func NewTrackedLog(log *ProducerLog) *TrackedLog { return &TrackedLog{ProducerLog: log} }

// RecordSent logs a send in the ledger and the mirror.
func (t *TrackedLog) RecordSent(seq uint64, fate Fate) error {
	if err := t.ProducerLog.RecordSent(seq, fate); err != nil {
		return err
	}
	if fate == FateAbort {
		t.mu.Lock()
		t.aborted.set(seq)
		t.mu.Unlock()
	}
	return nil
}

// RecordAcknowledged logs an acknowledgement in the ledger and the mirror.
func (t *TrackedLog) RecordAcknowledged(seq uint64, at Ack) {
	t.ProducerLog.RecordAcknowledged(seq, at)
	t.mu.Lock()
	t.acknowledged.set(seq)
	t.mu.Unlock()
}

// RecordErrored logs a failed produce in the ledger and the mirror.
func (t *TrackedLog) RecordErrored(seq uint64) {
	t.ProducerLog.RecordErrored(seq)
	t.mu.Lock()
	t.doubtful.set(seq)
	t.mu.Unlock()
}

// RecordTransactionEnd logs a transaction's outcome in the ledger and the
// mirror.
func (t *TrackedLog) RecordTransactionEnd(first, end uint64, outcome TransactionOutcome) {
	t.ProducerLog.RecordTransactionEnd(first, end, outcome)
	t.mu.Lock()
	defer t.mu.Unlock()
	for seq := first; seq < end; seq++ {
		switch outcome {
		case TransactionAborted:
			t.aborted.set(seq)
		case TransactionUnknown:
			t.doubtful.set(seq)
		}
	}
}

// TransactionEnding does nothing: in process, the outcome is all the
// ledger needs.
func (t *TrackedLog) TransactionEnding(first, end uint64) {}

// committed reports whether the ledger counts seq as committed: it must be
// read exactly once.
func (t *TrackedLog) committed(seq uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acknowledged.has(seq) && !t.doubtful.has(seq) && !t.aborted.has(seq)
}

// isAborted reports whether seq must stay invisible to read_committed.
func (t *TrackedLog) isAborted(seq uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.aborted.has(seq)
}

// Offender kinds: the keys of a run's offenders, which its verdict lists
// under a broken bound.
const (
	OffenderLost           = "lost"
	OffenderDuplicated     = "duplicated"
	OffenderReordered      = "reordered"
	OffenderAbortedVisible = "aborted-visible"
	OffenderPhantom        = "phantom"
	OffenderInconsistent   = "inconsistent-offsets"
	OffenderPollSkip       = "poll-skip"
	OffenderNonMonotonic   = "non-monotonic"
)

// ReadRecord is one record a verification read returned: where it was
// read, the producer session its batch names (a table row has none:
// ProducerID -1), and its value.
type ReadRecord struct {
	Partition int32
	Offset    int64
	Writer    Writer
	Value     []byte
}

// OffenderSampler names a few offending records of one read-back: lost
// (lost writes and unseen), duplicated, reordered, aborted-but-visible and
// phantom ones, each by topic, partition, offset, producer and sequence,
// and the producer id, epoch and transactional id that wrote it where
// known. It is fed by the reading goroutine, like a Checker, and
// asks that checker where the read got to.
type OffenderSampler struct {
	logs      []*TrackedLog
	ledger    *Ledger
	checker   *Checker
	runID     uint64
	stage     uint8
	isolation Isolation
	// topic is the topic read; inputTopic the topic the load producers
	// wrote (where acknowledged offsets are).
	topic, inputTopic string
	// first holds, per producer and sequence, 1 + the offset the record was
	// first read at, and firstPartition its partition (0 offset: unread).
	first          [][]int64
	firstPartition [][]int32
	highest        map[partitionKeyOf]uint64
	examples       map[string][]string
}

// partitionKeyOf names one producer's records on one partition.
type partitionKeyOf struct {
	producer  uint32
	partition int32
}

// SamplerSpec says what one read is: its topic and the topic the load
// producers wrote, the stage and isolation it reads with, and the checker
// it feeds.
type SamplerSpec struct {
	Topic, InputTopic string
	Stage             uint8
	Isolation         Isolation
	Checker           *Checker
}

// NewOffenderSampler returns the sampler of one read of the run whose
// ledger and producer logs are given.
func NewOffenderSampler(logs []*TrackedLog, ledger *Ledger, spec SamplerSpec) *OffenderSampler {
	sampler := &OffenderSampler{logs: logs, ledger: ledger, checker: spec.Checker, runID: ledger.RunID(),
		stage: spec.Stage, isolation: spec.Isolation, topic: spec.Topic, inputTopic: spec.InputTopic,
		first: make([][]int64, len(logs)), firstPartition: make([][]int32, len(logs)),
		highest: make(map[partitionKeyOf]uint64), examples: make(map[string][]string)}
	for i, log := range logs {
		sent := log.Sent()
		sampler.first[i] = make([]int64, sent)
		sampler.firstPartition[i] = make([]int32, sent)
	}
	return sampler
}

func (s *OffenderSampler) note(kind, format string, args ...any) {
	if len(s.examples[kind]) < MaxOffenders {
		s.examples[kind] = append(s.examples[kind], fmt.Sprintf(format, args...))
	}
}

// at names where a record was read: "topic t partition 2 offset 45".
func (s *OffenderSampler) at(partition int32, offset int64) string {
	return fmt.Sprintf("topic %s partition %d offset %d", s.topic, partition, offset)
}

// record names a record of this run read as r: producer and sequence, and
// the session that wrote it. For the load producers' records (stage 0)
// the ledger knows the writer, transactional id included; for a later
// stage it names the batch's writer (a pipeline worker), then the input
// record's.
func (s *OffenderSampler) record(producer uint32, seq uint64, r ReadRecord) string {
	text := fmt.Sprintf("producer %d seq %d", producer, seq)
	var writers []string
	if s.stage != 0 && r.Writer.ProducerID >= 0 {
		writers = append(writers, "written by "+r.Writer.String())
	}
	if at, ok := s.ledger.Producer(producer).Acknowledged(seq); ok && at.Writer.String() != "" {
		writer := at.Writer.String()
		if s.stage != 0 {
			writer = fmt.Sprintf("input at topic %s partition %d offset %d by %s", s.inputTopic, at.Partition, at.Offset, writer)
		}
		writers = append(writers, writer)
	} else if s.stage == 0 && r.Writer.ProducerID >= 0 {
		writers = append(writers, r.Writer.String())
	}
	if len(writers) > 0 {
		text += " (" + strings.Join(writers, "; ") + ")"
	}
	return text
}

// Observe feeds one record read.
func (s *OffenderSampler) Observe(r ReadRecord) {
	header, err := DecodeHeader(r.Value)
	if err != nil || header.RunID != s.runID || header.Stage != s.stage {
		return
	}
	producer, seq := header.Producer, header.Sequence
	if int(producer) >= len(s.logs) || seq >= uint64(len(s.first[producer])) {
		s.note(OffenderPhantom, "%s: producer %d seq %d was never sent", s.at(r.Partition, r.Offset), producer, seq)
		return
	}
	if firstOffset := s.first[producer][seq]; firstOffset != 0 {
		s.note(OffenderDuplicated, "%s: %s, read before at partition %d offset %d",
			s.at(r.Partition, r.Offset), s.record(producer, seq, r), s.firstPartition[producer][seq], firstOffset-1)
		return
	}
	s.first[producer][seq], s.firstPartition[producer][seq] = r.Offset+1, r.Partition
	if s.isolation == ReadCommitted && s.logs[producer].isAborted(seq) {
		s.note(OffenderAbortedVisible, "%s: %s (aborted or fenced) visible", s.at(r.Partition, r.Offset), s.record(producer, seq, r))
	}
	key := partitionKeyOf{producer: producer, partition: r.Partition}
	if highest, ok := s.highest[key]; ok && seq < highest {
		s.note(OffenderReordered, "%s: %s read after seq %d", s.at(r.Partition, r.Offset), s.record(producer, seq, r), highest)
		return
	}
	s.highest[key] = seq
}

// Finish adds lost records and returns the examples by kind. A lost
// record is named a lost write when the read got past its acknowledged
// offset, else unseen (see Counts).
func (s *OffenderSampler) Finish() map[string][]string {
	for producer, log := range s.logs {
		for seq, firstOffset := range s.first[producer] {
			if len(s.examples[OffenderLost]) >= MaxOffenders {
				return s.examples
			}
			if firstOffset != 0 || !log.committed(uint64(seq)) {
				continue
			}
			s.note(OffenderLost, "%s", s.lost(uint32(producer), uint64(seq)))
		}
	}
	return s.examples
}

// lost describes one lost record.
func (s *OffenderSampler) lost(producer uint32, seq uint64) string {
	at, known := s.ledger.Producer(producer).Acknowledged(seq)
	record := fmt.Sprintf("producer %d seq %d", producer, seq)
	if !known {
		return fmt.Sprintf("unseen: %s acknowledged without an offset (acks=0), never read", record)
	}
	where := fmt.Sprintf("%s acknowledged at topic %s partition %d offset %d", record, s.inputTopic, at.Partition, at.Offset)
	if writer := at.Writer.String(); writer != "" {
		where += " (" + writer + ")"
	}
	position := "input offset"
	if s.stage == 0 {
		position = "offset"
	}
	reached, lostWrite := s.checker.LostWrite(at.Partition, at.Offset)
	_, readThere := s.checker.Reached(at.Partition)
	switch {
	case lostWrite:
		return fmt.Sprintf("lost write: %s, never read, though the read of %s reached partition %d %s %d", where, s.topic, at.Partition, position, reached)
	case readThere:
		return fmt.Sprintf("unseen: %s, never read; the read of %s reached partition %d %s %d only", where, s.topic, at.Partition, position, reached)
	}
	return fmt.Sprintf("unseen: %s, never read; nothing of partition %d was read from %s", where, at.Partition, s.topic)
}
