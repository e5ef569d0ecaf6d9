package producers

import "github.com/exactly-eos/exactly/internal/invariants"

// Run-time checks of a producer entry's invariants (the comments on
// producerEntry), compiled in only with the invariants build tag
// (internal/invariants). They run after Update, the path Check guards;
// Replay rebuilds from whatever the log holds and is not checked. Each
// check is an if around invariants.Fail, so the hot path formats (and
// allocates) only when an invariant breaks.

// checkUpdated checks, in invariants builds, the producer's entry after
// Update recorded b: its epoch did not go back (it was previousEpoch, or
// the producer was new when known is false), and the cached batches are
// of that epoch with consecutive sequences and increasing offsets.
func (s *PartitionState) checkUpdated(b Batch, previousEpoch int16, known bool) {
	entry := s.producers[b.ProducerID]
	if entry == nil {
		return // not idempotent: no state
	}
	if known && entry.epoch < previousEpoch {
		invariants.Fail("producer %d: epoch went from %d back to %d", b.ProducerID, previousEpoch, entry.epoch)
	}
	if entry.count < 1 || entry.count > MaxCachedBatches {
		invariants.Fail("producer %d: %d cached batches after an update", b.ProducerID, entry.count)
	}
	newest := entry.batches[entry.newest]
	if newest.firstSequence != b.BaseSequence || newest.firstOffset != b.FirstOffset {
		invariants.Fail("producer %d: newest cached batch %+v is not the batch just recorded %+v", b.ProducerID, newest, b)
	}
	for i := 1; i < entry.count; i++ {
		newer := entry.batches[(entry.newest-i+1+MaxCachedBatches)%MaxCachedBatches]
		older := entry.batches[(entry.newest-i+MaxCachedBatches)%MaxCachedBatches]
		if newer.firstSequence != nextSequence(older.lastSequence) {
			invariants.Fail("producer %d epoch %d: cached batch with sequences %d..%d follows %d..%d",
				b.ProducerID, entry.epoch, newer.firstSequence, newer.lastSequence, older.firstSequence, older.lastSequence)
		}
		if newer.firstOffset <= older.lastOffset || newer.firstOffset > newer.lastOffset {
			invariants.Fail("producer %d epoch %d: cached batch at offsets %d..%d follows %d..%d",
				b.ProducerID, entry.epoch, newer.firstOffset, newer.lastOffset, older.firstOffset, older.lastOffset)
		}
	}
}

// epochOf returns the producer's current epoch and whether it is known.
func (s *PartitionState) epochOf(producerID int64) (int16, bool) {
	if entry := s.producers[producerID]; entry != nil {
		return entry.epoch, true
	}
	return 0, false
}
