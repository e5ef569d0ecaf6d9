package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// Byte positions of the batch header fields the log reads (see ".log" in the package doc and
// [github.com/exactly-eos/exactly/wire.BatchView]).
const (
	headerSize            = 61
	headerLengthField     = 8
	headerLastOffsetDelta = 23
	headerMaxTimestamp    = 35
	headerAttributes      = 21
	lengthOverhead        = 12
	attributeControl      = 0x20
)

// batchHeader is what the log needs from a stored batch header.
type batchHeader struct {
	base, last, maxTimestamp int64
	size                     int64
	control                  bool
}

// decodeHeader reads a header the log wrote itself (validated on append or recovery).
func decodeHeader(b []byte) batchHeader {
	base := int64(binary.BigEndian.Uint64(b))
	return batchHeader{
		base:         base,
		last:         base + int64(int32(binary.BigEndian.Uint32(b[headerLastOffsetDelta:]))),
		maxTimestamp: int64(binary.BigEndian.Uint64(b[headerMaxTimestamp:])),
		size:         int64(int32(binary.BigEndian.Uint32(b[headerLengthField:]))) + lengthOverhead,
		control:      binary.BigEndian.Uint16(b[headerAttributes:])&attributeControl != 0,
	}
}

// readHeader reads the header of the batch at position.
func readHeader(file File, position int64, buffer []byte) (batchHeader, error) {
	if _, err := file.ReadAt(buffer[:headerSize], position); err != nil {
		return batchHeader{}, fmt.Errorf("read batch header at %d: %w", position, err)
	}
	header := decodeHeader(buffer)
	if header.size < headerSize {
		return batchHeader{}, fmt.Errorf("batch header at %d: size %d", position, header.size)
	}
	return header, nil
}

// Region is a byte range of a segment file holding whole batches, to be sent
// with sendfile(2) at an explicit offset (pread semantics: the file position
// is never used). The file stays open until the ReadResult is released, even
// if retention or truncation removes the segment meanwhile.
type Region struct {
	// File is the segment file, or nil if the log's FS is not the OS's (then
	// use ReadAt).
	File        *os.File
	Position    int64 // byte position of the first batch in File
	Size        int64 // bytes of whole batches
	FirstOffset int64 // base offset of the first batch
	LastOffset  int64 // last offset of the last batch
	source      *sharedFile
}

// ReadAt reads the region's bytes at offset (relative to the region start).
func (r Region) ReadAt(p []byte, offset int64) (int, error) {
	if offset < 0 || offset >= r.Size {
		return 0, io.EOF
	}
	short := false
	if int64(len(p)) > r.Size-offset {
		p, short = p[:r.Size-offset], true
	}
	n, err := r.source.file.ReadAt(p, r.Position+offset)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

// ReadResult is the answer of Read. Release it when the regions are sent.
type ReadResult struct {
	Regions    []Region
	NextOffset int64 // offset after the last batch returned (from, if none)
}

// Release closes the regions' hold on their files. Calling it twice is safe.
func (r *ReadResult) Release() {
	for _, region := range r.Regions {
		region.source.release()
	}
	r.Regions = nil
}

// Bytes is the total size of the regions.
func (r *ReadResult) Bytes() int64 {
	var total int64
	for _, region := range r.Regions {
		total += region.Size
	}
	return total
}

// Read returns whole batches starting with the batch containing `from`, up
// to but excluding the first batch whose last offset is >= bound (bound is
// the high watermark or the last stable offset, clamped to the log end), and
// at most maxBytes in total — except that with minOneBatch the first batch
// is returned even if larger. `from` below the log start offset or beyond the
// log end offset yields ErrOffsetOutOfRange. Safe concurrently with Append.
//
// The read lock is held only to capture the segments' published state
// (readView); the batch headers are read from the files after it is
// released, so a slow pread never holds up an append's publication. The
// captured files are kept open by reference (sharedFile), so retention or
// truncation removing a segment meanwhile cannot close them under the
// read. Bytes below a captured size never change except by truncation,
// which bumps Log.truncations before and after (beginTruncation): a read
// that overlapped one retries, a bounded number of times, then reads
// under the lock as it always did.
func (l *Log) Read(from, bound int64, maxBytes int, minOneBatch bool) (ReadResult, error) {
	for attempt := 0; ; attempt++ {
		locked := attempt == maxUnlockedReads
		view, err := l.readView(from, bound, locked)
		if err != nil {
			return ReadResult{NextOffset: from}, err
		}
		result, err := l.readFromView(view, from, maxBytes, minOneBatch)
		view.release()
		if locked {
			l.mu.RUnlock()
		}
		if locked || view.truncations%2 == 0 && l.truncations.Load() == view.truncations {
			return result, err
		}
		result.Release() // a truncation may have rewritten what was read
	}
}

// maxUnlockedReads is how many times Read tries without holding the read
// lock across its preads before it holds it (only truncations, which do
// not happen on a single broker, make it retry).
const maxUnlockedReads = 3

// segmentView is a segment's state captured under Log.mu for a read: the
// file (one reference held), the published size, and the offset index as
// it was (entries below its length never change but by truncation).
type segmentView struct {
	base    int64
	size    int64
	offsets []indexEntry
	file    *sharedFile
}

// readView is what Read captured under the read lock.
type readView struct {
	segments    []segmentView
	bound       int64
	truncations uint64
}

// release drops the view's file references.
func (v readView) release() {
	for _, s := range v.segments {
		s.file.release()
	}
}

// readView checks the range and captures the segments a read from `from`
// may touch. With keepLocked the read lock stays held on success (the
// caller releases it); otherwise it is released before returning.
func (l *Log) readView(from, bound int64, keepLocked bool) (readView, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return readView{}, ErrClosed
	}
	if from < l.logStart || from > l.logEnd {
		err := fmt.Errorf("read %s at %d (log %d..%d): %w", l.dir, from, l.logStart, l.logEnd, ErrOffsetOutOfRange)
		l.mu.RUnlock()
		return readView{}, err
	}
	view := readView{bound: min(bound, l.logEnd), truncations: l.truncations.Load()}
	for i := l.segmentIndex(from); i < len(l.segments) && l.segments[i].base < view.bound; i++ {
		s := l.segments[i]
		l.ensureLoaded(s) // a sealed segment's index files, read once
		s.log.acquire()
		view.segments = append(view.segments, segmentView{base: s.base, size: s.size, offsets: s.offsets, file: s.log})
	}
	if !keepLocked {
		l.mu.RUnlock()
	}
	return view, nil
}

// readFromView is Read's scan over the captured segments.
func (l *Log) readFromView(view readView, from int64, maxBytes int, minOneBatch bool) (ReadResult, error) {
	result := ReadResult{NextOffset: from}
	budget := int64(max(maxBytes, 0))
	buffer := make([]byte, headerSize)
	for _, s := range view.segments {
		if from >= view.bound {
			break
		}
		region, full, err := readSegment(s, from, view.bound, budget, minOneBatch && len(result.Regions) == 0, buffer)
		if err != nil {
			result.Release()
			return ReadResult{NextOffset: from}, fmt.Errorf("read %s at %d: %w", l.dir, from, err)
		}
		if region.Size > 0 {
			s.file.acquire()
			region.source = s.file
			region.File = s.file.file.OSFile()
			result.Regions = append(result.Regions, region)
			result.NextOffset = region.LastOffset + 1
			from = region.LastOffset + 1
			budget -= region.Size
		}
		if full {
			break
		}
	}
	return result, nil
}

// ensureLoaded loads a segment's indexes on first use (caller holds mu).
func (l *Log) ensureLoaded(s *segment) { s.ensureLoaded(l.fs, l.dir) }

// segmentIndex is the index of the last segment whose base is <= offset (caller holds mu).
func (l *Log) segmentIndex(offset int64) int {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].base > offset })
	return max(i-1, 0)
}

// readSegment finds the batches of one captured segment for Read. full
// reports that the bound or the byte budget stopped the read inside this
// segment.
func readSegment(s segmentView, from, bound, budget int64, forceFirst bool, buffer []byte) (region Region, full bool, err error) {
	size := s.size // captured; bytes below it change only by truncation (see Read)
	position := positionAtOrBefore(s.offsets, s.base, from)
	var header batchHeader
	for {
		if position >= size {
			return Region{}, false, nil // `from` is past this segment
		}
		if header, err = readHeader(s.file.file, position, buffer); err != nil {
			return Region{}, true, err
		}
		if header.last >= from {
			break
		}
		position += header.size
	}
	if header.last >= bound {
		return Region{}, true, nil
	}
	region = Region{Position: position, FirstOffset: header.base, LastOffset: header.last}
	if header.size > budget {
		if forceFirst {
			region.Size = header.size
		}
		return region, true, nil
	}
	cursor := position + header.size
	// Skip straight to the farthest indexed batch that fits the budget and bound.
	if skip := positionForBudget(s.offsets, s.base, cursor, position+budget, bound); skip > cursor {
		cursor = skip
		region.LastOffset = s.base + int64(s.offsets[sort.Search(len(s.offsets), func(i int) bool {
			return int64(s.offsets[i].position) >= skip
		})].relativeOffset) - 1
	}
	for cursor < size {
		if header, err = readHeader(s.file.file, cursor, buffer); err != nil {
			return Region{}, true, err
		}
		if header.last >= bound || cursor+header.size-position > budget {
			full = true
			break
		}
		cursor += header.size
		region.LastOffset = header.last
	}
	region.Size = cursor - position
	return region, full, nil
}

// ReadBatches copies what Read(from, bound, maxBytes, true) returns into
// memory: for tests and replication.
func (l *Log) ReadBatches(from, bound int64, maxBytes int) ([]byte, error) {
	result, err := l.Read(from, bound, maxBytes, true)
	if err != nil {
		return nil, err
	}
	defer result.Release()
	data := make([]byte, result.Bytes())
	at := 0
	for _, region := range result.Regions {
		if _, err := region.ReadAt(data[at:at+int(region.Size)], 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read batches %s at %d: %w", l.dir, from, err)
		}
		at += int(region.Size)
	}
	return data, nil
}
