package loadgen

import (
	"fmt"
	"sync"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// maxOffenders bounds the offending records named per kind and reader.
const maxOffenders = 5

// bitset is a growable set of sequence numbers.
type bitset []uint64

func (b *bitset) set(seq uint64) {
	word := int(seq / 64)
	for len(*b) <= word {
		*b = append(*b, 0)
	}
	(*b)[word] |= 1 << (seq % 64)
}

func (b bitset) has(seq uint64) bool {
	word := int(seq / 64)
	return word < len(b) && b[word]&(1<<(seq%64)) != 0
}

// trackedLog is a producer's ledger log plus a mirror of what the ledger
// knows of each record, so that the matrix can name offending records (the
// ledger only counts them). Its methods are called from the producing
// goroutine and client callbacks at once: mu guards the mirror.
type trackedLog struct {
	*verify.ProducerLog

	mu           sync.Mutex
	acknowledged bitset
	doubtful     bitset // errored, or in a transaction whose end errored
	aborted      bitset // sent to abort, or in an aborted transaction
}

func newTrackedLog(log *verify.ProducerLog) *trackedLog { return &trackedLog{ProducerLog: log} }

// RecordSent logs a send in the ledger and the mirror.
func (t *trackedLog) RecordSent(seq uint64, fate verify.Fate) error {
	if err := t.ProducerLog.RecordSent(seq, fate); err != nil {
		return err
	}
	if fate == verify.FateAbort {
		t.mu.Lock()
		t.aborted.set(seq)
		t.mu.Unlock()
	}
	return nil
}

// RecordAcknowledged logs an acknowledgement in the ledger and the mirror.
func (t *trackedLog) RecordAcknowledged(seq uint64) {
	t.ProducerLog.RecordAcknowledged(seq)
	t.mu.Lock()
	t.acknowledged.set(seq)
	t.mu.Unlock()
}

// RecordErrored logs a failed produce in the ledger and the mirror.
func (t *trackedLog) RecordErrored(seq uint64) {
	t.ProducerLog.RecordErrored(seq)
	t.mu.Lock()
	t.doubtful.set(seq)
	t.mu.Unlock()
}

// RecordTransactionEnd logs a transaction's outcome in the ledger and the
// mirror.
func (t *trackedLog) RecordTransactionEnd(first, end uint64, outcome verify.TransactionOutcome) {
	t.ProducerLog.RecordTransactionEnd(first, end, outcome)
	t.mu.Lock()
	defer t.mu.Unlock()
	for seq := first; seq < end; seq++ {
		switch outcome {
		case verify.TransactionAborted:
			t.aborted.set(seq)
		case verify.TransactionUnknown:
			t.doubtful.set(seq)
		}
	}
}

// TransactionEnding does nothing: in process, the outcome is all the
// ledger needs.
func (t *trackedLog) TransactionEnding(first, end uint64) {}

// committed reports whether the ledger counts seq as committed: it must be
// read exactly once.
func (t *trackedLog) committed(seq uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acknowledged.has(seq) && !t.doubtful.has(seq) && !t.aborted.has(seq)
}

// isAborted reports whether seq must stay invisible to read_committed.
func (t *trackedLog) isAborted(seq uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.aborted.has(seq)
}

// offenderSampler names a few offending records of one read-back: lost,
// duplicated, reordered and aborted-but-visible ones, with where they were
// read. It is fed by the reading goroutine, like a verify.Checker.
type offenderSampler struct {
	logs      []*trackedLog
	runID     uint64
	stage     uint8
	isolation verify.Isolation
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

func newOffenderSampler(logs []*trackedLog, runID uint64, stage uint8, isolation verify.Isolation) *offenderSampler {
	sampler := &offenderSampler{logs: logs, runID: runID, stage: stage, isolation: isolation,
		first: make([][]int64, len(logs)), firstPartition: make([][]int32, len(logs)),
		highest: make(map[partitionKeyOf]uint64), examples: make(map[string][]string)}
	for i, log := range logs {
		sent := log.Sent()
		sampler.first[i] = make([]int64, sent)
		sampler.firstPartition[i] = make([]int32, sent)
	}
	return sampler
}

func (s *offenderSampler) note(kind, format string, args ...any) {
	if len(s.examples[kind]) < maxOffenders {
		s.examples[kind] = append(s.examples[kind], fmt.Sprintf(format, args...))
	}
}

// observe feeds one record read at partition and offset.
func (s *offenderSampler) observe(partition int32, offset int64, value []byte) {
	header, err := verify.DecodeHeader(value)
	if err != nil || header.RunID != s.runID || header.Stage != s.stage || int(header.Producer) >= len(s.logs) {
		return
	}
	producer, seq := header.Producer, header.Sequence
	if seq >= uint64(len(s.first[producer])) {
		return // phantom: counted by the checker
	}
	if firstOffset := s.first[producer][seq]; firstOffset != 0 {
		s.note("duplicated", "producer %d seq %d: partition %d offset %d and partition %d offset %d",
			producer, seq, s.firstPartition[producer][seq], firstOffset-1, partition, offset)
		return
	}
	s.first[producer][seq], s.firstPartition[producer][seq] = offset+1, partition
	if s.isolation == verify.ReadCommitted && s.logs[producer].isAborted(seq) {
		s.note("aborted-visible", "producer %d seq %d (aborted or fenced) visible at partition %d offset %d",
			producer, seq, partition, offset)
	}
	key := partitionKeyOf{producer: producer, partition: partition}
	if highest, ok := s.highest[key]; ok && seq < highest {
		s.note("reordered", "producer %d seq %d read after seq %d on partition %d (offset %d)", producer, seq, highest, partition, offset)
		return
	}
	s.highest[key] = seq
}

// finish adds lost records and returns the examples by kind.
func (s *offenderSampler) finish() map[string][]string {
	for producer, log := range s.logs {
		for seq, firstOffset := range s.first[producer] {
			if len(s.examples["lost"]) >= maxOffenders {
				return s.examples
			}
			if firstOffset == 0 && log.committed(uint64(seq)) {
				s.note("lost", "producer %d seq %d acknowledged, never read", producer, seq)
			}
		}
	}
	return s.examples
}
