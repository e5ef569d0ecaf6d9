package partition

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/wire"
)

// Idempotent-producer state of a partition (KIP-98), wired around
// producers.PartitionState:
//
//   - Ownership: Partition.producers is guarded by Partition.appendMu. A
//     Produce checks a batch, appends it and records it without releasing
//     lock ([Partition.appendLocked]), so no batch of the same producer can be
//     checked against state that misses an earlier accepted one, whichever
//     connection it came from. The broker's expiry loop ([Partition.ExpireProducers])
//     takes the same lock, as do retention, truncation and close.
//   - Snapshots live in <partition-dir>/producer-snapshots/, not next to the
//     segments: storage deletes any "<20 digits>.*" file of the partition
//     directory whose segment does not exist, and a snapshot taken at the
//     log end at close is not at a segment base. One is taken (its state
//     encoded under the lock) when an append rolls a segment, at the new segment's base offset,
//     before the batch that rolled it is recorded; after retention deleted
//     segments; and at close, at the log end. producers keeps the newest two.
//     The state is encoded under the append lock and the file written after
//     it is released (unlockAppend, under snapshotMu), so the fsyncs never
//     stall other appends; close writes its snapshot before the log closes.
//   - Startup (loadProducerState): snapshots above the log end are removed
//     (a crash can lose an unsynced tail), the newest remaining one is
//     loaded, and the batch headers from its offset (or the log start, if
//     later) to the log end are replayed through storage's ScanHeaders. After
//     a clean close nothing is replayed; after a crash, normally only the
//     active segment (from the snapshot taken when it was rolled; the whole
//     log if no roll happened since the log start).
//   - Truncation ([Partition.Truncate]) follows producers' doc: remove the
//     snapshots above the new end, reload, replay.

// ProducerSnapshotDirName is the subdirectory of a partition directory that
// holds its producer-state snapshots.
const ProducerSnapshotDirName = "producer-snapshots"

// errIdempotentMultiBatch: an idempotent producer's partition data holds more
// than one batch. Every client sends one batch per partition per request;
// accepting several would make a duplicate in the middle ambiguous.
var errIdempotentMultiBatch = fmt.Errorf("%w: a producer id's batches must come one per partition per request", ErrInvalidRecord)

// SnapshotDir is where the partition's producer snapshots live.
func (p *Partition) SnapshotDir() string {
	return filepath.Join(p.log.Dir(), ProducerSnapshotDirName)
}

// loadProducerState rebuilds the producer state up to the log end from the
// newest usable snapshot plus a replay of the batch headers after it. The
// caller owns the partition exclusively (open) or holds appendMu (truncate).
func (p *Partition) loadProducerState(options producers.Options) (replayed int, err error) {
	dir := p.SnapshotDir()
	fsys := options.FS
	if fsys == nil {
		fsys = storage.OSFS{}
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("%w: producer snapshots of %s: %w", ErrStorage, p.Name(), err)
	}
	logEnd := p.log.LogEndOffset()
	if err := producers.RemoveSnapshotsAbove(dir, logEnd, options); err != nil {
		return 0, fmt.Errorf("%w: producer snapshots of %s: %w", ErrStorage, p.Name(), err)
	}
	state, load, err := producers.LoadLatestSnapshot(dir, logEnd, options)
	if err != nil {
		return 0, fmt.Errorf("%w: producer snapshots of %s: %w", ErrStorage, p.Name(), err)
	}
	for _, skipped := range load.Skipped {
		p.logger.Warn("producer snapshot skipped", "partition", p.Name(), "snapshot", skipped.Path, "reason", skipped.Reason)
	}
	from := p.log.LogStartOffset()
	p.snapshotOffset = -1
	if load.Found {
		from = max(from, load.Offset)
		p.snapshotOffset = load.Offset
	}
	var aborted []storage.AbortedTxn
	if from < logEnd {
		err = p.log.ScanHeaders(from, func(batch wire.BatchView) error {
			replayed++
			info := newBatchInfo(batch, batch.BaseOffset())
			completed, err := replayBatch(state, &info)
			if completed.Aborted {
				lastStable := batch.LastOffset() + 1
				if offset, ok := state.FirstUnstableOffset(); ok {
					lastStable = offset
				}
				aborted = append(aborted, storage.AbortedTxn{ProducerID: completed.ProducerID,
					FirstOffset: completed.FirstOffset, LastOffset: completed.LastOffset, LastStableOffset: lastStable})
			}
			return err
		})
		if err != nil {
			return replayed, fmt.Errorf("%w: replay producer state of %s from %d: %w", ErrStorage, p.Name(), from, err)
		}
	}
	if err := p.restoreAbortedIndex(aborted); err != nil {
		return replayed, err
	}
	p.producers = state
	p.producersDirty = replayed > 0
	return replayed, nil
}

// restoreAbortedIndex puts back the aborted-index entries of replayed ABORT
// markers that the index lacks. The marker is appended to the log before
// its entry is written ([Partition.applyProducerBatchLocked]), so a crash between the two
// leaves a marker without an entry; without this, read_committed fetches
// would return that transaction's records as committed after a restart.
// Replay starts at the latest snapshot, which is taken only after every
// earlier marker's entry was written and synced (snapshotLocked), so
// every marker that can lack an entry after a crash is replayed.
func (p *Partition) restoreAbortedIndex(replayed []storage.AbortedTxn) error {
	for _, txn := range replayed {
		present := false
		for _, entry := range p.log.AbortedTxns(txn.LastOffset, txn.LastOffset+1) {
			if entry.ProducerID == txn.ProducerID && entry.LastOffset == txn.LastOffset {
				present = true
				break
			}
		}
		if present {
			continue
		}
		if err := p.log.AppendAbortedTxn(txn); err != nil {
			return fmt.Errorf("%w: restore aborted transaction index of %s: %w", ErrStorage, p.Name(), err)
		}
		p.logger.Warn("aborted transaction index entry restored", "partition", p.Name(),
			"producer_id", txn.ProducerID, "first_offset", txn.FirstOffset, "marker_offset", txn.LastOffset)
	}
	return nil
}

// replayBatch applies one batch found in the log (or appended by an origin
// that replays: [Partition.applyProducerBatchLocked]) to the state, at the
// offsets batch has: data batches through Replay, transaction markers
// through ApplyMarker. It returns the transaction a marker completed (zero
// for other batches).
func replayBatch(state *producers.PartitionState, batch *BatchInfo) (producers.CompletedTransaction, error) {
	if batch.producerID < 0 {
		return producers.CompletedTransaction{}, nil
	}
	if !batch.control() {
		state.Replay(batch.producerBatch())
		return producers.CompletedTransaction{}, nil
	}
	records, err := batch.view.RecordIterator()
	if err != nil {
		return producers.CompletedTransaction{}, fmt.Errorf("control batch at %d: %w", batch.baseOffset, err)
	}
	if !records.Next() {
		return producers.CompletedTransaction{}, fmt.Errorf("control batch at %d has no record: %v", batch.baseOffset, records.Err())
	}
	record := records.Record()
	control, err := wire.ParseControlRecord(record.Key, record.Value)
	if err != nil {
		return producers.CompletedTransaction{}, fmt.Errorf("control batch at %d: %w", batch.baseOffset, err)
	}
	if !control.IsTransactionMarker() {
		return producers.CompletedTransaction{}, nil
	}
	return state.ApplyMarker(producers.Marker{
		ProducerID:       batch.producerID,
		ProducerEpoch:    batch.producerEpoch,
		CoordinatorEpoch: control.CoordinatorEpoch,
		Offset:           batch.baseOffset,
		Commit:           control.Type == wire.ControlCommit,
	}), nil
}

// noteAppend takes a snapshot when an append rolled a segment (caller
// holds appendMu).
func (p *Partition) noteAppend(result storage.AppendResult) {
	if result.SegmentBase == p.activeSegmentBase {
		return
	}
	// The append rolled a segment — or this is the first append since
	// open or truncation, when the active segment's base is not known;
	// it went to a fresh segment then if it starts it, past the log
	// start. The state reflects exactly the batches below the new
	// segment, since this batch is not recorded yet.
	rolled := p.activeSegmentBase >= 0 ||
		result.SegmentBase == result.FirstOffset && result.FirstOffset > p.log.LogStartOffset()
	if rolled {
		p.snapshotLocked(result.SegmentBase)
	}
	p.activeSegmentBase = result.SegmentBase
}

// pendingSnapshot is a producer snapshot encoded under appendMu and not
// yet written; generation is Partition.snapshotGeneration at encoding.
type pendingSnapshot struct {
	snapshot   producers.Snapshot
	generation uint64
}

// snapshotLocked encodes the producer state as of offset (every batch
// below it reflected, none at or above) unless nothing changed since the
// last snapshot at that offset, and leaves it in p.pendingSnapshot for
// unlockAppend to write once appendMu is released: the fsyncs of a
// snapshot never hold up the partition's appends (caller holds appendMu).
func (p *Partition) snapshotLocked(offset int64) {
	if !p.producersDirty && offset == p.snapshotOffset {
		return
	}
	if p.abortIndexBehind {
		// A marker is in the log and the state without its aborted-index
		// entry: the next start must replay it (restoreAbortedIndex), so
		// no snapshot may be taken past it.
		return
	}
	// The transaction index is synced with its segment, not per entry
	// (storage.Log.AppendAbortedTxn): a snapshot past an unsynced entry
	// would let a crash lose the entry while its marker survives, and
	// the replay that restores it starts at the snapshot. Nothing to sync
	// is free.
	if err := p.log.SyncAbortedTxns(); err != nil {
		p.logger.Error("producer snapshot skipped: transaction index not synced", "partition", p.Name(), "offset", offset, "error", err)
		return
	}
	snapshot, err := p.producers.Snapshot(offset)
	if err != nil {
		p.logger.Error("producer snapshot failed", "partition", p.Name(), "offset", offset, "error", err)
		return
	}
	// A newer snapshot replaces one not written yet: it covers more.
	p.pendingSnapshot = &pendingSnapshot{snapshot: snapshot, generation: p.snapshotGeneration.Load()}
	p.snapshotOffset = offset
	p.producersDirty = false
}

// unlockAppend releases appendMu, then writes the snapshot the critical
// section prepared, if any. Every holder of appendMu that may call
// snapshotLocked releases it through here.
func (p *Partition) unlockAppend() {
	pending := p.pendingSnapshot
	p.pendingSnapshot = nil
	if pending != nil {
		p.unwrittenSnapshots.Add(1)
	}
	p.appendMu.Unlock()
	if pending != nil {
		p.writeSnapshot(pending)
	}
}

// writeSnapshot writes a prepared snapshot under snapshotMu (not
// appendMu). It is dropped when the partition was closed or truncated
// since it was encoded: close writes its own at the log end, and after a
// truncation it may describe batches that are gone. Snapshots of one
// partition may be written out of order; each is consistent at its own
// offset and loading takes the newest. A failure is logged, not returned:
// snapshots only shorten the replay at startup and the previous ones stay
// valid; the state is marked dirty so that the next roll tries again.
func (p *Partition) writeSnapshot(pending *pendingSnapshot) {
	p.snapshotMu.Lock()
	defer p.snapshotMu.Unlock()
	defer p.unwrittenSnapshots.Add(-1)
	if p.closed.Load() || p.snapshotGeneration.Load() != pending.generation {
		return
	}
	if err := pending.snapshot.WriteTo(p.SnapshotDir()); err != nil {
		p.logger.Error("producer snapshot failed", "partition", p.Name(), "offset", pending.snapshot.Offset(), "error", err)
		p.appendMu.Lock()
		p.producersDirty = true
		p.appendMu.Unlock()
	}
}

// writeSnapshotNowLocked writes the snapshot snapshotLocked prepared
// without releasing appendMu: for close, which must have it on disk
// before the log closes (caller holds snapshotMu and appendMu).
func (p *Partition) writeSnapshotNowLocked() {
	pending := p.pendingSnapshot
	p.pendingSnapshot = nil
	if pending == nil {
		return
	}
	if err := pending.snapshot.WriteTo(p.SnapshotDir()); err != nil {
		p.logger.Error("producer snapshot failed", "partition", p.Name(), "offset", pending.snapshot.Offset(), "error", err)
		p.producersDirty = true
	}
}

// ExpireProducers forgets the producers idle for producer.id.expiration.ms
// (called by the broker's expiry loop; takes appendMu).
func (p *Partition) ExpireProducers() int {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.closed.Load() {
		return 0
	}
	dropped := p.producers.ExpireIdle()
	if dropped > 0 {
		p.producersDirty = true
	}
	return dropped
}

// DescribeProducers lists the partition's producers (DescribeProducers).
func (p *Partition) DescribeProducers() ([]producers.ProducerInfo, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.closed.Load() {
		return nil, fmt.Errorf("%w: %s was deleted", ErrUnknownTopicOrPartition, p.Name())
	}
	return p.producers.Producers(), nil
}

// Truncate cuts the log to end at offset and rebuilds the producer state to
// match, as producers' doc prescribes: the snapshots above offset describe
// batches that are gone, and the in-memory state cannot be undone (it keeps
// only each producer's 5 newest batches), so it is reloaded from the newest
// snapshot at or below offset plus a replay. The broker truncates only a
// follower, through [Partition.TruncateAsFollower] (which checks the
// leader epoch); this is the same cut without that check. The high
// watermark and the leader epochs follow the log down, as there.
func (p *Partition) Truncate(offset int64) error {
	p.snapshotMu.Lock()
	defer p.snapshotMu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	// The high watermark goes down first, so it never exceeds the log end
	// (see TruncateAsFollower).
	hw := p.hw.Load()
	p.hw.Store(min(hw, p.log.LogStartOffset()))
	if err := p.truncateLocked(offset); err != nil {
		return err
	}
	p.hw.Store(min(hw, p.log.LogEndOffset()))
	if p.epochs != nil {
		return p.epochs.truncateFromEnd(p.log.LogEndOffset())
	}
	return nil
}

// truncateLocked is truncate's body (caller holds snapshotMu and appendMu).
func (p *Partition) truncateLocked(offset int64) error {
	if p.closed.Load() {
		return fmt.Errorf("%w: %s was deleted", ErrUnknownTopicOrPartition, p.Name())
	}
	// Snapshots prepared before the truncation are not written after it
	// (writeSnapshot checks the generation under snapshotMu, held here).
	p.snapshotGeneration.Add(1)
	if err := p.log.Truncate(offset); err != nil {
		return fmt.Errorf("%w: truncate %s to %d: %w", ErrStorage, p.Name(), offset, err)
	}
	p.activeSegmentBase = -1
	if _, err := p.loadProducerState(p.producerOptions); err != nil {
		return errors.Join(fmt.Errorf("truncate %s to %d", p.Name(), offset), err)
	}
	p.refreshUnstable()
	return nil
}
