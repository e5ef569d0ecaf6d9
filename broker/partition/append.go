package partition

import (
	"errors"
	"fmt"
	"math"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/storage"
)

// One append path (Kafka's UnifiedLog.append): every batch that enters a
// partition's log — a client's Produce ([Partition.AppendClient]), a
// follower's fetched batches ([Partition.AppendReplicated]), a
// coordinator's batch on its internal partition
// ([Partition.AppendCoordinatorBatch]) and a transaction marker
// ([Partition.AppendMarker]) — goes through [Partition.Append]. The
// batch headers are read once, by [Analyze], into an [AppendInfo];
// each origin decides only what differs (the checks before the write,
// offsets assigned or kept, the leader epoch stamped or kept, the
// producer state checked-and-updated or replayed), and the rest happens
// here once: the storage append, the active-segment and snapshot
// bookkeeping ([Partition.noteAppend]), the producer state, the
// aborted-transaction index (its one writer besides restart's
// [Partition.restoreAbortedIndex]), the last stable offset, and the
// wake-ups.

// AppendOptions is what an origin's caller knows beyond the records.
type AppendOptions struct {
	// LeaderEpoch: for OriginReplication the leader epoch of the fetch
	// (the partition must still follow at it), for OriginCoordinator the
	// shard's (the partition must still be led here at it); unused
	// otherwise.
	LeaderEpoch int32
	// guard is the KIP-890 verification guard of a client's transactional
	// batch (OriginClient, set by [Partition.AppendClient]), nil for any
	// other.
	guard *verificationGuard
	// Marker is the marker the one control batch of an OriginMarker
	// append carries.
	Marker producers.Marker
}

// Outcome is the outcome of an append.
type Outcome struct {
	// FirstOffset and LastOffset are the offsets of the batches written,
	// or of the original batch of a duplicate; -1 when nothing was written.
	FirstOffset, LastOffset int64
	// Written: the batches are in the log now.
	Written bool
	// Duplicate: an idempotent batch was written before; the offsets (and
	// MaxTimestamp) are the original's and nothing was written now.
	Duplicate    bool
	MaxTimestamp int64
}

// noAppend is the outcome of an append that wrote nothing.
var noAppend = Outcome{FirstOffset: -1, LastOffset: -1}

// Append appends records from origin under appendMu, then wakes the
// fetches waiting for data and, on a leader, advances the high watermark.
// info is the records' [Analyze] pass; for OriginReplication it is
// filled under appendMu here, because what is new depends on the log end.
func (p *Partition) Append(origin Origin, records []byte, info *AppendInfo, options *AppendOptions) (Outcome, error) {
	p.appendMu.Lock()
	outcome, err := p.appendLocked(origin, records, info, options)
	p.unlockAppend()
	switch {
	case err != nil:
	case origin == OriginReplication:
		// A follower wakes its waiters after every fetched answer it
		// took, even one that brought nothing new (as it always did;
		// harmless: a woken waiter re-reads and waits again). It does not
		// move a high watermark: that comes from the leader.
		p.wakeWaiters()
	case outcome.Written:
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
func (p *Partition) appendLocked(origin Origin, records []byte, info *AppendInfo, options *AppendOptions) (Outcome, error) {
	// Gates, in the order each origin always checked them.
	switch origin {
	case OriginReplication:
		role := p.role.Load()
		if role == nil || role.Leader == p.nodeID || role.LeaderEpoch != options.LeaderEpoch {
			return noAppend, ErrStaleFetch
		}
	case OriginClient:
		if options.guard != nil {
			if err := p.checkGuard(info.batches[0].producerID, options.guard); err != nil {
				return noAppend, err
			}
		}
	}
	if p.closed.Load() {
		return noAppend, fmt.Errorf("%w: %s was deleted", ErrUnknownTopicOrPartition, p.Name())
	}
	if p.abortIndexBehind {
		return noAppend, fmt.Errorf("%w: %s: an aborted transaction is missing from the index until restart", ErrStorage, p.Name())
	}
	if origin == OriginReplication {
		// A fresh slice, not info.batches: reusing the caller's array
		// here would make every caller's scratch array escape.
		analyzed, err := Analyze(OriginReplication, records, p.log.LogEndOffset(), 0, nil)
		if err != nil {
			return noAppend, fmt.Errorf("%s: %w", p.Name(), err)
		}
		*info = analyzed
	}
	if len(info.batches) == 0 {
		return noAppend, nil // a refetch: nothing past the log end
	}

	// The producer state's verdict, before anything is written.
	switch origin {
	case OriginClient:
		if info.idempotent() {
			verdict, err := p.producers.Check(info.batches[0].producerBatch())
			if err != nil {
				return noAppend, fmt.Errorf("%s: %w", p.Name(), err)
			}
			if verdict.Duplicate {
				return Outcome{FirstOffset: verdict.FirstOffset, LastOffset: verdict.LastOffset,
					Duplicate: true, MaxTimestamp: verdict.MaxTimestamp}, nil
			}
		}
	case OriginMarker:
		if err := p.producers.CheckMarker(options.Marker); err != nil {
			if errors.Is(err, producers.ErrInvalidProducerEpoch) {
				p.logger.Warn("stale transaction marker skipped", "partition", p.Name(), "error", err)
				return noAppend, nil
			}
			return noAppend, fmt.Errorf("%s: %w", p.Name(), err)
		}
	}

	// A leader stamps its epoch into what it writes (under appendMu, so
	// it matches the leader-epoch checkpoint); a follower keeps the
	// leader's, recorded below.
	if origin != OriginReplication {
		epoch, err := p.appendEpochLocked()
		if err != nil {
			return noAppend, err
		}
		if origin == OriginCoordinator && epoch != options.LeaderEpoch {
			return noAppend, fmt.Errorf("%w: %s is led at epoch %d, not %d", ErrNotLeader, p.Name(), epoch, options.LeaderEpoch)
		}
		info.stampLeaderEpoch(epoch)
	}

	var result storage.AppendResult
	var err error
	if origin == OriginReplication {
		result, err = p.log.AppendReplica(records[info.start:info.end])
	} else {
		result, err = p.log.Append(records[info.start:info.end])
	}
	if err != nil {
		return noAppend, fmt.Errorf("%w: append %s batches to %s: %w", ErrStorage, origin, p.Name(), err)
	}
	p.noteAppend(result)
	if origin != OriginReplication {
		info.assignOffsets(result.FirstOffset)
	}

	for i := range info.batches {
		batch := &info.batches[i]
		if origin == OriginReplication {
			if err := p.epochs.assign(batch.partitionLeaderEpoch, batch.baseOffset); err != nil {
				return noAppend, err
			}
		}
		if err := p.applyProducerBatchLocked(origin, batch); err != nil {
			return noAppend, err
		}
	}
	if origin == OriginClient {
		// A client's batches only open transactions (applyProducerBatchLocked
		// moved unstableOffset when one opened the oldest): no walk of
		// every producer.
		p.publishLastStable()
	} else {
		// Markers close transactions and replayed batches may be ones the
		// state ignores: recompute.
		p.refreshUnstable()
	}
	return Outcome{FirstOffset: result.FirstOffset, LastOffset: result.LastOffset, Written: true}, nil
}

// AppendProduced appends a client's records after the one pass over them
// (with no max.message.bytes: the topic's limit is the broker's Produce
// handler's); see [Partition.AppendClient].
func (p *Partition) AppendProduced(records []byte, verifier TxnVerifier) (Outcome, error) {
	var scratch [1]BatchInfo
	info, err := Analyze(OriginClient, records, 0, math.MaxInt64, scratch[:0])
	if err != nil {
		return noAppend, fmt.Errorf("%s: %w", p.Name(), err)
	}
	return p.AppendClient(records, &info, verifier)
}

// AppendClient appends a Produce request's records for this partition
// (info is their [Analyze] pass) through the one append path as
// OriginClient. Idempotent data must be one batch; a transactional batch
// is verified with the coordinator first (KIP-890, through verifier),
// outside appendMu, and a transactional batch without a producer id is
// refused. Under appendMu the idempotent batch is checked against the
// producer state, appended and recorded: a duplicate of one of the
// producer's 5 newest batches is answered with the original offsets and
// not written; an out-of-order, fenced or unknown-producer batch is
// refused with nothing written.
func (p *Partition) AppendClient(records []byte, info *AppendInfo, verifier TxnVerifier) (Outcome, error) {
	var options AppendOptions
	switch {
	case len(info.batches) > 1 && info.producerBatches > 0:
		return noAppend, errIdempotentMultiBatch
	case info.idempotent() && info.batches[0].transactional():
		guard, err := p.verifyTransactional(verifier, info.batches[0].view)
		if err != nil {
			return noAppend, err
		}
		options.guard = guard
	case info.transactional:
		return noAppend, fmt.Errorf("%w: transactional batch without a producer id", ErrInvalidRecord)
	}
	return p.Append(OriginClient, records, info, &options)
}

// AppendCoordinatorBatch appends one batch a coordinator built (offsets,
// group metadata, a marker, a transaction state record) as the
// partition's leader at leaderEpoch and derives the producer state from it
// exactly as a follower does from the replicated copy, through the one
// append path as OriginCoordinator ([Partition.appendLocked]). It returns
// the batch's last offset; NOT_LEADER_OR_FOLLOWER when the partition is no
// longer led here at that epoch.
func (p *Partition) AppendCoordinatorBatch(records []byte, leaderEpoch int32) (int64, error) {
	var scratch [1]BatchInfo
	info, err := Analyze(OriginCoordinator, records, 0, 0, scratch[:0])
	if err != nil {
		return -1, fmt.Errorf("coordinator batch for %s: %w", p.Name(), err)
	}
	outcome, err := p.Append(OriginCoordinator, records, &info, &AppendOptions{LeaderEpoch: leaderEpoch})
	return outcome.LastOffset, err
}

// applyProducerBatchLocked records one appended batch, at its offsets in
// the log, in the producer state: a client's (checked) batch through
// Update, any other origin's through replay, as at startup. It forgets
// the verification guard of a producer whose transaction a marker ended,
// and writes the aborted-transaction index entry of an ABORT marker
// (caller holds appendMu).
func (p *Partition) applyProducerBatchLocked(origin Origin, batch *BatchInfo) error {
	if batch.producerID < 0 {
		return nil
	}
	p.producersDirty = true
	if origin == OriginClient {
		state := batch.producerBatch()
		p.producers.Update(state)
		if state.Transactional && p.unstableOffset < 0 {
			p.unstableOffset = state.FirstOffset
		}
		return nil
	}
	completed, err := replayBatch(p.producers, batch)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStorage, p.Name(), err)
	}
	if batch.control() {
		delete(p.verifications, batch.producerID)
	}
	if !completed.Aborted {
		return nil
	}
	// Invariant: an aborted transaction is in the aborted index before the
	// LSO moves past its marker. A read_committed fetch reads the LSO
	// first and the index after it (the broker's readPartition), and returns every
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
	if hook := BeforeAbortedIndexAppend.Load(); hook != nil {
		err = (*hook)(p.Name())
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
		return fmt.Errorf("%w: aborted transaction index of %s: %w", ErrStorage, p.Name(), err)
	}
	return nil
}
