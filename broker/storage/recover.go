package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/exactly-eos/exactly/wire"
)

// RecoveryReport says what Open found and repaired.
type RecoveryReport struct {
	CleanShutdown   bool   // the clean-shutdown marker was present: nothing was rescanned
	SegmentsScanned int    // segments whose batches were read and CRC-checked (whole or from the recovery point)
	BytesScanned    int64  // bytes read by those scans
	TruncatedBytes  int64  // bytes cut from the tail (torn or corrupt batches, and segments after them)
	TruncatedAt     int64  // offset at which the log was truncated, -1 if it was not
	Reason          string // why it was truncated, or which fallback recovery took
	IndexesRebuilt  int    // segments whose index files were damaged or missing and rebuilt
}

// recover loads the segments of l.dir into l (see "Recovery" in the package doc).
func (l *Log) recover() (RecoveryReport, error) {
	report := RecoveryReport{TruncatedAt: -1}
	if err := l.recoverSwaps(); err != nil {
		return report, err
	}
	bases, err := l.listSegments()
	if err != nil {
		return report, err
	}
	_, markerErr := readWholeFile(l.fs, filepath.Join(l.dir, cleanShutdownMarker))
	report.CleanShutdown = markerErr == nil
	saved, checkpointErr := l.readCheckpoint()
	for _, base := range bases {
		s, err := l.openSegment(base)
		if err != nil {
			return report, err
		}
		l.segments = append(l.segments, s)
	}
	if len(l.segments) == 0 {
		return report, l.startEmpty(saved.logStartOffset)
	}
	for i, s := range l.segments[:len(l.segments)-1] {
		s.end = l.segments[i+1].base
	}
	scanFrom, position, offset := len(l.segments)-1, int64(-1), int64(0)
	switch {
	case report.CleanShutdown:
	case checkpointErr != nil:
		report.Reason = fmt.Sprintf("no usable checkpoint (%v): rescanning the last segment", checkpointErr)
		position, offset = 0, l.active().base
	default:
		scanFrom, position, offset = l.recoveryStart(saved)
	}
	for _, s := range l.segments[:scanFrom] {
		rebuilt, err := l.verifySealed(s)
		if err != nil {
			return report, err
		}
		if rebuilt {
			report.IndexesRebuilt++
		}
	}
	if position < 0 {
		if ok := l.loadCleanTail(l.active()); !ok {
			report.Reason = "clean shutdown marker but the last segment's tail is inconsistent: rescanning it"
			report.CleanShutdown = false
			position, offset = 0, l.active().base
		}
	}
	if position >= 0 {
		if err := l.scanTail(scanFrom, position, offset, &report); err != nil {
			return report, err
		}
	}
	for _, s := range l.segments {
		if err := l.loadAbortedTxns(s); err != nil {
			return report, err
		}
	}
	l.logEnd = l.active().end
	l.logStart = max(saved.logStartOffset, l.segments[0].base)
	if l.logStart > l.logEnd {
		report.Reason += fmt.Sprintf("; log start offset %d beyond the recovered end %d: restarting empty", l.logStart, l.logEnd)
		return report, l.truncateFully(l.logStart)
	}
	l.lastCheckpoint = saved
	if !report.CleanShutdown {
		// Make what was recovered the new recovery point.
		return report, l.flushLocked()
	}
	return report, nil
}

// listSegments returns the base offsets of the .log files, sorted, and
// removes leftovers: temporary files and indexes without a log.
func (l *Log) listSegments() ([]int64, error) {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l.dir, err)
	}
	logs := map[string]bool{}
	var bases []int64
	for _, entry := range entries {
		if stem, ok := strings.CutSuffix(entry.Name(), logSuffix); ok && len(stem) == 20 {
			base, err := strconv.ParseInt(stem, 10, 64)
			if err != nil || base < 0 {
				return nil, fmt.Errorf("list %s: segment file name %q is not a base offset", l.dir, entry.Name())
			}
			bases = append(bases, base)
			logs[stem] = true
		}
	}
	for _, entry := range entries {
		name := entry.Name()
		stem, _, _ := strings.Cut(name, ".")
		orphan := len(stem) == 20 && !logs[stem] && !strings.HasSuffix(name, logSuffix)
		if strings.HasSuffix(name, ".tmp") || orphan {
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
				return nil, fmt.Errorf("remove leftover %s: %w", name, err)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// readCheckpoint reads the checkpoint file; a zero checkpoint on error.
func (l *Log) readCheckpoint() (checkpoint, error) {
	data, err := readWholeFile(l.fs, filepath.Join(l.dir, checkpointFileName))
	if err != nil {
		return checkpoint{}, err
	}
	return decodeCheckpoint(data)
}

// startEmpty creates the first segment of a new (or emptied) log at base.
func (l *Log) startEmpty(base int64) error {
	s, err := l.createSegment(base)
	if err != nil {
		return err
	}
	l.segments = []*segment{s}
	l.logStart, l.logEnd = base, base
	return l.writeCheckpoint(base, 0, base)
}

// openSegment opens a segment's log file; its end and indexes are set by recovery.
func (l *Log) openSegment(base int64) (*segment, error) {
	file, err := l.fs.OpenFile(segmentFileName(l.dir, base, logSuffix), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open segment %d: %w", base, err)
	}
	info, err := file.Stat()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open segment %d: %w", base, err), file.Close())
	}
	s := newSegment(base, file, info.ModTime())
	s.loaded = false
	s.size = info.Size()
	return s, nil
}

// recoveryStart maps the checkpoint to (segment index, position, offset) to
// rescan from. A checkpoint naming a missing segment, or a position beyond
// the file (a truncation that did not reach the checkpoint), falls back to
// the start of the nearest later segment.
func (l *Log) recoveryStart(saved checkpoint) (index int, position, offset int64) {
	for i, s := range l.segments {
		if s.base == saved.recoverySegment && saved.recoveryPosition <= s.size {
			return i, saved.recoveryPosition, saved.recoveryOffset
		}
		if s.base >= saved.recoverySegment {
			return i, 0, s.base
		}
	}
	return len(l.segments) - 1, 0, l.active().base
}

// verifySealed checks a sealed segment's index files cheaply — whole
// entries, the last entries inside the segment, the last offset entry
// pointing at a batch with the right base offset — and rebuilds them from
// the batch headers if not. It reports whether it rebuilt.
func (l *Log) verifySealed(s *segment) (bool, error) {
	if l.indexesSane(s) {
		if last, ok := readLastTimeEntry(l.fs, segmentFileName(l.dir, s.base, timeIndexSuffix)); ok {
			s.maxTimestamp = last.timestamp
		}
		return false, nil
	}
	if err := l.rebuildIndexes(s); err != nil {
		return false, err
	}
	return true, nil
}

// indexesSane is the cheap check of verifySealed.
func (l *Log) indexesSane(s *segment) bool {
	last, present, err := readLastIndexEntry(l.fs, segmentFileName(l.dir, s.base, indexSuffix))
	if err != nil {
		return false
	}
	if present {
		if int64(last.position) >= s.size || int64(last.relativeOffset) >= s.end-s.base {
			return false
		}
		header, err := readHeader(s.log.file, int64(last.position), make([]byte, headerSize))
		if err != nil || header.base != s.base+int64(last.relativeOffset) {
			return false
		}
	}
	timeFile, err := l.fs.OpenFile(segmentFileName(l.dir, s.base, timeIndexSuffix), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer timeFile.Close()
	info, err := timeFile.Stat()
	if err != nil || info.Size()%timeEntrySize != 0 {
		return false
	}
	entry, ok := readLastTimeEntry(l.fs, segmentFileName(l.dir, s.base, timeIndexSuffix))
	return !ok || int64(entry.relativeOffset) < s.end-s.base
}

// rebuildIndexes recreates a sealed segment's indexes from its batch
// headers. A sealed segment was synced when it rolled, so a batch that does
// not parse is disk corruption, reported as an error rather than truncated.
func (l *Log) rebuildIndexes(s *segment) error {
	end := s.end
	s.resetIndexes()
	s.end = end
	end, offset, _, problem := l.scanBatches(s, 0, s.base, false)
	if problem != "" || end != s.size || offset > s.end {
		return fmt.Errorf("rebuild indexes of segment %d: %s (scanned to byte %d offset %d, segment has %d bytes up to offset %d)",
			s.base, problem, end, offset, s.size, s.end)
	}
	s.sealTimeIndex()
	if err := s.persistIndexes(l.fs, l.dir); err != nil {
		return fmt.Errorf("rebuild indexes of segment %d: %w", s.base, err)
	}
	return nil
}

// loadCleanTail restores the active segment after a clean shutdown: it
// trusts the indexes and reads only the headers after the last index entry
// to find the log end. It reports false if the tail does not add up.
func (l *Log) loadCleanTail(s *segment) bool {
	s.end = s.base + 1<<40 // unknown yet; only bounds the index sanity check
	s.ensureLoaded(l.fs, l.dir)
	if !l.restoreRunningState(s, s.size, true) {
		s.offsets, s.times = nil, nil
		return false
	}
	return true
}

// restoreRunningState sets a segment's running state (end, max timestamp,
// last batch, bytes since the last index entry) for its first `upTo` bytes
// by reading the batch headers after the last index entry before upTo.
// trusted says the headers need not be re-validated.
func (l *Log) restoreRunningState(s *segment, upTo int64, trusted bool) bool {
	start, end := int64(0), s.base
	s.pruneIndexes(upTo, s.base+1<<40)
	if n := len(s.offsets); n > 0 {
		start, end = int64(s.offsets[n-1].position), s.base+int64(s.offsets[n-1].relativeOffset)
	}
	buffer := make([]byte, headerSize)
	s.maxTimestamp, s.firstTimestamp, s.lastBatchBase = -1, -1, s.base
	if n := len(s.times); n > 0 {
		s.maxTimestamp = s.times[n-1].timestamp
	}
	if upTo > 0 {
		header, err := readHeader(s.log.file, 0, buffer)
		if err != nil {
			return false
		}
		s.firstTimestamp = header.maxTimestamp
	}
	for position := start; position < upTo; {
		header, err := readHeader(s.log.file, position, buffer)
		if err != nil || !l.offsetFollows(header.base, end, true) || position+header.size > upTo || (!trusted && header.last < header.base) {
			return false
		}
		s.maxTimestamp, s.lastBatchBase, end = max(s.maxTimestamp, header.maxTimestamp), header.base, header.last+1
		position += header.size
	}
	s.pruneIndexes(upTo, end)
	s.size, s.end, s.bytesSinceIndex = upTo, end, int(upTo-start)
	s.loaded = true
	return true
}

// scanTail rescans segments[from:] — the first from `position` (a synced
// batch boundary at `offset`), the others whole — validating every batch
// (length, magic, CRC-32C, contiguous offsets). At the first torn or
// corrupt batch it truncates that segment and deletes the later ones.
func (l *Log) scanTail(from int, position, offset int64, report *RecoveryReport) error {
	first := l.segments[from]
	if position > 0 {
		fileSize := first.size
		first.end = first.base + 1<<40 // unknown yet; only bounds the index sanity check
		first.ensureLoaded(l.fs, l.dir)
		if !l.restoreRunningState(first, position, false) || first.end != offset {
			position, offset = 0, first.base
			report.Reason = "recovery point inconsistent with the segment: rescanning it whole"
		}
		first.size = fileSize // scanBatches reads up to the end of the file
	}
	for i := from; i < len(l.segments); i++ {
		s := l.segments[i]
		start := int64(0)
		if i == from {
			start = position
		} else {
			offset = l.segments[i-1].end
		}
		if start == 0 {
			s.resetIndexes()
		}
		if start == 0 && !l.offsetFollows(s.base, offset, true) {
			previous := l.segments[i-1] // i > from: the first segment starts at its base
			return l.cutTail(i-1, previous.size, previous.end, fmt.Sprintf("segment %d does not start at offset %d", s.base, offset), report)
		}
		fileSize := s.size
		end, next, scanned, problem := l.scanBatches(s, start, offset, true)
		report.SegmentsScanned++
		report.BytesScanned += scanned
		s.size, s.end = end, next
		if problem == "" && i < len(l.segments)-1 && next < l.segments[i+1].base && l.offsetFollows(l.segments[i+1].base, next, true) {
			s.end = l.segments[i+1].base // the batches compaction removed at the segment's end
		}
		if problem != "" {
			s.size = fileSize
			return l.cutTail(i, end, next, problem, report)
		}
		if i < len(l.segments)-1 {
			if err := l.sealRecovered(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// cutTail truncates segment i at position (offset `at`) and deletes the
// segments after it, recording why in the report.
func (l *Log) cutTail(i int, position, at int64, problem string, report *RecoveryReport) error {
	s := l.segments[i]
	report.TruncatedAt = at
	report.TruncatedBytes += s.size - position
	report.Reason = fmt.Sprintf("segment %d at byte %d (offset %d): %s", s.base, position, at, problem)
	later := l.segments[i+1:]
	for _, t := range later {
		report.TruncatedBytes += t.size
	}
	if err := l.removeSegments(later); err != nil {
		return fmt.Errorf("recovery: %w", err)
	}
	l.segments = l.segments[:i+1]
	if err := s.log.file.Truncate(position); err != nil {
		return fmt.Errorf("recovery: truncate segment %d: %w", s.base, err)
	}
	s.size, s.end = position, at
	s.pruneIndexes(position, at)
	return s.log.file.Sync()
}

// sealRecovered persists a rescanned non-active segment: log, final time
// index entry and index files.
func (l *Log) sealRecovered(s *segment) error {
	s.sealTimeIndex()
	if err := s.log.file.Sync(); err != nil {
		return fmt.Errorf("recovery: sync segment %d: %w", s.base, err)
	}
	if err := s.persistIndexes(l.fs, l.dir); err != nil {
		return fmt.Errorf("recovery: indexes of segment %d: %w", s.base, err)
	}
	return nil
}

// scanBatches reads a segment's batches from start, expecting the first at
// offset, and records each in the segment's indexes. It stops at the end of
// the file or at the first batch that is torn or corrupt, returning where it
// stopped, the offset there, the bytes read and the problem ("" at the end).
func (l *Log) scanBatches(s *segment, start, offset int64, validate bool) (end, next, scanned int64, problem string) {
	fileSize := s.size // observeBatch moves s.size along with the scan
	reader := chunkReader{file: s.log.file, size: fileSize}
	position := start
	for position < fileSize {
		data, err := reader.batchAt(position)
		if err != nil {
			return position, offset, reader.read, err.Error()
		}
		view, err := wire.ParseBatch(data)
		if err == nil && validate {
			err = view.Validate()
		}
		if err == nil && !l.offsetFollows(view.BaseOffset(), offset, validate) {
			err = fmt.Errorf("base offset %d, expected %d", view.BaseOffset(), offset)
		}
		if err == nil && view.LastOffset()-s.base > 1<<31-1 {
			err = fmt.Errorf("offset %d does not fit the segment's 32-bit relative offsets", view.LastOffset())
		}
		if err != nil {
			return position, offset, reader.read, err.Error()
		}
		s.observeBatch(offset, view.LastOffset(), view.MaxTimestamp(), position, view.Size(), l.opts.IndexIntervalBytes)
		offset = view.LastOffset() + 1
		position += int64(view.Size())
	}
	return position, offset, reader.read, ""
}

// chunkReader reads a file in large chunks so a scan makes few system calls.
type chunkReader struct {
	file   File
	size   int64
	buffer []byte
	start  int64 // file position of buffer[0]
	read   int64 // bytes read so far
}

const scanChunkBytes = 1 << 20

// batchAt returns the bytes of the whole batch at position, or an error
// saying why it cannot be a whole batch (torn header, torn body).
func (r *chunkReader) batchAt(position int64) ([]byte, error) {
	if position+headerSize > r.size {
		return nil, fmt.Errorf("torn batch header: %d bytes left", r.size-position)
	}
	header, err := r.window(position, headerSize)
	if err != nil {
		return nil, err
	}
	size := decodeHeader(header).size
	if size < headerSize || position+size > r.size {
		return nil, fmt.Errorf("torn batch: length %d, %d bytes left", size, r.size-position)
	}
	return r.window(position, size)
}

// window returns file bytes [position, position+length), refilling the buffer if needed.
func (r *chunkReader) window(position, length int64) ([]byte, error) {
	if position >= r.start && position+length <= r.start+int64(len(r.buffer)) {
		return r.buffer[position-r.start : position-r.start+length], nil
	}
	capacity := max(length, scanChunkBytes)
	if int64(cap(r.buffer)) < capacity {
		r.buffer = make([]byte, capacity)
	}
	r.buffer = r.buffer[:min(int64(cap(r.buffer)), r.size-position)]
	n, err := r.file.ReadAt(r.buffer, position)
	r.read += int64(n)
	if int64(n) < length {
		return nil, fmt.Errorf("read at %d: %d of %d bytes: %v", position, n, length, err)
	}
	r.buffer, r.start = r.buffer[:n], position
	return r.buffer[:length], nil
}

// offsetFollows says whether a batch (or segment) at base may follow the
// offset expected after the previous batch: the same offset, or — where
// compaction may have removed batches (below the compacted end, or
// anywhere when not validating, for a sealed segment's index rebuild) — a
// larger one.
func (l *Log) offsetFollows(base, expected int64, validate bool) bool {
	if base == expected {
		return true
	}
	return base > expected && (!validate || expected < l.compactedEnd.Load())
}
