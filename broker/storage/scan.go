package storage

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/exactly-eos/exactly/wire"
)

// maxControlBatchRead bounds the bytes ScanHeaders reads for a control batch.
const maxControlBatchRead = 4096

// BatchHeader is one batch as ScanBatchHeaders visits it.
type BatchHeader struct {
	// View covers the batch header only (61 bytes), except for control
	// batches (transaction markers) up to 4 KiB, which are read whole so the
	// marker type is readable. For a header-only view the batch length field
	// in the copy is rewritten to 49 so that wire.ParseBatch accepts it:
	// View.Size, View.BatchLength and View.Records describe the copy; use
	// Size for the batch's real size. The view's bytes are reused after fn returns.
	View wire.BatchView
	// Complete says View holds the whole batch.
	Complete bool
	// SegmentBase and Position locate the batch; Size is its real size.
	SegmentBase, Position, Size int64
}

// ScanHeaders visits the header of every batch from the one containing
// `from` to the log end, reading only the 61-byte headers (never payloads;
// see BatchHeader.View for what the view holds). It is the recovery hook for
// derived state (producer state, transaction index). An error from fn stops
// the scan and is returned.
func (l *Log) ScanHeaders(from int64, fn func(v wire.BatchView) error) error {
	return l.ScanBatchHeaders(from, func(h BatchHeader) error { return fn(h.View) })
}

// ScanBatchHeaders is ScanHeaders with each batch's real size and position.
func (l *Log) ScanBatchHeaders(from int64, fn func(h BatchHeader) error) error {
	segments, sizes, err := l.acquireFrom(from)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range segments {
			s.log.release()
		}
	}()
	buffer := make([]byte, maxControlBatchRead)
	for i, s := range segments {
		position := int64(0)
		if i == 0 {
			l.mu.RLock()
			l.ensureLoaded(s)
			position = s.positionAtOrBefore(from)
			l.mu.RUnlock()
		}
		for position < sizes[i] {
			header, err := l.visitHeader(s, position, from, buffer, fn)
			if err != nil {
				return err
			}
			position += header.size
		}
	}
	return nil
}

// acquireFrom takes a reference on every segment from the one holding
// `from` and snapshots their published sizes, so the scan runs without mu.
func (l *Log) acquireFrom(from int64) ([]*segment, []int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, nil, ErrClosed
	}
	if from < l.logStart || from > l.logEnd {
		return nil, nil, fmt.Errorf("scan %s at %d (log %d..%d): %w", l.dir, from, l.logStart, l.logEnd, ErrOffsetOutOfRange)
	}
	var segments []*segment
	var sizes []int64
	for _, s := range l.segments[l.segmentIndex(from):] {
		s.log.acquire()
		segments = append(segments, s)
		sizes = append(sizes, s.size)
	}
	return segments, sizes, nil
}

// visitHeader reads the batch at position and calls fn if it reaches `from`.
func (l *Log) visitHeader(s *segment, position, from int64, buffer []byte, fn func(h BatchHeader) error) (batchHeader, error) {
	header, err := readHeader(s.log.file, position, buffer)
	if err != nil {
		return header, fmt.Errorf("scan %s segment %d: %w", l.dir, s.base, err)
	}
	if header.last < from {
		return header, nil
	}
	view := buffer[:headerSize]
	complete := header.control && header.size <= maxControlBatchRead
	if complete {
		view = buffer[:header.size]
		if _, err := s.log.file.ReadAt(view, position); err != nil {
			return header, fmt.Errorf("scan %s segment %d: control batch at %d: %w", l.dir, s.base, position, err)
		}
	} else {
		binary.BigEndian.PutUint32(view[headerLengthField:], headerSize-lengthOverhead)
	}
	parsed, err := wire.ParseBatch(view)
	if err != nil {
		return header, fmt.Errorf("scan %s segment %d at %d: %w", l.dir, s.base, position, err)
	}
	return header, fn(BatchHeader{View: parsed, Complete: complete, SegmentBase: s.base, Position: position, Size: header.size})
}

// OffsetForTimestamp finds the first batch whose max timestamp is >= ts,
// through the time index, and returns its base offset (or the log start
// offset, if larger) and max timestamp. The offset is that of the batch, not
// of the exact record: payloads are not parsed, so it may precede the first
// matching record within the batch. found is false when no batch qualifies.
// Like Read, it captures the candidate segments under the read lock and
// reads their headers after releasing it, retrying if a truncation
// overlapped (then, the last time, reading under the lock).
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, found bool) {
	for attempt := 0; ; attempt++ {
		locked := attempt == maxUnlockedReads
		l.mu.RLock()
		if l.closed {
			l.mu.RUnlock()
			return 0, 0, false
		}
		logStart, truncations := l.logStart, l.truncations.Load()
		var candidates []timeCandidate
		for _, s := range l.segments {
			if s.maxTimestamp < ts || s.end <= logStart {
				continue
			}
			l.ensureLoaded(s)
			s.log.acquire()
			candidates = append(candidates, timeCandidate{segmentView: segmentView{base: s.base, size: s.size, offsets: s.offsets, file: s.log}, times: s.times})
		}
		if !locked {
			l.mu.RUnlock()
		}
		offset, timestamp, found = offsetForTimestamp(candidates, ts, logStart)
		for _, c := range candidates {
			c.file.release()
		}
		if locked {
			l.mu.RUnlock()
		}
		if locked || truncations%2 == 0 && l.truncations.Load() == truncations {
			return offset, timestamp, found
		}
	}
}

// timeCandidate is a segment OffsetForTimestamp may find ts in: its view
// and its time index as captured.
type timeCandidate struct {
	segmentView
	times []timeEntry
}

// offsetForTimestamp is OffsetForTimestamp's scan over captured segments.
func offsetForTimestamp(candidates []timeCandidate, ts, logStart int64) (offset int64, timestamp int64, found bool) {
	buffer := make([]byte, headerSize)
	for _, s := range candidates {
		// Every batch up to the last entry with timestamp < ts is too old.
		i := sort.Search(len(s.times), func(i int) bool { return s.times[i].timestamp >= ts })
		position := int64(0)
		if i > 0 {
			position = positionAtOrBefore(s.offsets, s.base, s.base+int64(s.times[i-1].relativeOffset))
		}
		for position < s.size {
			header, err := readHeader(s.file.file, position, buffer)
			if err != nil {
				return 0, 0, false
			}
			if header.maxTimestamp >= ts && header.last >= logStart {
				return max(header.base, logStart), header.maxTimestamp, true
			}
			position += header.size
		}
	}
	return 0, 0, false
}
