package partition

import (
	"fmt"

	"github.com/exactly-eos/exactly/broker/producers"
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

// AppendReplicated appends batches fetched from the leader at leader epoch
// epoch, through the one append path as OriginReplication
// ([Partition.appendLocked]). Batches wholly below the log end (a refetch)
// are skipped, a trailing partial batch is ignored ([Analyze]).
func (p *Partition) AppendReplicated(records []byte, epoch int32) error {
	var info AppendInfo // filled under appendMu, against the log end
	_, err := p.Append(OriginReplication, records, &info, &AppendOptions{LeaderEpoch: epoch})
	return err
}

// LearnHighWatermark takes the leader's high watermark from a fetch
// answer, capped at the local log end.
func (p *Partition) LearnHighWatermark(leaderHW int64, epoch int32) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	role := p.role.Load()
	if role == nil || role.Leader == p.nodeID || role.LeaderEpoch != epoch {
		return
	}
	hw := min(leaderHW, p.log.LogEndOffset())
	if hw > p.hw.Load() {
		p.hw.Store(hw)
	}
}

// LatestEpochAndEnds returns the newest leader epoch known here and the
// log end and start offsets.
func (p *Partition) LatestEpochAndEnds() (epoch int32, logEnd, logStart int64) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.epochs.latest(), p.log.LogEndOffset(), p.log.LogStartOffset()
}

// EndOffsetForEpoch is the local answer to OffsetForLeaderEpoch.
func (p *Partition) EndOffsetForEpoch(requested int32) (int32, int64) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.epochs.endOffsetFor(requested, p.log.LogEndOffset())
}

// TruncateAsFollower cuts the log to end at offset, with the producer
// state, transaction state and leader epochs rolled back to match, if the
// partition still follows at leader epoch epoch.
func (p *Partition) TruncateAsFollower(offset int64, epoch int32) error {
	unlock, err := p.lockFollowing(epoch)
	if err != nil {
		return err
	}
	defer unlock()
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
	p.logger.Info("replica truncated divergent tail", "partition", p.Name(), "from", logEnd, "to", p.log.LogEndOffset(), "leader_epoch", epoch)
	return nil
}

// EndOffsetOfEpoch answers OffsetForLeaderEpoch for the partition: from
// the leader-epoch checkpoint when it is replicated
// ([Partition.EndOffsetForEpoch]), else from the one epoch,
// [UnreplicatedLeaderEpoch], that ends at the log end.
func (p *Partition) EndOffsetOfEpoch(requested int32) (int32, int64) {
	if p.epochs == nil || p.role.Load() == nil {
		if requested <= UnreplicatedLeaderEpoch && requested >= 0 {
			return UnreplicatedLeaderEpoch, p.log.LogEndOffset()
		}
		return -1, -1
	}
	return p.EndOffsetForEpoch(requested)
}

// RestartAsFollower empties the log of a follower at leader epoch epoch
// and restarts it at offset, when the follower's log ends below it (what
// the follower has is older than anything the leader can send, so it
// cannot be continued: a new replica of a partition whose oldest records
// were deleted) or when the log is empty (then offset may be lower: the
// base of the leader's batch holding its log start). The producer state
// and the leader epochs go with the records; the next fetch starts at
// offset.
func (p *Partition) RestartAsFollower(offset int64, epoch int32) error {
	unlock, err := p.lockFollowing(epoch)
	if err != nil {
		return err
	}
	defer unlock()
	if p.closed.Load() {
		return fmt.Errorf("%w: %s was deleted", ErrUnknownTopicOrPartition, p.Name())
	}
	logEnd := p.log.LogEndOffset()
	empty := p.log.LogStartOffset() == logEnd
	if offset == logEnd || offset < logEnd && !empty {
		return nil // the leader still has our log end: fetch, or truncate from epochs
	}
	p.snapshotGeneration.Add(1)
	p.hw.Store(min(p.hw.Load(), p.log.LogStartOffset()))
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return fmt.Errorf("%w: restart %s at %d: %w", ErrStorage, p.Name(), offset, err)
	}
	p.hw.Store(offset)
	p.activeSegmentBase = -1
	if err := producers.RemoveSnapshotsAbove(p.SnapshotDir(), -1, p.producerOptions); err != nil {
		return fmt.Errorf("%w: producer snapshots of %s: %w", ErrStorage, p.Name(), err)
	}
	if _, err := p.loadProducerState(p.producerOptions); err != nil {
		return fmt.Errorf("restart %s at %d: %w", p.Name(), offset, err)
	}
	p.refreshUnstable()
	if err := p.epochs.clear(); err != nil {
		return err
	}
	p.logger.Info("replica restarted at the leader's log start", "partition", p.Name(), "from_log_end", logEnd, "to", offset, "leader_epoch", epoch)
	return nil
}

// lockFollowing takes snapshotMu and appendMu (the order of every log
// rewrite) if the partition still follows at leader epoch epoch, and
// returns their release; ErrStaleFetch (no lock held) otherwise.
func (p *Partition) lockFollowing(epoch int32) (func(), error) {
	p.snapshotMu.Lock()
	p.appendMu.Lock()
	role := p.role.Load()
	if role == nil || role.Leader == p.nodeID || role.LeaderEpoch != epoch {
		p.appendMu.Unlock()
		p.snapshotMu.Unlock()
		return nil, ErrStaleFetch
	}
	return func() { p.appendMu.Unlock(); p.snapshotMu.Unlock() }, nil
}
