package worker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// RecordLog is where a producer logs what it learns of each record (the
// run's ledger in the runner, a RecordStream in a worker). Its methods are
// called from the producing goroutine and from client callbacks at once.
type RecordLog interface {
	RecordSent(seq uint64, fate verify.Fate) error
	// RecordAcknowledged notes seq acknowledged where at says.
	RecordAcknowledged(seq uint64, at verify.Ack)
	RecordErrored(seq uint64)
	// TransactionEnding is called just before EndTransaction for the
	// transaction holding [first, end).
	TransactionEnding(first, end uint64)
	RecordTransactionEnd(first, end uint64, outcome verify.TransactionOutcome)
}

// Record outcome operations of a batch. Each is its op byte followed by
// the producer (uvarint) and the fields below; sequences and offsets are
// zigzag deltas from the last sequence of the same producer and the last
// offset of the same partition in the batch (0 at its start), so the
// common case — the next record, the next offset — is one byte each.
const (
	opSent   = 1 // seq delta, fate byte
	opAck    = 2 // seq delta, flags, [transactional id], producer id delta, epoch delta, [partition, offset delta]
	opErr    = 3 // seq delta
	opEnding = 4 // first, end (uvarint)
	opEnd    = 5 // first, end, outcome byte
)

// Flags of an ack.
const (
	ackHasOffset     = 1 << 0 // partition and offset follow
	ackNewWriterName = 1 << 1 // the producer's transactional id follows (uvarint length, bytes)
)

// maxBatchBytes is the batch size at which RecordStream asks to be
// flushed before its next tick.
const maxBatchBytes = 1 << 20

// RecordStream batches the record outcomes of a worker's producers in the
// compact encoding above; the worker's flusher takes a batch (Take) and
// sends it as one frame. Producers and their client callbacks append at
// once: mu guards the batch and its delta state, which a batch starts
// afresh so that each decodes on its own.
type RecordStream struct {
	mu    sync.Mutex
	batch []byte
	// lastSeq is, per producer, the sequence of its last op; lastName its
	// last transactional id, lastWriter its last producer id and epoch;
	// lastOffset is, per partition, the last offset acked there.
	lastSeq    map[uint32]uint64
	lastName   map[uint32]string
	lastWriter map[uint32][2]int64
	lastOffset map[int32]int64
	// full is signalled (without blocking) when the batch passed
	// maxBatchBytes.
	full chan struct{}
}

// NewRecordStream returns an empty stream.
func NewRecordStream() *RecordStream {
	s := &RecordStream{full: make(chan struct{}, 1)}
	s.reset()
	return s
}

func (s *RecordStream) reset() {
	s.batch = s.batch[:0]
	s.lastSeq = make(map[uint32]uint64)
	s.lastName = make(map[uint32]string)
	s.lastWriter = make(map[uint32][2]int64)
	s.lastOffset = make(map[int32]int64)
}

// Full is signalled when a batch should be flushed before the next tick.
func (s *RecordStream) Full() <-chan struct{} { return s.full }

// Take returns the batch so far (nil when empty) and starts a new one.
func (s *RecordStream) Take() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.batch) == 0 {
		return nil
	}
	batch := append([]byte(nil), s.batch...)
	s.reset()
	return batch
}

// Producer returns the RecordLog of producer.
func (s *RecordStream) Producer(producer uint32) RecordLog {
	return streamLog{stream: s, producer: producer}
}

// begin starts an op of producer and seq; the caller holds mu.
func (s *RecordStream) begin(op byte, producer uint32, seq uint64) {
	s.batch = append(s.batch, op)
	s.batch = binary.AppendUvarint(s.batch, uint64(producer))
	s.batch = binary.AppendVarint(s.batch, int64(seq-s.lastSeq[producer]))
	s.lastSeq[producer] = seq
}

// done ends an op; the caller holds mu.
func (s *RecordStream) done() {
	if len(s.batch) >= maxBatchBytes {
		select {
		case s.full <- struct{}{}:
		default:
		}
	}
}

// streamLog is one producer's RecordLog on a stream.
type streamLog struct {
	stream   *RecordStream
	producer uint32
}

func (l streamLog) RecordSent(seq uint64, fate verify.Fate) error {
	s := l.stream
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begin(opSent, l.producer, seq)
	s.batch = append(s.batch, byte(fate))
	s.done()
	return nil
}

func (l streamLog) RecordAcknowledged(seq uint64, at verify.Ack) {
	s := l.stream
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begin(opAck, l.producer, seq)
	var flags byte
	if at.Offset >= 0 {
		flags |= ackHasOffset
	}
	if at.TransactionalID != s.lastName[l.producer] {
		flags |= ackNewWriterName
	}
	s.batch = append(s.batch, flags)
	if flags&ackNewWriterName != 0 {
		s.batch = binary.AppendUvarint(s.batch, uint64(len(at.TransactionalID)))
		s.batch = append(s.batch, at.TransactionalID...)
		s.lastName[l.producer] = at.TransactionalID
	}
	last := s.lastWriter[l.producer]
	s.batch = binary.AppendVarint(s.batch, at.ProducerID-last[0])
	s.batch = binary.AppendVarint(s.batch, int64(at.ProducerEpoch)-last[1])
	s.lastWriter[l.producer] = [2]int64{at.ProducerID, int64(at.ProducerEpoch)}
	if flags&ackHasOffset != 0 {
		s.batch = binary.AppendVarint(s.batch, int64(at.Partition))
		s.batch = binary.AppendVarint(s.batch, at.Offset-s.lastOffset[at.Partition])
		s.lastOffset[at.Partition] = at.Offset
	}
	s.done()
}

func (l streamLog) RecordErrored(seq uint64) {
	s := l.stream
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begin(opErr, l.producer, seq)
	s.done()
}

func (l streamLog) TransactionEnding(first, end uint64) {
	l.appendRange(opEnding, first, end, 0, false)
}

func (l streamLog) RecordTransactionEnd(first, end uint64, outcome verify.TransactionOutcome) {
	l.appendRange(opEnd, first, end, byte(outcome), true)
}

func (l streamLog) appendRange(op byte, first, end uint64, outcome byte, withOutcome bool) {
	s := l.stream
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch = append(s.batch, op)
	s.batch = binary.AppendUvarint(s.batch, uint64(l.producer))
	s.batch = binary.AppendUvarint(s.batch, first)
	s.batch = binary.AppendUvarint(s.batch, end)
	if withOutcome {
		s.batch = append(s.batch, outcome)
	}
	s.done()
}

// errBadBatch is a record batch that does not decode.
var errBadBatch = errors.New("bad record batch")

// batchReader decodes a batch.
type batchReader struct {
	data []byte
	err  error
}

func (r *batchReader) byte() byte {
	if r.err != nil || len(r.data) == 0 {
		r.fail("truncated")
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *batchReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	value, n := binary.Uvarint(r.data)
	if n <= 0 {
		r.fail("bad unsigned varint")
		return 0
	}
	r.data = r.data[n:]
	return value
}

func (r *batchReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	value, n := binary.Varint(r.data)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.data = r.data[n:]
	return value
}

func (r *batchReader) fail(why string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errBadBatch, why)
	}
}

// ApplyRecords decodes batch and applies its ops, in order, to the logs
// logs returns per producer (nil: a producer the worker does not run, an
// error). It stops at the first bad op; the ops before it were applied.
func ApplyRecords(batch []byte, logs func(producer uint32) RecordLog) error {
	r := &batchReader{data: batch}
	lastSeq := make(map[uint32]uint64)
	lastName := make(map[uint32]string)
	lastWriter := make(map[uint32][2]int64)
	lastOffset := make(map[int32]int64)
	for len(r.data) > 0 && r.err == nil {
		op := r.byte()
		producer64 := r.uvarint()
		if r.err != nil {
			break
		}
		if producer64 > 1<<31 {
			return fmt.Errorf("%w: producer %d", errBadBatch, producer64)
		}
		producer := uint32(producer64)
		log := logs(producer)
		if log == nil {
			return fmt.Errorf("%w: records of producer %d, which the worker does not run", errBadBatch, producer)
		}
		seq := func() uint64 {
			value := lastSeq[producer] + uint64(r.varint())
			lastSeq[producer] = value
			return value
		}
		switch op {
		case opSent:
			seq := seq()
			fate := verify.Fate(r.byte())
			if r.err == nil {
				if err := log.RecordSent(seq, fate); err != nil {
					return fmt.Errorf("producer %d: %w", producer, err)
				}
			}
		case opAck:
			seq := seq()
			flags := r.byte()
			if flags&ackNewWriterName != 0 {
				length := r.uvarint()
				if length > uint64(len(r.data)) {
					r.fail("transactional id past the end")
					break
				}
				lastName[producer] = string(r.data[:length])
				r.data = r.data[length:]
			}
			last := lastWriter[producer]
			writer := [2]int64{last[0] + r.varint(), last[1] + r.varint()}
			lastWriter[producer] = writer
			at := verify.Ack{Offset: verify.UnknownOffset, Writer: verify.Writer{TransactionalID: lastName[producer],
				ProducerID: writer[0], ProducerEpoch: int16(writer[1])}}
			if flags&ackHasOffset != 0 {
				partition := r.varint()
				if partition < 0 || partition > 1<<31-1 {
					r.fail("partition out of range")
					break
				}
				at.Partition = int32(partition)
				at.Offset = lastOffset[at.Partition] + r.varint()
				lastOffset[at.Partition] = at.Offset
			}
			if r.err == nil {
				log.RecordAcknowledged(seq, at)
			}
		case opErr:
			seq := seq()
			if r.err == nil {
				log.RecordErrored(seq)
			}
		case opEnding, opEnd:
			first, end := r.uvarint(), r.uvarint()
			var outcome byte
			if op == opEnd {
				outcome = r.byte()
			}
			if r.err == nil && first > end {
				r.fail(fmt.Sprintf("transaction [%d, %d)", first, end))
			}
			if r.err != nil {
				break
			}
			if op == opEnding {
				log.TransactionEnding(first, end)
			} else {
				log.RecordTransactionEnd(first, end, verify.TransactionOutcome(outcome))
			}
		default:
			r.fail(fmt.Sprintf("op %d", op))
		}
	}
	return r.err
}
