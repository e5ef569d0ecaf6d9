package broker

import (
	"errors"
	"fmt"

	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/wire"
)

// The follower side of one partition: appending the leader's batches,
// deriving producer and transaction state from them, learning the high
// watermark, and truncating a divergent tail.
//
// A follower appends the leader's batches byte for byte: offsets are the
// leader's (Log.AppendReplica keeps them; a batch may start past the
// local log end where the leader's compaction removed batches — a fetch
// from a removed offset returns the next batch — and the follower's log
// then has the same gap) and so is each batch's leader epoch (never
// re-stamped). A batch that starts below the log end but ends past it
// does not continue the log: the fetcher truncates again. From each batch it rebuilds
// what the leader derived when it appended it: idempotent producers'
// sequences and epochs (producers.Replay), open transactions and the last
// stable offset, and, for an ABORT marker, the aborted-transaction index
// entry — so that as leader it deduplicates a retried batch and serves
// read_committed as the old leader did. A new epoch seen in a batch is
// added to the leader-epoch checkpoint at that batch's offset.

// errDiverged: the leader's batches do not continue the local log; the
// fetcher truncates again.
var errDiverged = errors.New("fetched batches do not continue the log")

// errStaleFetch: a fetch answer for a role the partition no longer has.
var errStaleFetch = errors.New("fetch answer for an old leader epoch")

// appendReplicated appends batches fetched from the leader at leader epoch
// epoch. Batches wholly below the log end (a refetch) are skipped, a
// trailing partial batch is ignored.
func (p *partition) appendReplicated(records []byte, epoch int32) error {
	p.appendMu.Lock()
	err := p.appendReplicatedLocked(records, epoch)
	p.unlockAppend()
	if err == nil {
		p.wakeWaiters()
	}
	return err
}

func (p *partition) appendReplicatedLocked(records []byte, epoch int32) error {
	role := p.role.Load()
	if role == nil || role.leader == p.nodeID || role.leaderEpoch != epoch {
		return errStaleFetch
	}
	if p.closed.Load() {
		return fmt.Errorf("%w: %s was deleted", errUnknownTopic, p.name())
	}
	if p.abortIndexBehind {
		return fmt.Errorf("%w: %s: an aborted transaction is missing from the index until restart", errStorage, p.name())
	}
	kept, views, err := continuingBatches(records, p.log.LogEndOffset())
	if err != nil || len(views) == 0 {
		return err
	}
	result, err := p.log.AppendReplica(kept)
	if err != nil {
		return fmt.Errorf("%w: append replica batches to %s: %w", errStorage, p.name(), err)
	}
	p.noteAppend(result)
	for _, batch := range views {
		if err := p.epochs.assign(batch.PartitionLeaderEpoch(), batch.BaseOffset()); err != nil {
			return err
		}
		if err := p.applyReplicatedBatch(batch); err != nil {
			return err
		}
	}
	p.refreshUnstable()
	return nil
}

// continuingBatches returns the bytes of the whole batches of records
// from the first one past logEnd on (at logEnd, or after a gap the
// leader's compaction left), and their views; errDiverged when a batch
// starts below logEnd and ends at or past it.
func continuingBatches(records []byte, logEnd int64) ([]byte, []wire.BatchView, error) {
	var views []wire.BatchView
	start, end := -1, 0
	next := logEnd
	for position := 0; position < len(records); {
		batch, err := wire.ParseBatch(records[position:])
		if err != nil {
			break // a partial batch at the end of the response
		}
		size := batch.Size()
		if batch.LastOffset() >= next {
			if batch.BaseOffset() < next {
				return nil, nil, fmt.Errorf("%w: batch at %d, log end %d", errDiverged, batch.BaseOffset(), next)
			}
			if err := batch.Validate(); err != nil {
				return nil, nil, fmt.Errorf("replica batch at %d: %w", batch.BaseOffset(), err)
			}
			if start < 0 {
				start = position
			}
			views = append(views, batch)
			next = batch.LastOffset() + 1
			end = position + size
		}
		position += size
	}
	if start < 0 {
		return nil, nil, nil
	}
	return records[start:end], views, nil
}

// applyReplicatedBatch derives producer and transaction state from one
// appended batch, as replay at startup does (caller holds appendMu).
func (p *partition) applyReplicatedBatch(batch wire.BatchView) error {
	completed, err := replayBatch(p.producers, batch)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errStorage, p.name(), err)
	}
	if batch.ProducerID() < 0 {
		return nil
	}
	p.producersDirty = true
	if batch.Control() {
		delete(p.verifications, batch.ProducerID())
	}
	if !completed.Aborted {
		return nil
	}
	lastStable := batch.LastOffset() + 1
	if offset, ok := p.producers.FirstUnstableOffset(); ok {
		lastStable = offset
	}
	aborted := storage.AbortedTxn{ProducerID: completed.ProducerID, FirstOffset: completed.FirstOffset,
		LastOffset: completed.LastOffset, LastStableOffset: lastStable}
	if err := p.log.AppendAbortedTxn(aborted); err != nil {
		// As for a leader's marker (appendMarkerLocked): no snapshot past
		// it, so a restart replays the marker and restores the entry.
		p.abortIndexBehind = true
		return fmt.Errorf("%w: aborted transaction index of %s: %w", errStorage, p.name(), err)
	}
	return nil
}

// learnHighWatermark takes the leader's high watermark from a fetch
// answer, capped at the local log end.
func (p *partition) learnHighWatermark(leaderHW int64, epoch int32) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	role := p.role.Load()
	if role == nil || role.leader == p.nodeID || role.leaderEpoch != epoch {
		return
	}
	hw := min(leaderHW, p.log.LogEndOffset())
	if hw > p.hw.Load() {
		p.hw.Store(hw)
	}
}

// latestEpochAndEnds returns the newest leader epoch known here and the
// log end and start offsets.
func (p *partition) latestEpochAndEnds() (epoch int32, logEnd, logStart int64) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.epochs.latest(), p.log.LogEndOffset(), p.log.LogStartOffset()
}

// endOffsetForEpoch is the local answer to OffsetForLeaderEpoch.
func (p *partition) endOffsetForEpoch(requested int32) (int32, int64) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.epochs.endOffsetFor(requested, p.log.LogEndOffset())
}

// truncateAsFollower cuts the log to end at offset, with the producer
// state, transaction state and leader epochs rolled back to match, if the
// partition still follows at leader epoch epoch.
func (p *partition) truncateAsFollower(offset int64, epoch int32) error {
	p.snapshotMu.Lock()
	defer p.snapshotMu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	role := p.role.Load()
	if role == nil || role.leader == p.nodeID || role.leaderEpoch != epoch {
		return errStaleFetch
	}
	logEnd := p.log.LogEndOffset()
	if offset >= logEnd {
		return nil
	}
	// The high watermark goes down first, so it never exceeds the log
	// end; to the log start, because the batch holding offset goes whole
	// and where it starts is known only after. Only fetch answers of a
	// leader read it, so the dip is invisible.
	hw := p.hw.Load()
	p.hw.Store(min(hw, p.log.LogStartOffset()))
	if err := p.truncateLocked(offset); err != nil {
		return err
	}
	p.hw.Store(min(hw, p.log.LogEndOffset()))
	if err := p.epochs.truncateFromEnd(p.log.LogEndOffset()); err != nil {
		return err
	}
	p.logger.Info("replica truncated divergent tail", "partition", p.name(), "from", logEnd, "to", p.log.LogEndOffset(), "leader_epoch", epoch)
	return nil
}
