package producers

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/internal/invariants"
)

// MaxCachedBatches is how many of a producer's newest batches a partition
// remembers for duplicate detection, as in Kafka. A client keeps at most this
// many requests in flight per partition, so every retry it can send is found.
const MaxCachedBatches = 5

// DefaultExpirationAge is Kafka's producer.id.expiration.ms default (1 day).
const DefaultExpirationAge = 24 * time.Hour

// noOffset marks an absent offset (no open transaction, no batch).
const noOffset int64 = -1

// Batch is what the state machine needs from a record batch header.
type Batch struct {
	// ProducerID is the batch's producer id; negative means the batch is
	// not idempotent and carries no state.
	ProducerID int64
	// ProducerEpoch is the producer's epoch.
	ProducerEpoch int16
	// BaseSequence is the sequence of the first record.
	BaseSequence int32
	// LastSequence is the sequence of the last record; see LastSequence.
	LastSequence int32
	// FirstOffset and LastOffset are the log offsets the batch was (or
	// will be) written at. Check ignores them; Update and Replay record them.
	FirstOffset, LastOffset int64
	// MaxTimestamp is the batch header's max timestamp (ms).
	MaxTimestamp int64
	// Transactional is the batch's transactional attribute bit.
	Transactional bool
}

// LastSequence returns the sequence of the last record of a batch that starts
// at base and holds count records (count >= 1), wrapping as Kafka does: the
// sequence after math.MaxInt32 is 0.
func LastSequence(base, count int32) int32 {
	return int32((int64(base) + int64(count) - 1) % (math.MaxInt32 + 1))
}

// nextSequence is the sequence that must follow seq.
func nextSequence(seq int32) int32 {
	if seq == math.MaxInt32 {
		return 0
	}
	return seq + 1
}

// Verdict is Check's answer for a batch that may be written (or was already).
type Verdict struct {
	// Duplicate reports that the batch was already written: the caller
	// must not write it again and answers success with these offsets.
	Duplicate bool
	// FirstOffset and LastOffset are the offsets of the original batch
	// when Duplicate is set.
	FirstOffset, LastOffset int64
	// MaxTimestamp is the original batch's max timestamp when Duplicate
	// is set (the log append time for LogAppendTime topics).
	MaxTimestamp int64
}

// Options configures a PartitionState.
type Options struct {
	// ExpirationAge is how long a producer may stay idle before
	// ExpireIdle forgets it (Kafka's producer.id.expiration.ms). Zero
	// means DefaultExpirationAge.
	ExpirationAge time.Duration
	// Now is the clock; nil means time.Now. Tests inject a fake one.
	Now func() time.Time
	// FS is the file system snapshots are read and written through; nil
	// means the OS's. Tests inject a storage.FaultFS.
	FS storage.FS
}

func (o Options) withDefaults() Options {
	if o.ExpirationAge <= 0 {
		o.ExpirationAge = DefaultExpirationAge
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FS == nil {
		o.FS = storage.OSFS{}
	}
	return o
}

// batchMetadata is what is remembered of one appended batch.
type batchMetadata struct {
	firstSequence, lastSequence int32
	firstOffset, lastOffset     int64
	maxTimestamp                int64
}

// producerEntry is one producer's state on one partition.
type producerEntry struct {
	producerID int64
	// epoch is the newest epoch seen from this producer on this
	// partition; it never decreases.
	epoch int16
	// batches is a ring of the newest batches of the current epoch:
	// batches[newest] is the newest, then newest-1 (mod 5) and so on, count
	// of them valid. Invariant: all were appended with epoch, each one's
	// firstSequence is nextSequence of the previous one's lastSequence, and
	// offsets increase. An epoch change empties the ring.
	batches [MaxCachedBatches]batchMetadata
	newest  int
	count   int
	// coordinatorEpoch is the coordinator epoch of the newest transaction
	// marker for this producer, -1 if none.
	coordinatorEpoch int32
	// touched is set by every Update, Replay and marker, and turned into
	// lastUpdateMillis by the next ExpireIdle sweep: the hot path never
	// reads the clock (time.Now costs more than the rest of Check+Update).
	touched bool
	// lastUpdateMillis is the broker time (Unix ms) of the first sweep (or
	// snapshot) after the newest update. Invariant: it is never earlier
	// than the producer's real last activity, so expiry can only be late
	// (by at most one sweep interval), never early.
	lastUpdateMillis int64
	// currentTxnFirstOffset is the offset of this producer's first batch
	// in its open transaction on this partition, -1 if none is open.
	// Hook for the transaction issue: the last stable offset is the
	// minimum over producers (FirstUnstableOffset).
	currentTxnFirstOffset int64
}

// newestBatch returns the newest cached batch; ok is false if none.
func (e *producerEntry) newestBatch() (batchMetadata, bool) {
	if e.count == 0 {
		return batchMetadata{}, false
	}
	return e.batches[e.newest], true
}

// findBatch returns the cached batch with exactly this sequence range.
func (e *producerEntry) findBatch(first, last int32) (batchMetadata, bool) {
	for i := 0; i < e.count; i++ {
		m := e.batches[(e.newest-i+MaxCachedBatches)%MaxCachedBatches]
		if m.firstSequence == first && m.lastSequence == last {
			return m, true
		}
	}
	return batchMetadata{}, false
}

// push records a batch as the newest, forgetting the oldest beyond 5.
func (e *producerEntry) push(m batchMetadata) {
	e.newest = (e.newest + 1) % MaxCachedBatches
	e.batches[e.newest] = m
	if e.count < MaxCachedBatches {
		e.count++
	}
}

// setEpoch moves the entry to epoch; a new epoch forgets the old batches,
// whose sequences no longer count (the producer restarts at sequence 0).
func (e *producerEntry) setEpoch(epoch int16) {
	if epoch != e.epoch {
		e.epoch = epoch
		e.count = 0
		e.newest = 0
	}
}

// PartitionState is the idempotent-producer state of one partition.
//
// It is not safe for concurrent use. Its owner (the partition, under the
// partition's append lock) serializes every call, and calls Check, then
// appends the batch, then Update, without releasing the lock in between, so
// that no other batch of the same producer can be checked against state that
// misses an earlier accepted batch.
type PartitionState struct {
	options   Options
	producers map[int64]*producerEntry
}

// NewPartitionState returns an empty state.
func NewPartitionState(options Options) *PartitionState {
	return &PartitionState{options: options.withDefaults(), producers: make(map[int64]*producerEntry)}
}

// Len returns how many producers the partition tracks.
func (s *PartitionState) Len() int { return len(s.producers) }

// Check decides what to do with an incoming client batch without changing
// any state. A nil error with Duplicate unset means "append it, then call
// Update". Rules, in Kafka's order:
//
//   - no producer id: append, no state;
//   - same epoch and the (first, last) sequence range of one of the 5
//     cached batches: Duplicate with the original offsets;
//   - epoch older than the current one: ErrInvalidProducerEpoch;
//   - unknown producer: sequence 0 appends, anything else ErrUnknownProducerID;
//   - newer epoch: sequence 0 appends, anything else ErrOutOfOrderSequence;
//   - same epoch: the successor of the last sequence appends (after
//     math.MaxInt32 comes 0); anything else ErrOutOfOrderSequence (this
//     includes a retry older than the 5-batch window).
//
// The common in-order path does not allocate.
func (s *PartitionState) Check(b Batch) (Verdict, error) {
	if b.ProducerID < 0 {
		return Verdict{}, nil
	}
	if b.ProducerEpoch < 0 || b.BaseSequence < 0 || b.LastSequence < 0 {
		return Verdict{}, fmt.Errorf("producer %d: epoch %d, sequences %d..%d: %w",
			b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.LastSequence, ErrInvalidBatch)
	}
	entry := s.producers[b.ProducerID]
	if entry == nil {
		if b.BaseSequence != 0 {
			return Verdict{}, fmt.Errorf("producer %d epoch %d: no state on this partition and first sequence %d is not 0: %w",
				b.ProducerID, b.ProducerEpoch, b.BaseSequence, ErrUnknownProducerID)
		}
		return Verdict{}, nil
	}
	switch {
	case b.ProducerEpoch == entry.epoch:
		if m, ok := entry.findBatch(b.BaseSequence, b.LastSequence); ok {
			return Verdict{Duplicate: true, FirstOffset: m.firstOffset, LastOffset: m.lastOffset, MaxTimestamp: m.maxTimestamp}, nil
		}
	case b.ProducerEpoch < entry.epoch:
		return Verdict{}, fmt.Errorf("producer %d: batch epoch %d is older than current epoch %d: %w",
			b.ProducerID, b.ProducerEpoch, entry.epoch, ErrInvalidProducerEpoch)
	default: // a newer epoch restarts the sequence at 0
		if b.BaseSequence != 0 {
			return Verdict{}, fmt.Errorf("producer %d: new epoch %d (current %d) must start at sequence 0, got %d: %w",
				b.ProducerID, b.ProducerEpoch, entry.epoch, b.BaseSequence, ErrOutOfOrderSequence)
		}
		return Verdict{}, nil
	}
	expected := int32(0) // same epoch, no batch yet (a marker set the epoch)
	if m, ok := entry.newestBatch(); ok {
		expected = nextSequence(m.lastSequence)
	}
	if b.BaseSequence != expected {
		return Verdict{}, fmt.Errorf("producer %d epoch %d: first sequence %d (last %d), expected %d: %w",
			b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.LastSequence, expected, ErrOutOfOrderSequence)
	}
	return Verdict{}, nil
}

// Update records a batch that Check accepted and the caller appended at
// [b.FirstOffset, b.LastOffset]. It does not validate: the batch is in the
// log. Creating a producer's entry allocates; later updates do not, nor do
// they read the clock.
func (s *PartitionState) Update(b Batch) {
	if invariants.Enabled {
		previousEpoch, known := s.epochOf(b.ProducerID)
		defer s.checkUpdated(b, previousEpoch, known)
	}
	s.record(b)
}

// record remembers an appended batch (Update and Replay).
func (s *PartitionState) record(b Batch) {
	if b.ProducerID < 0 {
		return
	}
	entry := s.entry(b.ProducerID, b.ProducerEpoch)
	entry.setEpoch(b.ProducerEpoch)
	entry.push(batchMetadata{
		firstSequence: b.BaseSequence,
		lastSequence:  b.LastSequence,
		firstOffset:   b.FirstOffset,
		lastOffset:    b.LastOffset,
		maxTimestamp:  b.MaxTimestamp,
	})
	entry.touched = true
	if b.Transactional && entry.currentTxnFirstOffset == noOffset {
		entry.currentTxnFirstOffset = b.FirstOffset
	}
}

// entry returns the producer's entry, creating it at epoch if absent.
func (s *PartitionState) entry(producerID int64, epoch int16) *producerEntry {
	entry := s.producers[producerID]
	if entry == nil {
		entry = &producerEntry{
			producerID:            producerID,
			epoch:                 epoch,
			coordinatorEpoch:      -1,
			currentTxnFirstOffset: noOffset,
		}
		s.producers[producerID] = entry
	}
	return entry
}

// Replay rebuilds state from a data batch header found in the log, in log
// order, after LoadLatestSnapshot (the storage layer's header scan hands
// over the batches from the snapshot offset to the log end). It does not
// validate: the log is the truth. A batch at or below the producer's newest
// known offset, or with an older epoch than the known one, is already
// accounted for and ignored, so replaying an overlapping range is harmless.
//
// A replayed producer counts as active now (its idle clock restarts at the
// next sweep), not at the batch's timestamp: a timestamp is the client's
// clock (or arbitrary), and trusting it could expire an active producer right
// after a restart and lose its duplicate detection. The cost is that a
// producer lives up to one ExpirationAge longer across a restart.
func (s *PartitionState) Replay(b Batch) {
	if b.ProducerID < 0 {
		return
	}
	if entry := s.producers[b.ProducerID]; entry != nil {
		if b.ProducerEpoch < entry.epoch {
			return // overlapping replay: the log never holds an older epoch after a newer one
		}
		if m, ok := entry.newestBatch(); ok && b.LastOffset <= m.lastOffset {
			return
		}
	}
	s.record(b)
}

// ProducerInfo describes one producer, as DescribeProducers (API 61) needs.
type ProducerInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence is the newest batch's last sequence, -1 if none.
	LastSequence int32
	// LastTimestamp is the newest batch's max timestamp, -1 if none.
	LastTimestamp int64
	// CoordinatorEpoch is the newest marker's coordinator epoch, -1 if none.
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of the open transaction,
	// -1 if none.
	CurrentTxnStartOffset int64
}

// Producers lists the partition's producers ordered by producer id.
func (s *PartitionState) Producers() []ProducerInfo {
	infos := make([]ProducerInfo, 0, len(s.producers))
	for _, entry := range s.producers {
		info := ProducerInfo{
			ProducerID:            entry.producerID,
			ProducerEpoch:         entry.epoch,
			LastSequence:          -1,
			LastTimestamp:         -1,
			CoordinatorEpoch:      entry.coordinatorEpoch,
			CurrentTxnStartOffset: entry.currentTxnFirstOffset,
		}
		if m, ok := entry.newestBatch(); ok {
			info.LastSequence = m.lastSequence
			info.LastTimestamp = m.maxTimestamp
		}
		infos = append(infos, info)
	}
	slices.SortFunc(infos, func(a, b ProducerInfo) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	return infos
}

// LastBatchOffsets maps each producer with a cached batch to the first
// offset of its newest one: the batch the log cleaner must keep (emptied
// if need be) so that a restart that replays the log still finds the
// producer's epoch and last sequence.
func (s *PartitionState) LastBatchOffsets() map[int64]int64 {
	out := make(map[int64]int64, len(s.producers))
	for id, entry := range s.producers {
		if m, ok := entry.newestBatch(); ok {
			out[id] = m.firstOffset
		}
	}
	return out
}

// ExpireIdle forgets producers idle for at least ExpirationAge and returns
// how many it dropped. The owner calls it periodically (Kafka:
// producer.id.expiration.check.interval.ms, 10 minutes); each call also
// stamps the producers updated since the previous call with the current
// time, so idleness is measured from the first sweep after a producer's last
// batch: a producer expires between ExpirationAge and ExpirationAge plus one
// interval after it went quiet. A producer with an open transaction is kept,
// as in Kafka: a marker must complete its transaction first.
func (s *PartitionState) ExpireIdle() int {
	now := s.options.Now()
	nowMillis := now.UnixMilli()
	cutoff := now.Add(-s.options.ExpirationAge).UnixMilli()
	dropped := 0
	for producerID, entry := range s.producers {
		if entry.touched {
			entry.touched = false
			entry.lastUpdateMillis = nowMillis
			continue
		}
		if entry.currentTxnFirstOffset == noOffset && entry.lastUpdateMillis <= cutoff {
			delete(s.producers, producerID)
			dropped++
		}
	}
	return dropped
}
