package storage

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Truncate drops everything at and after offset, for replica divergence. The
// batch containing offset is dropped whole, so the log end offset becomes
// that batch's base offset (== offset when offset is a batch boundary). An
// offset at or below the first segment's base empties the log and restarts
// it at offset. Truncation is not atomic across a crash: the caller redoes it
// after a restart (replication does, from leader epochs).
func (l *Log) Truncate(offset int64) error { return l.truncate(offset, false) }

// truncate is Truncate, or with fully TruncateFullyAndStartAt.
func (l *Log) truncate(offset int64, fully bool) error {
	l.removeMu.Lock()
	defer l.removeMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if offset >= l.logEnd && !fully {
		return nil
	}
	if offset < 0 {
		return fmt.Errorf("truncate %s to %d: negative offset", l.dir, offset)
	}
	if err := l.drainRollFlushes(); err != nil {
		return err
	}
	if fully || offset <= l.segments[0].base {
		return l.truncateFully(offset)
	}
	index := l.segmentIndex(offset)
	target := l.segments[index]
	l.ensureLoaded(target)
	position, newEnd, err := l.truncationPoint(target, offset)
	if err != nil {
		return l.fail(fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err))
	}
	// Publish the cut first, then change the files: a reader capturing
	// the segments from now on never looks past the new end, and one
	// that captured them before holds their files open and retries
	// (beginTruncation), so no reader finds a released file in the list.
	l.beginTruncation()
	defer l.endTruncation()
	removed := slices.Clone(l.segments[index+1:])
	l.mu.Lock()
	l.segments = l.segments[:index+1]
	target.cutAt(position, newEnd)
	l.logEnd = newEnd
	l.logStart = min(l.logStart, newEnd)
	l.assertInvariantsLocked()
	l.durability.mu.Lock()
	l.durability.durableEnd = min(l.durability.durableEnd, newEnd)
	l.durability.epoch++
	l.durability.mu.Unlock()
	l.mu.Unlock()
	if err := l.removeSegments(removed); err != nil {
		return l.fail(fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err))
	}
	if err := target.log.file.Truncate(position); err != nil {
		return l.fail(fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err))
	}
	if err := l.syncSegment(target.log.file); err != nil {
		return l.fail(fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err))
	}
	if err := l.finishTruncation(target); err != nil {
		return l.fail(fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err))
	}
	return nil
}

// beginTruncation and endTruncation bracket every rewrite of bytes or
// index entries a reader may have captured: Log.truncations is odd in
// between, and changes at both ends, so Read (which scans the files
// without mu) retries when it saw either (caller holds appendMu).
func (l *Log) beginTruncation() {
	l.mu.Lock()
	l.truncations.Add(1)
	l.mu.Unlock()
}

// endTruncation ends what beginTruncation began (caller holds appendMu).
func (l *Log) endTruncation() {
	l.mu.Lock()
	l.truncations.Add(1)
	l.mu.Unlock()
}

// truncationPoint finds the batch containing offset: its position and base.
func (l *Log) truncationPoint(s *segment, offset int64) (position, base int64, err error) {
	buffer := make([]byte, headerSize)
	for position = s.positionAtOrBefore(offset); position < s.size; {
		header, err := readHeader(s.log.file, position, buffer)
		if err != nil {
			return 0, 0, err
		}
		if header.last >= offset {
			return position, header.base, nil
		}
		position += header.size
	}
	return s.size, s.end, nil
}

// cutAt shrinks the segment's published state to its first `position` bytes
// ending at offset end (caller holds Log.mu for writing, indexes loaded).
func (s *segment) cutAt(position, end int64) {
	s.pruneIndexes(position, end)
	kept := s.aborted[:0]
	for _, t := range s.aborted {
		if t.LastOffset < end {
			kept = append(kept, t)
		}
	}
	s.aborted = kept
	s.size, s.end = position, end
	s.checkpointPosition = min(s.checkpointPosition, position)
	// Rebuild the running state from the last index entries; finishTruncation
	// rescans the few batches after them.
	s.maxTimestamp = s.lastTimestampEntry().timestamp
	s.lastBatchBase = s.base
	s.bytesSinceIndex = 0
	if position == 0 {
		s.firstTimestamp = -1
	}
}

// finishTruncation rescans the segment's batches after its last index entry
// to restore its running max timestamp, persists the indexes, the
// transaction index and a checkpoint (caller holds appendMu).
func (l *Log) finishTruncation(s *segment) error {
	start := int64(0)
	if len(s.offsets) > 0 {
		start = int64(s.offsets[len(s.offsets)-1].position)
	}
	buffer := make([]byte, headerSize)
	maxTimestamp, lastBase := s.maxTimestamp, s.base
	for position := start; position < s.size; {
		header, err := readHeader(s.log.file, position, buffer)
		if err != nil {
			return err
		}
		maxTimestamp, lastBase = max(maxTimestamp, header.maxTimestamp), header.base
		position += header.size
	}
	l.mu.Lock()
	s.maxTimestamp, s.lastBatchBase, s.bytesSinceIndex = maxTimestamp, lastBase, int(s.size-start)
	l.assertInvariantsLocked()
	l.mu.Unlock()
	if err := s.persistIndexes(l.fs, l.dir); err != nil {
		return err
	}
	if err := l.writeAbortedTxns(s, 0, encodeAbortedTxns(s.aborted)); err != nil {
		return err
	}
	s.abortedPersisted = len(s.aborted)
	// Every entry left is now synced: the rewrite covered this segment's,
	// and the segments before it were synced when they rolled.
	l.abortsAllSynced()
	return l.writeCheckpoint(s.base, s.size, s.end)
}

// encodeAbortedTxns lays out several entries back to back.
func encodeAbortedTxns(entries []AbortedTxn) []byte {
	var data []byte
	for _, t := range entries {
		data = append(data, t.encode()...)
	}
	return data
}

// truncateFully deletes every segment and restarts the log empty at offset.
func (l *Log) truncateFully(offset int64) error {
	l.beginTruncation()
	defer l.endTruncation()
	// createSegment may truncate the file of a live segment at offset, so
	// readers are kept out (mu) until the fresh segment is published: a
	// rare operation, this once the disk I/O happens under mu.
	l.mu.Lock()
	fresh, err := l.createSegment(offset)
	if err != nil {
		l.mu.Unlock()
		return l.fail(fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err))
	}
	old := l.segments
	l.segments = []*segment{fresh}
	l.logStart, l.logEnd = offset, offset
	l.assertInvariantsLocked()
	l.durability.mu.Lock()
	l.durability.durableEnd = min(l.durability.durableEnd, offset)
	l.durability.epoch++
	l.durability.mu.Unlock()
	l.mu.Unlock()
	var errs []error
	for _, s := range old {
		if s.base == offset {
			errs = append(errs, s.releaseFiles()) // its files were recreated by createSegment
			continue
		}
		errs = append(errs, s.removeFiles(l.fs, l.dir), s.releaseFiles())
	}
	l.abortsAllSynced() // no entry is left
	errs = append(errs, l.fs.SyncDir(l.dir), l.writeCheckpoint(offset, 0, offset))
	if err := errors.Join(errs...); err != nil {
		return l.fail(fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err))
	}
	return nil
}

// removeSegments unlinks the given segments' files and drops the log's
// reference (regions still held keep the files readable). The caller removes
// them from l.segments.
func (l *Log) removeSegments(segments []*segment) error {
	var errs []error
	for _, s := range segments {
		errs = append(errs, s.removeFiles(l.fs, l.dir), s.releaseFiles())
	}
	if len(segments) > 0 {
		errs = append(errs, l.fs.SyncDir(l.dir))
	}
	return errors.Join(errs...)
}

// ApplyRetention deletes old segments by size (RetentionBytes) and age
// (RetentionAge, measured from the segment's newest record timestamp, or its
// file time if it has none), and segments wholly below the log start offset.
// It never deletes the active segment; the log start offset moves to the
// first remaining segment.
func (l *Log) ApplyRetention() (deletedSegments int, err error) {
	l.removeMu.Lock()
	defer l.removeMu.Unlock()
	removed, err := l.detachExpired()
	if err != nil || len(removed) == 0 {
		return 0, err
	}
	// The segments are out of the list and the log start is published:
	// their files are unlinked without appendMu, so appends go on. Readers
	// holding a region keep a file open until they release it; removeMu
	// keeps a truncation from recreating a file of the same name meanwhile.
	if err := l.removeSegments(removed); err != nil {
		return len(removed), fmt.Errorf("retention %s: segments %d..%d: %w", l.dir, removed[0].base, removed[len(removed)-1].end, err)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return len(removed), nil // Close's checkpoint has the new log start already
	}
	if err := l.stickyError(); err != nil {
		return len(removed), err
	}
	if err := l.rewriteCheckpoint(); err != nil {
		return len(removed), l.fail(fmt.Errorf("retention %s: %w", l.dir, err))
	}
	// A caller may snapshot state at the log end once segments went (the
	// broker keeps the producers whose batches were all deleted that way):
	// no entry written so far may be lost under that snapshot (see
	// rollLocked). An entry written after this returns is not covered; the
	// caller syncs it with SyncAbortedTxns before its snapshot.
	if l.abortsUnsynced() {
		if err := l.syncTxnIndex(l.active()); err != nil {
			return len(removed), l.fail(fmt.Errorf("retention %s: %w", l.dir, err))
		}
		l.abortsAllSynced()
	}
	return len(removed), nil
}

// detachExpired takes the segments retention deletes out of the list and
// moves the log start to the first remaining one (under appendMu and mu).
func (l *Log) detachExpired() ([]*segment, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return nil, err
	}
	now := l.opts.Now()
	total := int64(0)
	for _, s := range l.segments {
		total += s.size
	}
	var removed []*segment
	for len(l.segments) > 1 && l.expired(l.segments[0], total, now) {
		first := l.segments[0]
		l.mu.Lock()
		l.segments = l.segments[1:]
		l.logStart = max(l.logStart, l.segments[0].base)
		l.assertInvariantsLocked()
		l.mu.Unlock()
		total -= first.size
		removed = append(removed, first)
	}
	return removed, nil
}

// expired says whether retention deletes the (non-active) segment s.
func (l *Log) expired(s *segment, total int64, now time.Time) bool {
	if s.end <= l.logStart {
		return true
	}
	if l.opts.RetentionBytes > 0 && total-s.size >= l.opts.RetentionBytes {
		return true
	}
	if l.opts.RetentionAge > 0 {
		newest := s.created
		if s.maxTimestamp >= 0 {
			newest = time.UnixMilli(s.maxTimestamp)
		}
		return now.Sub(newest) > l.opts.RetentionAge
	}
	return false
}

// DeleteRecordsBefore advances the log start offset to offset (Kafka's
// DeleteRecords) and deletes the segments wholly below it.
func (l *Log) DeleteRecordsBefore(offset int64) error {
	l.appendMu.Lock()
	if err := l.usable(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	if offset > l.logEnd {
		l.appendMu.Unlock()
		return fmt.Errorf("delete records %s before %d (log end %d): %w", l.dir, offset, l.logEnd, ErrOffsetOutOfRange)
	}
	if offset <= l.logStart {
		l.appendMu.Unlock()
		return nil
	}
	l.mu.Lock()
	l.logStart = offset
	l.assertInvariantsLocked()
	l.mu.Unlock()
	err := l.rewriteCheckpoint()
	l.appendMu.Unlock()
	if err != nil {
		return l.fail(fmt.Errorf("delete records %s: %w", l.dir, err))
	}
	_, err = l.ApplyRetention()
	return err
}

// TruncateFullyAndStartAt empties the log and restarts it at offset, which
// may lie beyond the log end: a replica whose log ends below the leader's
// log start (a new replica of a partition whose oldest records are gone)
// can only start over where the leader's log starts (Kafka's
// truncateFullyAndStartAt).
func (l *Log) TruncateFullyAndStartAt(offset int64) error { return l.truncate(offset, true) }
