package storage

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

// CleanOptions configure one Clean (cleanup.policy=compact).
type CleanOptions struct {
	// UpperBound is the last stable offset: no segment holding an offset
	// at or past it is cleaned (nor read into the offset map).
	UpperBound int64
	// Now is the cleaner's clock; zero: Options.Now().
	Now time.Time
	// DeleteRetention is delete.retention.ms: the first clean that keeps
	// a tombstone (null value), or the marker of a transaction of which
	// nothing is left, stamps its batch with the delete horizon Now +
	// DeleteRetention; a clean at or past the horizon removes it (KIP-534).
	DeleteRetention time.Duration
	// MinCompactionLag is min.compaction.lag.ms: a segment whose newest
	// record is younger is not cleaned, nor any segment after it.
	MinCompactionLag time.Duration
	// MaxBytesPerSecond bounds the cleaner's reads plus writes
	// (log.cleaner.io.max.bytes.per.second); 0 = unbounded.
	MaxBytesPerSecond int64
	// MaxMapKeys bounds the offset map (Kafka's dedupe buffer): the dirty
	// section stops at the first segment boundary past it (at least one
	// dirty segment is always taken). 0 = 4 Mi keys.
	MaxMapKeys int
	// LastBatchOfProducer maps a producer id to the base offset of its
	// newest data batch in the log (the broker's producer state). That
	// batch is always kept, emptied if need be, so its sequence survives
	// for idempotent retries. Nil: the cleaner finds them by scanning the
	// batch headers of the whole log.
	LastBatchOfProducer map[int64]int64
	// Abort, when closed, stops the Clean between two batches (and cuts a
	// throttle's sleep short) with ErrCleanAborted. What was swapped in
	// stays; the rest is cleaned by a later Clean.
	Abort <-chan struct{}
}

// ErrCleanAborted is Clean's error when CleanOptions.Abort was closed.
var ErrCleanAborted = errors.New("clean aborted")

// CleanResult says what a Clean did.
type CleanResult struct {
	BytesRead         int64 // bytes of the segments read (offset map and rewrite)
	BytesWritten      int64 // bytes of the cleaned segments written
	RecordsRemoved    int64 // records dropped (superseded, aborted, expired tombstones and markers)
	BatchesRemoved    int64 // batches dropped whole
	SegmentsRewritten int   // source segments replaced
	SegmentsWritten   int   // cleaned segments that replaced them
	FirstDirtyOffset  int64 // where the next clean's dirty section starts
	// NextDeleteHorizon is the earliest delete horizon of the batches
	// the clean kept with tombstones or finished transactions' markers
	// (-1: none): a clean at or after it removes something even when no
	// new record has arrived, so the broker's cleaner schedules one then.
	NextDeleteHorizon int64
}

// defaultMaxMapKeys is CleanOptions.MaxMapKeys' default.
const defaultMaxMapKeys = 4 << 20

// cleanerWriteChunk is how many cleaned bytes are buffered per write.
const cleanerWriteChunk = 1 << 20

func crc32Castagnoli(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Clean compacts the log (Kafka's log cleaner, see "Compaction" in the package doc):
// it keeps the latest record of every key, drops aborted transactions'
// data, expired tombstones and markers with nothing left to cover, and
// rewrites the sealed segments below the cleanable end — the recovery
// point, the upper bound, the compaction lag and the active segment bound
// it — merging neighbours up to SegmentBytes. Offsets never change:
// batches keep their base and last offsets, removed ones leave gaps.
//
// Concurrency: one Clean at a time (cleanMu); it holds removeMu throughout,
// so retention and truncation wait for it, and appendMu only to capture
// the segments and to publish each cleaned segment. Appends and reads go
// on meanwhile; a read that captured a replaced segment reads its old
// file, which stays open until released.
func (l *Log) Clean(opts CleanOptions) (CleanResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.removeMu.Lock()
	defer l.removeMu.Unlock()
	if opts.Now.IsZero() {
		opts.Now = l.opts.Now()
	}
	if opts.MaxMapKeys <= 0 {
		opts.MaxMapKeys = defaultMaxMapKeys
	}
	plan, err := l.planClean(opts, true)
	if err != nil {
		return CleanResult{}, err
	}
	defer plan.release()
	result := CleanResult{FirstDirtyOffset: plan.firstDirty, NextDeleteHorizon: -1}
	if len(plan.segments) == 0 {
		return result, nil
	}
	c := &cleaner{log: l, opts: opts, plan: plan, keys: newOffsetMap(), result: &result,
		throttle: throttle{rate: opts.MaxBytesPerSecond, start: time.Now(), abort: opts.Abort}, decompressor: &wire.Decompressor{}}
	aborted := l.AbortedTxns(plan.segments[0].base, math.MaxInt64)
	if err := c.buildOffsetMap(newTxnTracker(aborted)); err != nil {
		return result, err
	}
	if err := c.findLastBatches(); err != nil {
		return result, err
	}
	c.tracker = newTxnTracker(aborted)
	// Recovery must accept gaps below the compacted end before any swap commits.
	if plan.end > l.compactedEnd.Load() {
		if err := l.writeCleanerCheckpoint(cleanerCheckpoint{firstDirty: plan.firstDirty, compactedEnd: plan.end}); err != nil {
			return result, fmt.Errorf("clean %s: %w", l.dir, err)
		}
	}
	for _, group := range plan.groups(l.opts.SegmentBytes) {
		if err := c.cleanGroup(group); err != nil {
			return result, fmt.Errorf("clean %s: %w", l.dir, err)
		}
	}
	compactedEnd := max(l.compactedEnd.Load(), plan.end)
	if err := l.writeCleanerCheckpoint(cleanerCheckpoint{firstDirty: plan.end, compactedEnd: compactedEnd}); err != nil {
		return result, fmt.Errorf("clean %s: %w", l.dir, err)
	}
	result.FirstDirtyOffset = plan.end
	return result, nil
}

// cleanPlan is what a Clean rewrites: the sealed segments from the first
// up to the cleanable end, with a reference held on each file.
type cleanPlan struct {
	segments   []*segment
	sizes      []int64 // their sizes when captured (sealed: they do not change)
	firstDirty int64   // the dirty section is [firstDirty, end)
	end        int64   // the cleanable end: a segment boundary
	dirtyFrom  int     // index of the first segment reaching past firstDirty
	acquired   bool
}

// release drops the plan's file references.
func (p *cleanPlan) release() {
	if p.acquired {
		for _, s := range p.segments {
			s.log.release()
		}
	}
	p.segments = nil
}

// shorten keeps the plan's first n segments.
func (p *cleanPlan) shorten(n int) {
	if p.acquired {
		for _, s := range p.segments[n:] {
			s.log.release()
		}
	}
	p.segments, p.sizes = p.segments[:n], p.sizes[:n]
	p.end = p.segments[n-1].end
}

// planClean captures the cleanable segments (under appendMu; with acquire
// a reference is taken on each). The cleanable end is the base of the first
// segment that is active, at or past the recovery point (so recovery never
// rescans a cleaned segment), reaches the upper bound, or is dirty and
// younger than the compaction lag.
func (l *Log) planClean(opts CleanOptions, acquire bool) (*cleanPlan, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return nil, err
	}
	l.checkpointMu.Lock()
	recoverySegment := l.lastCheckpoint.recoverySegment
	l.checkpointMu.Unlock()
	first := l.segments[0]
	firstDirty := l.firstDirty.Load() // the cleaner checkpoint's, kept in memory
	if firstDirty < first.base || firstDirty > l.logEnd {
		firstDirty = first.base
	}
	plan := &cleanPlan{firstDirty: firstDirty, end: first.base, acquired: acquire}
	lagHorizon := opts.Now.Add(-opts.MinCompactionLag).UnixMilli()
	for _, s := range l.segments[:len(l.segments)-1] {
		if s.base >= recoverySegment || s.end > opts.UpperBound {
			break
		}
		if opts.MinCompactionLag > 0 && s.end > firstDirty && s.maxTimestamp > lagHorizon {
			break
		}
		if acquire {
			s.log.acquire()
		}
		plan.segments = append(plan.segments, s)
		plan.sizes = append(plan.sizes, s.size)
		plan.end = s.end
	}
	plan.dirtyFrom = len(plan.segments)
	for i, s := range plan.segments {
		if s.end > firstDirty {
			plan.dirtyFrom = i
			break
		}
	}
	return plan, nil
}

// groups splits the plan into runs of neighbouring segments to merge into
// one: at most segmentBytes together and within 32-bit relative offsets.
func (p *cleanPlan) groups(segmentBytes int64) [][]int {
	var groups [][]int
	var size int64
	for i, s := range p.segments {
		if n := len(groups); n > 0 {
			head := p.segments[groups[n-1][0]]
			if size+p.sizes[i] <= segmentBytes && s.end-1-head.base <= math.MaxInt32 {
				groups[n-1] = append(groups[n-1], i)
				size += p.sizes[i]
				continue
			}
		}
		groups = append(groups, []int{i})
		size = p.sizes[i]
	}
	return groups
}

// cleaner is one Clean in progress.
type cleaner struct {
	log          *Log
	opts         CleanOptions
	plan         *cleanPlan
	keys         *offsetMap
	tracker      *txnTracker
	lastBatch    map[int64]int64
	result       *CleanResult
	throttle     throttle
	decompressor *wire.Decompressor
	reader       chunkReader
	keep         []rawRecord
	scratch      []byte
}

// forEachBatch calls fn with every batch of plan segment i, in order.
func (c *cleaner) forEachBatch(i int, fn func(view wire.BatchView) error) error {
	s := c.plan.segments[i]
	c.reader.file, c.reader.size, c.reader.start = s.log.file, c.plan.sizes[i], 0
	c.reader.buffer = c.reader.buffer[:0]
	for position := int64(0); position < c.plan.sizes[i]; {
		if c.aborted() {
			return ErrCleanAborted
		}
		data, err := c.reader.batchAt(position)
		if err != nil {
			return fmt.Errorf("segment %d at byte %d: %v", s.base, position, err)
		}
		view, err := wire.ParseBatch(data)
		if err != nil {
			return fmt.Errorf("segment %d at byte %d: %w", s.base, position, err)
		}
		if err := fn(view); err != nil {
			return fmt.Errorf("segment %d at byte %d: %w", s.base, position, err)
		}
		position += int64(view.Size())
	}
	c.result.BytesRead += c.plan.sizes[i]
	c.throttle.add(c.plan.sizes[i])
	return nil
}

// aborted reports whether CleanOptions.Abort is closed.
func (c *cleaner) aborted() bool {
	select {
	case <-c.opts.Abort:
		return true
	default:
		return false
	}
}

// buildOffsetMap maps every key of the dirty section to its latest offset,
// skipping aborted data, and shortens the plan where the map is full.
func (c *cleaner) buildOffsetMap(tracker *txnTracker) error {
	for i := c.plan.dirtyFrom; i < len(c.plan.segments); i++ {
		if i > c.plan.dirtyFrom && len(c.keys.offsets) >= c.opts.MaxMapKeys {
			c.plan.shorten(i)
			break
		}
		err := c.forEachBatch(i, func(view wire.BatchView) error {
			if view.Control() || view.LastOffset() < c.plan.firstDirty {
				return nil
			}
			if view.Transactional() && view.ProducerID() >= 0 && tracker.dataBatch(view.ProducerID(), view.BaseOffset()) {
				return nil
			}
			records, err := batchRecords(view, c.decompressor)
			if err != nil {
				return err
			}
			for at := 0; at < len(records); {
				record, err := nextRecord(records, at)
				if err != nil {
					return err
				}
				if record.key != nil {
					c.keys.put(record.key, view.BaseOffset()+int64(record.offsetDelta))
				}
				at = record.end
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("clean %s: offset map: %w", c.log.dir, err)
		}
	}
	return nil
}

// findLastBatches finds each producer's newest data batch, from the
// options or from the batch headers of the whole log.
func (c *cleaner) findLastBatches() error {
	if c.opts.LastBatchOfProducer != nil {
		c.lastBatch = c.opts.LastBatchOfProducer
		return nil
	}
	c.lastBatch = map[int64]int64{}
	err := c.log.ScanBatchHeaders(c.log.LogStartOffset(), func(h BatchHeader) error {
		if !h.View.Control() && h.View.ProducerID() >= 0 {
			c.lastBatch[h.View.ProducerID()] = h.View.BaseOffset()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("clean %s: producers' last batches: %w", c.log.dir, err)
	}
	return nil
}

// cleanGroup writes the plan segments of group, cleaned, into one new
// segment and swaps it in. A single segment from which nothing goes is
// left alone.
func (c *cleaner) cleanGroup(group []int) error {
	l := c.log
	first, last := c.plan.segments[group[0]], c.plan.segments[group[len(group)-1]]
	file, err := l.fs.OpenFile(cleanedName(l.dir, first.base, logSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	w := &cleanedWriter{segment: newSegment(first.base, file, c.opts.Now), interval: l.opts.IndexIntervalBytes, changed: len(group) > 1}
	abandon := func(err error) error {
		return errors.Join(err, w.segment.log.release(), l.removeCleaned(first.base))
	}
	for _, i := range group {
		if err := c.forEachBatch(i, func(view wire.BatchView) error { return c.cleanBatch(view, w) }); err != nil {
			return abandon(err)
		}
	}
	if err := w.flush(&c.throttle); err != nil {
		return abandon(err)
	}
	if !w.changed {
		return abandon(nil)
	}
	if err := w.finish(l, last.end); err != nil {
		return abandon(err)
	}
	c.result.BytesWritten += w.segment.size
	c.result.SegmentsRewritten += len(group)
	c.result.SegmentsWritten++
	return l.swapIn(c.plan.segments[group[0]:group[len(group)-1]+1], w.segment)
}

// cleanBatch decides what of one batch the cleaned segment keeps.
//
// Tombstones and the markers of finished transactions go in two steps, as
// in Kafka (KIP-534): the first clean that keeps one stamps its batch with
// a delete horizon, now + delete.retention.ms; a clean at or after the
// horizon removes it. So a consumer that started reading before a
// tombstone was first cleaned has the whole delete retention to see it,
// whatever timestamp its producer gave it.
func (c *cleaner) cleanBatch(view wire.BatchView, w *cleanedWriter) error {
	base, producer := view.BaseOffset(), view.ProducerID()
	now := c.opts.Now.UnixMilli()
	horizon, hasHorizon := view.DeleteHorizon()
	if view.Control() {
		return c.cleanMarker(view, w, now)
	}
	lastOfProducer := false
	if producer >= 0 {
		lastBase, ok := c.lastBatch[producer]
		lastOfProducer = ok && lastBase == base
	}
	if view.Transactional() && producer >= 0 && c.tracker.dataBatch(producer, base) {
		return c.emit(view, nil, nil, lastOfProducer, -1, w)
	}
	records, err := batchRecords(view, c.decompressor)
	if err != nil {
		return err
	}
	tombstonesExpired := hasHorizon && horizon <= now
	keptTombstone := false
	c.keep = c.keep[:0]
	for at := 0; at < len(records); {
		record, err := nextRecord(records, at)
		if err != nil {
			return err
		}
		if c.retain(view, record, tombstonesExpired) {
			c.keep = append(c.keep, record)
			keptTombstone = keptTombstone || record.nullValue
		}
		at = record.end
	}
	newHorizon := int64(-1)
	switch {
	case keptTombstone && !hasHorizon:
		newHorizon = c.deleteHorizon(now)
		c.keptHorizon(newHorizon)
	case keptTombstone:
		c.keptHorizon(horizon)
	}
	return c.emit(view, records, c.keep, lastOfProducer, newHorizon, w)
}

// cleanMarker decides about a control batch: a marker whose transaction
// left nothing behind gets a delete horizon at the first clean that finds
// it so, and goes at the first clean past the horizon.
func (c *cleaner) cleanMarker(view wire.BatchView, w *cleanedWriter, now int64) error {
	kind, empty, err := markerType(view)
	if err != nil {
		return err
	}
	if empty { // an emptied control batch: nothing to see, it may go
		w.drop(view, c.result)
		return nil
	}
	done, txn, isAbort := c.tracker.marker(view.ProducerID(), view.BaseOffset(), kind)
	horizon, hasHorizon := view.DeleteHorizon()
	if done && hasHorizon && horizon <= now {
		w.drop(view, c.result)
		return nil
	}
	if isAbort {
		w.segment.aborted = append(w.segment.aborted, txn)
	}
	if !done || hasHorizon {
		if hasHorizon {
			c.keptHorizon(horizon)
		}
		return w.append(view.Bytes(), view, &c.throttle)
	}
	records := view.Records() // control batches are never compressed
	c.keep = c.keep[:0]
	for at := 0; at < len(records); {
		record, err := nextRecord(records, at)
		if err != nil {
			return err
		}
		c.keep = append(c.keep, record)
		at = record.end
	}
	newHorizon := c.deleteHorizon(now)
	c.keptHorizon(newHorizon)
	rebuilt, err := rebuildBatch(c.scratch[:0], view, records, c.keep, newHorizon)
	if err != nil {
		return err
	}
	c.scratch = rebuilt
	w.changed = true
	return w.append(rebuilt, view, &c.throttle)
}

// keptHorizon notes the delete horizon of a batch the clean keeps.
func (c *cleaner) keptHorizon(horizon int64) {
	if c.result.NextDeleteHorizon < 0 || horizon < c.result.NextDeleteHorizon {
		c.result.NextDeleteHorizon = horizon
	}
}

// deleteHorizon is the horizon a clean at now stamps: now plus the delete
// retention, saturating.
func (c *cleaner) deleteHorizon(now int64) int64 {
	retention := c.opts.DeleteRetention.Milliseconds()
	if retention > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + retention
}

// retain says whether a record of a live (not aborted) batch stays: it
// has a key, no later record of the key is in the dirty section, and it is
// not a tombstone of a batch whose delete horizon has passed.
func (c *cleaner) retain(view wire.BatchView, record rawRecord, tombstonesExpired bool) bool {
	if record.key == nil {
		return false // a compacted log has no use for keyless records (Kafka drops them too)
	}
	if latest, ok := c.keys.latest(record.key); ok && view.BaseOffset()+int64(record.offsetDelta) < latest {
		return false
	}
	return !record.nullValue || !tombstonesExpired
}

// emit writes what remains of a data batch: the batch as it was, rebuilt
// with the kept records (stamped with newHorizon when that is not -1),
// empty (a producer's last batch keeps its header), or nothing.
func (c *cleaner) emit(view wire.BatchView, records []byte, keep []rawRecord, lastOfProducer bool, newHorizon int64, w *cleanedWriter) error {
	count := int(view.RecordCount())
	switch {
	case len(keep) == count && records != nil && newHorizon < 0:
		return w.append(view.Bytes(), view, &c.throttle)
	case len(keep) == 0 && !lastOfProducer:
		w.drop(view, c.result)
		return nil
	}
	rebuilt, err := rebuildBatch(c.scratch[:0], view, records, keep, newHorizon)
	if err != nil {
		return err
	}
	c.scratch = rebuilt
	c.result.RecordsRemoved += int64(count - len(keep))
	w.changed = true
	return w.append(rebuilt, view, &c.throttle)
}

// cleanedWriter writes a cleaned segment's .log.cleaned and builds its indexes.
type cleanedWriter struct {
	segment  *segment
	buffer   []byte
	written  int64 // bytes of the file written so far
	interval int
	changed  bool // something was dropped or rewritten
}

// drop counts a batch removed whole.
func (w *cleanedWriter) drop(view wire.BatchView, result *CleanResult) {
	result.BatchesRemoved++
	result.RecordsRemoved += int64(view.RecordCount())
	w.changed = true
}

// append adds a batch (the bytes of source, or its rebuilt copy).
func (w *cleanedWriter) append(batch []byte, source wire.BatchView, t *throttle) error {
	w.segment.observeBatch(source.BaseOffset(), source.LastOffset(), source.MaxTimestamp(), w.segment.size, len(batch), w.interval)
	w.buffer = append(w.buffer, batch...)
	if len(w.buffer) >= cleanerWriteChunk {
		return w.flush(t)
	}
	return nil
}

// flush writes the buffered bytes.
func (w *cleanedWriter) flush(t *throttle) error {
	if len(w.buffer) == 0 {
		return nil
	}
	if _, err := w.segment.log.file.WriteAt(w.buffer, w.written); err != nil {
		return err
	}
	w.written += int64(len(w.buffer))
	t.add(int64(len(w.buffer)))
	w.buffer = w.buffer[:0]
	return nil
}

// finish seals the cleaned segment at end (the replaced segments' end),
// writes its index and transaction index files (.cleaned) and syncs all.
func (w *cleanedWriter) finish(l *Log, end int64) error {
	s := w.segment
	s.sealTimeIndex()
	s.end = end
	var offsets, times []byte
	for _, entry := range s.offsets {
		offsets = appendUint32s(offsets, entry.relativeOffset, entry.position)
	}
	for _, entry := range s.times {
		times = appendUint32s(appendUint32s(times, uint32(uint64(entry.timestamp)>>32), uint32(entry.timestamp)), entry.relativeOffset)
	}
	for _, file := range []struct {
		suffix string
		data   []byte
	}{{indexSuffix, offsets}, {timeIndexSuffix, times}, {txnIndexSuffix, encodeAbortedTxns(s.aborted)}} {
		if err := writeSyncedFile(l.fs, cleanedName(l.dir, s.base, file.suffix), file.data); err != nil {
			return err
		}
	}
	if err := s.log.file.Sync(); err != nil {
		return err
	}
	s.offsetsPersisted, s.timesPersisted, s.abortedPersisted = len(s.offsets), len(s.times), len(s.aborted)
	s.checkpointPosition, s.seals = s.size, 1
	return nil
}

// appendUint32s appends big-endian uint32s.
func appendUint32s(dst []byte, values ...uint32) []byte {
	for _, v := range values {
		dst = append(dst, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return dst
}

// swapIn replaces the segments old (neighbours in l.segments) by the
// cleaned segment fresh: the manifest commits the swap, the list is
// published, then the files are renamed into place (finishSwap; recovery
// redoes it after a crash). A failure after the commit is sticky: the
// next Open completes the swap.
func (l *Log) swapIn(old []*segment, fresh *segment) error {
	base, end := fresh.base, old[len(old)-1].end
	if err := l.writeSwapManifest(base, end); err != nil {
		fresh.log.release()
		return l.fail(fmt.Errorf("commit swap of segments %d..%d: %w", base, end, err))
	}
	l.appendMu.Lock()
	if l.closed {
		l.appendMu.Unlock()
		fresh.log.release()
		return ErrClosed // the next Open completes the swap
	}
	l.mu.Lock()
	at := -1
	for i, s := range l.segments {
		if s == old[0] {
			at = i
			break
		}
	}
	if at < 0 || at+len(old) >= len(l.segments) || l.segments[at+len(old)-1] != old[len(old)-1] {
		l.mu.Unlock()
		l.appendMu.Unlock()
		fresh.log.release()
		return l.fail(fmt.Errorf("swap of segments %d..%d: the segments changed during the clean", base, end))
	}
	segments := append(append(append(make([]*segment, 0, len(l.segments)-len(old)+1), l.segments[:at]...), fresh), l.segments[at+len(old):]...)
	l.segments = segments
	l.assertInvariantsLocked()
	l.mu.Unlock()
	l.appendMu.Unlock()
	for _, s := range old {
		s.log.release() // the log's reference; readers and the plan hold theirs
	}
	if err := l.finishSwap(base, end); err != nil {
		return l.fail(err)
	}
	return nil
}

// throttle bounds a byte rate by sleeping.
type throttle struct {
	rate  int64
	start time.Time
	bytes int64
	abort <-chan struct{} // ends a sleep early
}

// add counts n bytes and sleeps until the rate is respected.
func (t *throttle) add(n int64) {
	if t.rate <= 0 {
		return
	}
	t.bytes += n
	due := time.Duration(float64(t.bytes) / float64(t.rate) * float64(time.Second))
	if wait := due - time.Since(t.start); wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-t.abort:
		}
	}
}

// CleanableStats sizes a log's cleanable part for the cleaner's scheduling
// (min.cleanable.dirty.ratio, max.compaction.lag.ms).
type CleanableStats struct {
	CleanBytes       int64 // bytes of the cleanable segments below the first dirty offset
	DirtyBytes       int64 // bytes of the cleanable segments from it on
	FirstDirtyOffset int64 // from the cleaner-offset-checkpoint (or the first segment's base)
	CleanableEnd     int64 // where a clean with these options would stop
	// FirstDirtyTimestamp is the max timestamp of the first dirty segment's
	// first batch (-1 if none): with max.compaction.lag.ms a log is due
	// for cleaning once it is that old, whatever its dirty ratio.
	FirstDirtyTimestamp int64
}

// DirtyRatio is DirtyBytes over the cleanable bytes (0 when there are none),
// compared with min.cleanable.dirty.ratio.
func (s CleanableStats) DirtyRatio() float64 {
	if s.CleanBytes+s.DirtyBytes == 0 {
		return 0
	}
	return float64(s.DirtyBytes) / float64(s.CleanBytes+s.DirtyBytes)
}

// CleanableStats computes what Clean(opts) would work on, without cleaning.
func (l *Log) CleanableStats(opts CleanOptions) (CleanableStats, error) {
	if opts.Now.IsZero() {
		opts.Now = l.opts.Now()
	}
	plan, err := l.planClean(opts, true)
	if err != nil {
		return CleanableStats{}, err
	}
	defer plan.release()
	stats := CleanableStats{FirstDirtyOffset: plan.firstDirty, CleanableEnd: plan.end, FirstDirtyTimestamp: -1}
	for i, s := range plan.segments {
		if i < plan.dirtyFrom {
			stats.CleanBytes += plan.sizes[i]
			continue
		}
		stats.DirtyBytes += plan.sizes[i]
		if i == plan.dirtyFrom && plan.sizes[i] > 0 {
			header, err := readHeader(s.log.file, 0, make([]byte, headerSize))
			if err != nil {
				return stats, fmt.Errorf("cleanable stats %s: segment %d: %w", l.dir, s.base, err)
			}
			stats.FirstDirtyTimestamp = header.maxTimestamp
		}
	}
	return stats, nil
}
