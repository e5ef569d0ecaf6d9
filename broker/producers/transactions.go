package producers

import "fmt"

// This file is the hook for transactions (issue: transactions). Data batches
// with the transactional bit open a transaction in Update (the producer's
// currentTxnFirstOffset); a COMMIT or ABORT control marker written by the
// transaction coordinator closes it here. The transaction issue adds the
// aborted-transaction index and KIP-890 verification on top of this.

// Marker is a transaction control marker written to this partition.
type Marker struct {
	ProducerID    int64
	ProducerEpoch int16
	// CoordinatorEpoch is the epoch of the coordinator that wrote it.
	CoordinatorEpoch int32
	// Offset is where the marker was (or will be) written.
	Offset int64
	// Commit is true for COMMIT, false for ABORT.
	Commit bool
}

// CompletedTransaction is what closing a transaction tells the partition.
type CompletedTransaction struct {
	ProducerID int64
	// FirstOffset is the transaction's first data offset on this
	// partition; equal to LastOffset when it wrote no data here.
	FirstOffset int64
	// LastOffset is the marker's offset.
	LastOffset int64
	// Aborted is set for an ABORT marker: the range goes into the
	// aborted-transaction index.
	Aborted bool
}

// CheckMarker validates a marker before it is written: its producer epoch
// must not be older than the producer's (ErrInvalidProducerEpoch) and its
// coordinator epoch not older than the newest seen (ErrCoordinatorFenced).
func (s *PartitionState) CheckMarker(m Marker) error {
	if m.ProducerID < 0 || m.ProducerEpoch < 0 {
		return fmt.Errorf("marker producer %d epoch %d: %w", m.ProducerID, m.ProducerEpoch, ErrInvalidBatch)
	}
	entry := s.producers[m.ProducerID]
	if entry == nil {
		return nil
	}
	if m.ProducerEpoch < entry.epoch {
		return fmt.Errorf("marker for producer %d: epoch %d is older than current epoch %d: %w",
			m.ProducerID, m.ProducerEpoch, entry.epoch, ErrInvalidProducerEpoch)
	}
	if m.CoordinatorEpoch < entry.coordinatorEpoch {
		return fmt.Errorf("marker for producer %d: coordinator epoch %d is older than %d: %w",
			m.ProducerID, m.CoordinatorEpoch, entry.coordinatorEpoch, ErrCoordinatorFenced)
	}
	return nil
}

// ApplyMarker records a marker that was written (or is replayed from the
// log): the producer moves to the marker's epoch (a bump forgets its cached
// batches, so its next batch must start at sequence 0), the coordinator epoch
// is remembered, and the open transaction, if any, is closed and returned.
func (s *PartitionState) ApplyMarker(m Marker) CompletedTransaction {
	entry := s.entry(m.ProducerID, m.ProducerEpoch)
	if m.ProducerEpoch > entry.epoch {
		entry.setEpoch(m.ProducerEpoch)
	}
	if m.CoordinatorEpoch > entry.coordinatorEpoch {
		entry.coordinatorEpoch = m.CoordinatorEpoch
	}
	entry.touched = true
	completed := CompletedTransaction{ProducerID: m.ProducerID, FirstOffset: m.Offset, LastOffset: m.Offset, Aborted: !m.Commit}
	if entry.currentTxnFirstOffset != noOffset {
		completed.FirstOffset = entry.currentTxnFirstOffset
		entry.currentTxnFirstOffset = noOffset
	}
	return completed
}

// FirstUnstableOffset returns the first offset of the oldest open
// transaction on the partition; ok is false when none is open (the last
// stable offset is then the high watermark). It walks all producers.
func (s *PartitionState) FirstUnstableOffset() (offset int64, ok bool) {
	offset = noOffset
	for _, entry := range s.producers {
		if entry.currentTxnFirstOffset != noOffset && (!ok || entry.currentTxnFirstOffset < offset) {
			offset, ok = entry.currentTxnFirstOffset, true
		}
	}
	return offset, ok
}
