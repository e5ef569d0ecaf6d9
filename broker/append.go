package broker

import (
	"errors"
	"fmt"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/storage"
)

// One append path (Kafka's UnifiedLog.append): every batch that enters a
// partition's log — a client's Produce ([partition.appendProduced]), a
// follower's fetched batches ([partition.appendReplicated]), a
// coordinator's batch on its internal partition
// ([partition.appendCoordinatorBatch]) and a transaction marker
// ([partition.appendMarker]) — goes through [partition.append]. The
// batch headers are read once, by [analyzeRecords], into an [appendInfo];
// each origin decides only what differs (the checks before the write,
// offsets assigned or kept, the leader epoch stamped or kept, the
// producer state checked-and-updated or replayed), and the rest happens
// here once: the storage append, the active-segment and snapshot
// bookkeeping ([partition.noteAppend]), the producer state, the
// aborted-transaction index (its one writer besides restart's
// [partition.restoreAbortedIndex]), the last stable offset, and the
// wake-ups.

// appendOptions is what an origin's caller knows beyond the records.
type appendOptions struct {
	// leaderEpoch: for originReplication the leader epoch of the fetch
	// (the partition must still follow at it), for originCoordinator the
	// shard's (the partition must still be led here at it); unused
	// otherwise.
	leaderEpoch int32
	// guard is the KIP-890 verification guard of a client's transactional
	// batch (originClient), nil for any other.
	guard *verificationGuard
	// marker is the marker the one control batch of an originMarker
	// append carries.
	marker producers.Marker
}

// appendOutcome is the outcome of an append.
type appendOutcome struct {
	// firstOffset and lastOffset are the offsets of the batches written,
	// or of the original batch of a duplicate; -1 when nothing was written.
	firstOffset, lastOffset int64
	// written: the batches are in the log now.
	written bool
	// duplicate: an idempotent batch was written before; the offsets (and
	// maxTimestamp) are the original's and nothing was written now.
	duplicate    bool
	maxTimestamp int64
}

// noAppend is the outcome of an append that wrote nothing.
var noAppend = appendOutcome{firstOffset: -1, lastOffset: -1}

// append appends records from origin under appendMu, then wakes the
// fetches waiting for data and, on a leader, advances the high watermark.
// info is the records' [analyzeRecords] pass; for originReplication it is
// filled under appendMu here, because what is new depends on the log end.
func (p *partition) append(origin appendOrigin, records []byte, info *appendInfo, options *appendOptions) (appendOutcome, error) {
	p.appendMu.Lock()
	outcome, err := p.appendLocked(origin, records, info, options)
	p.unlockAppend()
	switch {
	case err != nil:
	case origin == originReplication:
		// A follower wakes its waiters after every fetched answer it
		// took, even one that brought nothing new (as it always did;
		// harmless: a woken waiter re-reads and waits again). It does not
		// move a high watermark: that comes from the leader.
		p.wakeWaiters()
	case outcome.written:
		p.wakeWaiters()
		p.leaderAppended()
	}
	return outcome, err
}

// appendLocked is the one append path's critical section (caller holds
// appendMu, released through unlockAppend so that a snapshot prepared
// here is written after it). Nothing is written when it fails before the
// storage append. A failure after it leaves the batches in the log: a
// failed aborted-index write sets abortIndexBehind (the partition refuses
// appends until a restart restores the entry); a follower's failed
// leader-epoch checkpoint or replay goes back to the fetcher.
func (p *partition) appendLocked(origin appendOrigin, records []byte, info *appendInfo, options *appendOptions) (appendOutcome, error) {
	// Gates, in the order each origin always checked them.
	switch origin {
	case originReplication:
		role := p.role.Load()
		if role == nil || role.leader == p.nodeID || role.leaderEpoch != options.leaderEpoch {
			return noAppend, errStaleFetch
		}
	case originClient:
		if options.guard != nil {
			if err := p.checkGuard(info.batches[0].producerID, options.guard); err != nil {
				return noAppend, err
			}
		}
	}
	if p.closed.Load() {
		return noAppend, fmt.Errorf("%w: %s was deleted", errUnknownTopic, p.name())
	}
	if p.abortIndexBehind {
		return noAppend, fmt.Errorf("%w: %s: an aborted transaction is missing from the index until restart", errStorage, p.name())
	}
	if origin == originReplication {
		// A fresh slice, not info.batches: reusing the caller's array
		// here would make every caller's scratch array escape.
		analyzed, err := analyzeRecords(originReplication, records, p.log.LogEndOffset(), 0, nil)
		if err != nil {
			return noAppend, fmt.Errorf("%s: %w", p.name(), err)
		}
		*info = analyzed
	}
	if len(info.batches) == 0 {
		return noAppend, nil // a refetch: nothing past the log end
	}

	// The producer state's verdict, before anything is written.
	switch origin {
	case originClient:
		if info.idempotent() {
			verdict, err := p.producers.Check(info.batches[0].producerBatch())
			if err != nil {
				return noAppend, fmt.Errorf("%s: %w", p.name(), err)
			}
			if verdict.Duplicate {
				return appendOutcome{firstOffset: verdict.FirstOffset, lastOffset: verdict.LastOffset,
					duplicate: true, maxTimestamp: verdict.MaxTimestamp}, nil
			}
		}
	case originMarker:
		if err := p.producers.CheckMarker(options.marker); err != nil {
			if errors.Is(err, producers.ErrInvalidProducerEpoch) {
				p.logger.Warn("stale transaction marker skipped", "partition", p.name(), "error", err)
				return noAppend, nil
			}
			return noAppend, fmt.Errorf("%s: %w", p.name(), err)
		}
	}

	// A leader stamps its epoch into what it writes (under appendMu, so
	// it matches the leader-epoch checkpoint); a follower keeps the
	// leader's, recorded below.
	if origin != originReplication {
		epoch, err := p.appendEpochLocked()
		if err != nil {
			return noAppend, err
		}
		if origin == originCoordinator && epoch != options.leaderEpoch {
			return noAppend, fmt.Errorf("%w: %s is led at epoch %d, not %d", errNotLeader, p.name(), epoch, options.leaderEpoch)
		}
		info.stampLeaderEpoch(epoch)
	}

	var result storage.AppendResult
	var err error
	if origin == originReplication {
		result, err = p.log.AppendReplica(records[info.start:info.end])
	} else {
		result, err = p.log.Append(records[info.start:info.end])
	}
	if err != nil {
		return noAppend, fmt.Errorf("%w: append %s batches to %s: %w", errStorage, origin, p.name(), err)
	}
	p.noteAppend(result)
	if origin != originReplication {
		info.assignOffsets(result.FirstOffset)
	}

	for i := range info.batches {
		batch := &info.batches[i]
		if origin == originReplication {
			if err := p.epochs.assign(batch.partitionLeaderEpoch, batch.baseOffset); err != nil {
				return noAppend, err
			}
		}
		if err := p.applyProducerBatchLocked(origin, batch); err != nil {
			return noAppend, err
		}
	}
	if origin == originClient {
		// A client's batches only open transactions (applyProducerBatchLocked
		// moved unstableOffset when one opened the oldest): no walk of
		// every producer.
		p.publishLastStable()
	} else {
		// Markers close transactions and replayed batches may be ones the
		// state ignores: recompute.
		p.refreshUnstable()
	}
	return appendOutcome{firstOffset: result.FirstOffset, lastOffset: result.LastOffset, written: true}, nil
}

// applyProducerBatchLocked records one appended batch, at its offsets in
// the log, in the producer state: a client's (checked) batch through
// Update, any other origin's through replay, as at startup. It forgets
// the verification guard of a producer whose transaction a marker ended,
// and writes the aborted-transaction index entry of an ABORT marker
// (caller holds appendMu).
func (p *partition) applyProducerBatchLocked(origin appendOrigin, batch *batchInfo) error {
	if batch.producerID < 0 {
		return nil
	}
	p.producersDirty = true
	if origin == originClient {
		state := batch.producerBatch()
		p.producers.Update(state)
		if state.Transactional && p.unstableOffset < 0 {
			p.unstableOffset = state.FirstOffset
		}
		return nil
	}
	completed, err := replayBatch(p.producers, batch)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errStorage, p.name(), err)
	}
	if batch.control() {
		delete(p.verifications, batch.producerID)
	}
	if !completed.Aborted {
		return nil
	}
	// Invariant: an aborted transaction is in the aborted index before the
	// LSO moves past its marker. A read_committed fetch reads the LSO
	// first and the index after it (readPartition), and returns every
	// record below the LSO that the index does not name; publishing the
	// LSO first would open a window (the index append syncs a file) in
	// which a fetch reads the aborted records as committed. Consumers
	// that fetched in that window lost nothing visible: they processed
	// the aborted records, and an exactly-once pipeline copied them into
	// its committed output.
	lastStable := batch.lastOffset() + 1
	if offset, ok := p.producers.FirstUnstableOffset(); ok {
		lastStable = offset
	}
	aborted := storage.AbortedTxn{ProducerID: completed.ProducerID, FirstOffset: completed.FirstOffset,
		LastOffset: completed.LastOffset, LastStableOffset: lastStable}
	if hook := beforeAbortedIndexAppend.Load(); hook != nil {
		err = (*hook)(p.name())
	}
	if err == nil {
		err = p.log.AppendAbortedTxn(aborted)
	}
	if err != nil {
		// The LSO stays below the aborted records: the log has failed and
		// refuses further appends, and so does the partition
		// (abortIndexBehind); no snapshot is taken, so the next start
		// replays the marker and restores its entry.
		p.abortIndexBehind = true
		return fmt.Errorf("%w: aborted transaction index of %s: %w", errStorage, p.name(), err)
	}
	return nil
}
