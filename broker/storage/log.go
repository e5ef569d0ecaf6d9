package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

// Errors the log returns; match them with errors.Is.
var (
	// ErrOffsetOutOfRange: a read below the log start offset or beyond the log end offset.
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("log closed")
	// ErrNotWritten: WaitDurable was asked for an offset that is not (or no longer) in the log.
	ErrNotWritten = errors.New("offset not written")
	// ErrEmptyAppend: Append was given no batches.
	ErrEmptyAppend = errors.New("append of no batches")
)

// Log is one partition's segmented log.
//
// Concurrency: one appender at a time — Append, Roll, Flush, Truncate,
// ApplyRetention, DeleteRecordsBefore, AppendAbortedTxn, SyncAbortedTxns
// and Close serialize on appendMu — and any number of readers (Read, ReadBatches, ScanHeaders,
// OffsetForTimestamp, AbortedTxns, the offset getters) concurrently with it.
// Lock order: cleanMu, then removeMu, then appendMu, then checkpointMu, then mu, then
// durability.mu; cleanerFileMu (the cleaner checkpoint's writes, by Clean
// and by a gapped AppendReplica under appendMu) is a leaf.
//
// Disk I/O and locks: Read and OffsetForTimestamp scan the files without
// any lock (they capture the segments under mu first), as ScanHeaders does; ApplyRetention unlinks files under
// removeMu only; with fsync=never a rolled segment's sync, index files
// and checkpoint are written by the flusher goroutine (Log.enqueueRollFlush)
// without appendMu; the 64 MiB flush syncs its bulk without it. Still
// under appendMu: the append's write, a roll's new segment file (file and
// directory fsync) and, with fsync interval/always, the rolled segment's
// sync, its indexes and checkpoint; with every policy, the rolled
// segment's .txnindex sync (only if it had aborted transactions); the rest
// of the 64 MiB flush; and truncation. mu is held for writing only to publish, never across I/O
// (except truncateFully, see there).
type Log struct {
	dir  string
	opts Options
	// onSync is Options.OnSync, fixed at Open (read without locks).
	onSync func(time.Duration)
	fs     FS

	// cleanMu serializes [Log.Clean]; it is taken before removeMu,
	// which Clean holds throughout.
	cleanMu sync.Mutex
	// compactedEnd bounds the offsets a clean may have rewritten (from the
	// cleaner checkpoint): recovery accepts gaps between batches below it.
	// A follower's AppendReplica past a gap raises it too.
	compactedEnd atomic.Int64
	// firstDirty is the cleaner checkpoint's first dirty offset, read at
	// Open and stored with every write of the file, so that planning a
	// clean (under appendMu) reads no file.
	firstDirty atomic.Int64
	// cleanerFileMu serializes writes of the cleaner checkpoint (Clean,
	// AppendReplica); a leaf, held across that file's atomic rewrite.
	cleanerFileMu sync.Mutex

	// removeMu is held while ApplyRetention unlinks detached segments
	// without appendMu; Truncate and Delete take it first, so no file of
	// a segment being removed is recreated or removed twice meanwhile.
	removeMu sync.Mutex

	// appendMu serializes every mutation. Fields documented as
	// "appender-owned" may be read without mu by its holder.
	appendMu sync.Mutex
	// checkpointMu guards lastCheckpoint and the checkpoint file, and
	// serializes the collection of roll flushes (Log.collectRollFlushes); it is held
	// across the checkpoint's write. Lock order: after appendMu and
	// removeMu, before mu.
	checkpointMu sync.Mutex
	// lastCheckpoint is the checkpoint file's content (checkpointMu).
	lastCheckpoint checkpoint
	// batches is scratch space for Append (appender-owned).
	batches []appendedBatch
	// flusher syncs rolled segments in the background (FsyncNever only; appender-owned).
	flusher *rollFlusher
	// flushing is set while an Append runs the 64 MiB flush's first sync
	// without appendMu, so that no other append starts one (appender-owned).
	flushing bool

	// mu guards the published state below; it is held for writing only
	// briefly, after bytes are written, to publish them. Invariants:
	// segments is non-empty and sorted by base; each segment's base equals the
	// previous segment's end; logStart <= logEnd == the last segment's end;
	// logStart >= segments[0].base.
	mu       sync.RWMutex
	segments []*segment
	logStart int64
	logEnd   int64
	closed   bool
	// truncations is bumped (under mu held for writing) before and after
	// every truncation, so it is odd while one rewrites bytes or index
	// entries below a published size. Read, which scans the files without
	// mu, retries when it was odd or changed (beginTruncation).
	truncations atomic.Uint64

	durability durability
	// intervalStop stops the FsyncInterval goroutine; intervalDone closes when it has.
	intervalStop chan struct{}
	intervalDone chan struct{}
}

// appendedBatch describes one batch of an Append in progress.
type appendedBatch struct {
	base, last, maxTimestamp int64
	size                     int
}

// AppendResult says where an Append put its batches.
type AppendResult struct {
	FirstOffset  int64 // base offset of the first batch
	LastOffset   int64 // last offset of the last batch
	MaxTimestamp int64 // largest batch max timestamp, -1 if none
	SegmentBase  int64 // base offset of the segment written
	Position     int64 // byte position of the first batch in that segment
}

// Open opens (creating if missing) the log in dir and recovers it: after a
// clean shutdown it trusts the indexes; after a crash it rescans the log
// from the last recovery checkpoint only, truncating a torn or corrupt tail.
func Open(dir string, opts Options) (*Log, RecoveryReport, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, RecoveryReport{}, fmt.Errorf("open log %s: %w", dir, err)
	}
	if err := opts.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, RecoveryReport{}, fmt.Errorf("open log %s: %w", dir, err)
	}
	l := &Log{dir: dir, opts: opts, fs: opts.FS, onSync: opts.OnSync}
	l.durability.changed = make(chan struct{})
	l.durability.abortFloor, l.durability.abortFloorSinceCapture = math.MaxInt64, math.MaxInt64
	report, err := l.recover()
	if err != nil {
		l.releaseSegments()
		return nil, report, fmt.Errorf("open log %s: %w", dir, err)
	}
	// From here on a crash must be seen as unclean.
	if err := l.fs.Remove(filepath.Join(dir, cleanShutdownMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.releaseSegments()
		return nil, report, fmt.Errorf("open log %s: remove clean-shutdown marker: %w", dir, err)
	}
	if err := l.fs.SyncDir(dir); err != nil {
		l.releaseSegments()
		return nil, report, fmt.Errorf("open log %s: %w", dir, err)
	}
	l.assertInvariantsLocked() // recovery owns the log exclusively
	l.durability.durableEnd = l.logEnd
	if opts.Fsync.Mode == FsyncNever {
		l.flusher = newRollFlusher(l)
	}
	if opts.Fsync.Mode == FsyncInterval {
		l.intervalStop = make(chan struct{})
		l.intervalDone = make(chan struct{})
		go l.runIntervalSync(opts.Fsync.Interval)
	}
	return l, report, nil
}

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset is the first offset readable.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStart
}

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logEnd
}

// Size is the total size of the segment files in bytes.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var total int64
	for _, s := range l.segments {
		total += s.size
	}
	return total
}

// SegmentCount is the number of segments, the active one included.
func (l *Log) SegmentCount() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segments)
}

// active is the segment appended to (caller holds appendMu or mu).
func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// Append writes one or more batches, back to back in `batches`, already
// validated by the caller (CRC included). It assigns offsets by patching each
// batch's base offset in place and writes the same bytes with one write. A
// malformed buffer is rejected before anything is written. After a write
// failure the log fails every later Append and WaitDurable (sticky error).
//
// With fsync interval/always, the append after which the active segment
// holds checkpointBytes (64 MiB) past its last checkpoint also
// flushes (flushLocked: sync, indexes, checkpoint). The bulk of that sync
// runs first without appendMu (preSync), so other appends go on; the
// flush proper then syncs only what was appended meanwhile.
func (l *Log) Append(batches []byte) (AppendResult, error) {
	return l.append(batches, false)
}

// AppendReplica is Append for a follower: each batch keeps the base offset
// it has (the leader's), which must not be below the previous batch's end
// (the log end for the first). A batch above it leaves a gap, as the
// leader's compaction did: before writing, the compacted end is raised to
// that batch's base (the cleaner checkpoint rewritten, under appendMu —
// only when there is a gap), so recovery accepts the gap.
func (l *Log) AppendReplica(batches []byte) (AppendResult, error) {
	return l.append(batches, true)
}

func (l *Log) append(batches []byte, keepOffsets bool) (AppendResult, error) {
	l.appendMu.Lock()
	result, flush, err := l.appendLocked(batches, keepOffsets)
	if !flush || err != nil {
		l.appendMu.Unlock()
		return result, err
	}
	active := l.active()
	l.flushing = true
	active.log.acquire()
	l.appendMu.Unlock()
	syncErr := l.syncSegment(active.log.file)
	active.log.release()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushing = false
	if l.closed {
		return result, nil // Close flushed the batches written, these included
	}
	if err := l.stickyError(); err != nil {
		return result, err
	}
	if syncErr != nil {
		return result, l.fail(fmt.Errorf("flush %s: sync segment %d: %w", l.dir, active.base, syncErr))
	}
	if active != l.active() || active.size-active.checkpointPosition < checkpointBytes {
		return result, nil // rolled (the roll synced and checkpointed it) or flushed since
	}
	return result, l.flushLocked()
}

// appendLocked is Append under appendMu; flush reports that the 64 MiB
// flush is due (caller holds appendMu).
func (l *Log) appendLocked(batches []byte, keepOffsets bool) (result AppendResult, flush bool, err error) {
	if err := l.usable(); err != nil {
		return AppendResult{}, false, err // a failed background sync included
	}
	if len(batches) == 0 {
		return AppendResult{}, false, ErrEmptyAppend
	}
	if int64(len(batches)) > math.MaxInt32 {
		return AppendResult{}, false, fmt.Errorf("append %s: %d bytes is too large", l.dir, len(batches))
	}
	result = AppendResult{FirstOffset: l.logEnd, MaxTimestamp: -1}
	next := l.logEnd
	l.batches = l.batches[:0]
	gapTo := int64(-1) // the largest base offset that follows a gap
	for rest := batches; len(rest) > 0; {
		view, err := wire.ParseBatch(rest)
		if err != nil {
			return AppendResult{}, false, fmt.Errorf("append %s: batch at byte %d: %w", l.dir, len(batches)-len(rest), err)
		}
		switch {
		case !keepOffsets:
			view.SetBaseOffset(next)
		case view.BaseOffset() < next:
			return AppendResult{}, false, fmt.Errorf("append %s: replica batch at %d is below the previous end %d", l.dir, view.BaseOffset(), next)
		case view.BaseOffset() > next:
			gapTo = view.BaseOffset()
		}
		if len(l.batches) == 0 {
			result.FirstOffset = view.BaseOffset()
		}
		next = view.BaseOffset()
		info := appendedBatch{base: next, last: view.LastOffset(), maxTimestamp: view.MaxTimestamp(), size: view.Size()}
		l.batches = append(l.batches, info)
		result.MaxTimestamp = max(result.MaxTimestamp, info.maxTimestamp)
		next = info.last + 1
		rest = rest[info.size:]
	}
	result.LastOffset = next - 1
	if err := l.maybeRoll(int64(len(batches)), result.LastOffset); err != nil {
		return AppendResult{}, false, err
	}
	active := l.active()
	if gapTo >= 0 {
		if result.LastOffset-active.base > math.MaxInt32 {
			return AppendResult{}, false, fmt.Errorf("append %s: replica batches up to %d: a gap too large for segment %d", l.dir, result.LastOffset, active.base)
		}
		if err := l.raiseCompactedEnd(gapTo); err != nil {
			return AppendResult{}, false, l.fail(fmt.Errorf("append %s: %w", l.dir, err))
		}
	}
	position := active.size
	if _, err := active.log.file.WriteAt(batches, position); err != nil {
		return AppendResult{}, false, l.fail(fmt.Errorf("append %s: write: %w", l.dir, err))
	}
	l.mu.Lock()
	at := position
	for _, batch := range l.batches {
		active.observeBatch(batch.base, batch.last, batch.maxTimestamp, at, batch.size, l.opts.IndexIntervalBytes)
		at += int64(batch.size)
	}
	l.logEnd = next
	l.assertInvariantsLocked()
	l.mu.Unlock()
	result.SegmentBase, result.Position = active.base, position
	flush = l.opts.Fsync.Mode != FsyncNever && !l.flushing && active.size-active.checkpointPosition >= checkpointBytes
	return result, flush, nil
}

// usable returns the sticky error, or ErrClosed (caller holds appendMu).
func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	return l.stickyError()
}

// maybeRoll rolls when the append of `size` bytes ending at lastOffset would
// overflow the segment's size, age or 32-bit relative offsets (caller holds appendMu).
func (l *Log) maybeRoll(size, lastOffset int64) error {
	active := l.active()
	if active.size == 0 {
		return nil
	}
	full := active.size+size > l.opts.SegmentBytes || lastOffset-active.base > math.MaxInt32
	if !full && l.opts.SegmentAge > 0 {
		start := active.created
		if active.firstTimestamp >= 0 {
			start = time.UnixMilli(active.firstTimestamp)
		}
		full = l.opts.Now().Sub(start) >= l.opts.SegmentAge
	}
	if !full {
		return nil
	}
	return l.rollLocked()
}

// Roll closes the active segment and starts a new one at the log end offset
// (a no-op when the active segment is empty).
func (l *Log) Roll() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	return l.rollLocked()
}

// rollLocked seals the active segment — final time index entry, sync of the
// log and index files — creates the next one and checkpoints the recovery
// point at its start (caller holds appendMu).
func (l *Log) rollLocked() error {
	old := l.active()
	if old.size == 0 {
		return nil
	}
	l.mu.Lock()
	old.sealTimeIndex()
	old.seals++
	l.assertSegmentIndexesLocked(old)
	l.mu.Unlock()
	// The transaction index is synced inline with every fsync policy (with
	// fsync never too, where the segment's data is synced in the
	// background): the caller may snapshot its producer state at the new
	// segment's base once this roll returns (the broker does), and a
	// snapshot must not be past an entry a crash can lose — replay from
	// the snapshot would not restore it. It is synced before the segment's
	// data: a crash in between leaves entries past the recovered end,
	// which recovery drops (loadAbortedTxns), never a marker without its
	// entry. Only a segment that had aborted transactions has the file.
	if err := l.syncTxnIndex(old); err != nil {
		return l.fail(fmt.Errorf("roll %s: %w", l.dir, err))
	}
	if err := l.closeTxnIndex(old); err != nil {
		return l.fail(fmt.Errorf("roll %s: close transaction index of segment %d: %w", l.dir, old.base, err))
	}
	l.abortsAllSynced() // only the rolled segment's index could hold unsynced entries
	if l.flusher == nil {
		if err := l.syncSegment(old.log.file); err != nil {
			return l.fail(fmt.Errorf("roll %s: sync segment %d: %w", l.dir, old.base, err))
		}
		if err := old.persistIndexes(l.fs, l.dir); err != nil {
			return l.fail(fmt.Errorf("roll %s: indexes of segment %d: %w", l.dir, old.base, err))
		}
	}
	next, err := l.createSegment(l.logEnd)
	if err != nil {
		return l.fail(fmt.Errorf("roll %s: %w", l.dir, err))
	}
	l.mu.Lock()
	l.segments = append(l.segments, next)
	l.assertInvariantsLocked()
	l.mu.Unlock()
	if l.flusher != nil {
		l.enqueueRollFlush(old) // its flusher collects the result (Log.collectRollFlushes)
		return nil
	}
	l.advanceDurable(old.end)
	if err := l.writeCheckpoint(next.base, 0, next.base); err != nil {
		return l.fail(fmt.Errorf("roll %s: %w", l.dir, err))
	}
	return nil
}

// createSegment creates an empty segment file at base and syncs the directory.
func (l *Log) createSegment(base int64) (*segment, error) {
	name := segmentFileName(l.dir, base, logSuffix)
	file, err := l.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment %d: %w", base, err)
	}
	if err := file.Sync(); err != nil { // a truncated leftover must stay truncated
		return nil, errors.Join(fmt.Errorf("create segment %d: %w", base, err), file.Close())
	}
	for _, suffix := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := l.fs.Remove(segmentFileName(l.dir, base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, errors.Join(fmt.Errorf("create segment %d: %w", base, err), file.Close())
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return nil, errors.Join(fmt.Errorf("create segment %d: %w", base, err), file.Close())
	}
	return newSegment(base, file, l.opts.Now()), nil
}

// newSegment describes an empty segment whose indexes are loaded (empty).
func newSegment(base int64, file File, created time.Time) *segment {
	return &segment{
		base: base, log: newSharedFile(file), end: base, lastBatchBase: base,
		maxTimestamp: -1, firstTimestamp: -1, created: created, loaded: true,
	}
}

// Flush syncs the active segment and its indexes and checkpoints the
// recovery point at the log end: a crash rescans nothing written before.
func (l *Log) Flush() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	return l.flushLocked()
}

// flushLocked is Flush for a holder of appendMu.
func (l *Log) flushLocked() error {
	if err := l.drainRollFlushes(); err != nil {
		return err
	}
	active := l.active()
	// The transaction index first, as in syncActive (see rollLocked).
	if err := l.syncTxnIndex(active); err != nil {
		return l.fail(fmt.Errorf("flush %s: %w", l.dir, err))
	}
	l.abortsAllSynced()
	if err := l.syncSegment(active.log.file); err != nil {
		return l.fail(fmt.Errorf("flush %s: sync segment %d: %w", l.dir, active.base, err))
	}
	if err := active.persistIndexes(l.fs, l.dir); err != nil {
		return l.fail(fmt.Errorf("flush %s: indexes of segment %d: %w", l.dir, active.base, err))
	}
	l.advanceDurable(active.end)
	if err := l.writeCheckpoint(active.base, active.size, active.end); err != nil {
		return l.fail(fmt.Errorf("flush %s: %w", l.dir, err))
	}
	active.checkpointPosition = active.size
	return nil
}

// Close flushes the log, marks the shutdown clean (so the next Open trusts
// the indexes) and closes the files; regions not yet released stay readable.
func (l *Log) Close() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return nil
	}
	l.stopIntervalSync()
	err := errors.Join(l.stopRollFlusher(), l.stickyError())
	if err == nil {
		l.mu.Lock()
		l.active().sealTimeIndex()
		l.assertSegmentIndexesLocked(l.active())
		l.mu.Unlock()
		err = l.flushLocked()
	}
	if err == nil {
		if markErr := WriteFileAtomic(l.fs, filepath.Join(l.dir, cleanShutdownMarker), nil); markErr != nil {
			err = fmt.Errorf("close %s: clean-shutdown marker: %w", l.dir, markErr)
		}
	}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.durability.mu.Lock()
	l.durability.closed = true
	l.durability.broadcastLocked()
	l.durability.mu.Unlock()
	return errors.Join(err, l.releaseSegments())
}

// abandon closes the files without flushing or marking a clean shutdown, as
// a killed process would leave the directory (tests and benchmarks only).
func (l *Log) abandon() {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.stopIntervalSync()
	if l.flusher != nil { // stop without collecting: nothing more reaches the checkpoint
		close(l.flusher.requests)
		<-l.flusher.done
		l.flusher = nil
	}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.releaseSegments()
}

// releaseSegments drops the log's reference to every segment file.
func (l *Log) releaseSegments() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, s := range l.segments {
		errs = append(errs, s.releaseFiles())
	}
	l.segments = nil
	return errors.Join(errs...)
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	l.removeMu.Lock()
	defer l.removeMu.Unlock()
	closeErr := l.Close()
	return errors.Join(closeErr, l.fs.RemoveAll(l.dir))
}
