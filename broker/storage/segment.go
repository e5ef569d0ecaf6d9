package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// File name suffixes of a segment's files; the stem is the 20-digit base offset.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	txnIndexSuffix  = ".txnindex"

	indexEntrySize = 8  // relative offset uint32, position uint32
	timeEntrySize  = 12 // timestamp int64, relative offset uint32
)

// segmentFileName is "<20-digit base offset><suffix>" inside dir.
func segmentFileName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// sharedFile is a reference-counted open file: the log holds one reference
// while the segment is live, and every Region holds one until Release, so a
// file removed by retention or truncation stays readable for in-flight reads.
type sharedFile struct {
	file File
	refs atomic.Int32
}

func newSharedFile(file File) *sharedFile {
	shared := &sharedFile{file: file}
	shared.refs.Store(1)
	return shared
}

func (f *sharedFile) acquire() { f.refs.Add(1) }

// release drops one reference and closes the file with the last one.
func (f *sharedFile) release() error {
	if f.refs.Add(-1) == 0 {
		return f.file.Close()
	}
	return nil
}

// indexEntry maps the base offset of a batch (relative to the segment's
// base offset) to the batch's byte position in the .log file.
type indexEntry struct {
	relativeOffset uint32
	position       uint32
}

// timeEntry says: every batch up to and including the batch at relativeOffset
// has a max timestamp <= timestamp.
type timeEntry struct {
	timestamp      int64
	relativeOffset uint32
}

// segment is one .log file and its indexes.
//
// Ownership: base and log never change. The fields under "published" are
// written by the appender (or by Truncate/recovery) while holding Log.mu for
// writing and read by readers under Log.mu.RLock. The persisted counters are
// only touched by the holder of Log.appendMu.
type segment struct {
	base int64
	log  *sharedFile
	// txnFile is the open .txnindex of the active segment, opened by the
	// first AppendAbortedTxn while it is active and closed (after a sync)
	// when it rolls; nil otherwise: only the active segment holds one.
	// Set and cleared under appendMu and mu (syncActive reads it under mu).
	txnFile *sharedFile

	// published state, guarded by Log.mu
	size            int64 // bytes of whole batches visible to readers
	end             int64 // offset after the last batch (== base when empty)
	maxTimestamp    int64 // largest batch max timestamp, -1 if none
	firstTimestamp  int64 // max timestamp of the first batch, -1 if none
	lastBatchBase   int64 // base offset of the newest batch (== base when empty)
	created         time.Time
	bytesSinceIndex int

	// Indexes of a sealed segment are loaded lazily on first use under
	// loadMutex; the active segment's are always loaded. Once loaded, the
	// slices change only under Log.mu held for writing.
	loadMutex sync.Mutex
	loaded    bool
	offsets   []indexEntry
	times     []timeEntry
	aborted   []AbortedTxn

	// appender-owned (Log.appendMu): how many entries the index files hold,
	// and where the last recovery checkpoint was taken.
	offsetsPersisted   int
	timesPersisted     int
	indexesStale       bool // the index files may hold entries beyond the persisted counts
	seals              int  // times the segment was sealed by a roll (guarded by Log.mu)
	abortedPersisted   int  // entries written to the .txnindex (synced or not)
	checkpointPosition int64
}

// lastTimestampEntry is the newest time index entry, or timestamp -1.
func (s *segment) lastTimestampEntry() timeEntry {
	if len(s.times) == 0 {
		return timeEntry{timestamp: -1}
	}
	return s.times[len(s.times)-1]
}

// observeBatch records a batch appended at position (caller holds Log.mu for
// writing, or owns the segment exclusively during recovery).
func (s *segment) observeBatch(baseOffset, lastOffset, maxTimestamp, position int64, size, interval int) {
	if s.size == position && position == 0 {
		s.firstTimestamp = maxTimestamp
	}
	s.maxTimestamp = max(s.maxTimestamp, maxTimestamp)
	if s.bytesSinceIndex >= interval && position > 0 {
		relative := uint32(baseOffset - s.base)
		s.offsets = append(s.offsets, indexEntry{relativeOffset: relative, position: uint32(position)})
		if s.maxTimestamp > s.lastTimestampEntry().timestamp {
			s.times = append(s.times, timeEntry{timestamp: s.maxTimestamp, relativeOffset: relative})
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += size
	s.size = position + int64(size)
	s.end = lastOffset + 1
	s.lastBatchBase = baseOffset
}

// sealTimeIndex appends a final time index entry for the newest batch so the
// segment's max timestamp survives a clean restart (caller holds Log.mu for writing).
func (s *segment) sealTimeIndex() {
	if s.size == 0 || s.maxTimestamp <= s.lastTimestampEntry().timestamp {
		return
	}
	s.times = append(s.times, timeEntry{timestamp: s.maxTimestamp, relativeOffset: uint32(s.lastBatchBase - s.base)})
}

// positionAtOrBefore returns the position of the indexed batch with the
// largest base offset <= offset (0 when none): a batch boundary from which
// a forward scan finds the batch containing offset.
func (s *segment) positionAtOrBefore(offset int64) int64 {
	return positionAtOrBefore(s.offsets, s.base, offset)
}

// positionAtOrBefore is segment.positionAtOrBefore over an offset index
// of a segment at base (Read passes one it captured).
func positionAtOrBefore(offsets []indexEntry, base, offset int64) int64 {
	if offset <= base {
		return 0
	}
	relative := uint64(offset - base)
	i := sort.Search(len(offsets), func(i int) bool { return uint64(offsets[i].relativeOffset) > relative })
	if i == 0 {
		return 0
	}
	return int64(offsets[i-1].position)
}

// positionForBudget returns the largest indexed batch position p with
// start <= p <= limitPosition whose base offset is < bound, or start if none,
// in the offset index of a segment at base. Every batch between start and
// p ends at or before p, so a reader may skip straight there.
func positionForBudget(offsets []indexEntry, base, start, limitPosition, bound int64) int64 {
	i := sort.Search(len(offsets), func(i int) bool { return int64(offsets[i].position) > limitPosition })
	for i > 0 {
		entry := offsets[i-1]
		if int64(entry.position) < start {
			break
		}
		if base+int64(entry.relativeOffset) < bound {
			return int64(entry.position)
		}
		i--
	}
	return start
}

// ensureLoaded reads a sealed segment's index files on first use. An index
// that fails its sanity checks is dropped (reads then scan from the segment
// start): indexes only speed lookups up, correctness never depends on them.
func (s *segment) ensureLoaded(fs FS, dir string) {
	s.loadMutex.Lock()
	defer s.loadMutex.Unlock()
	if s.loaded {
		return
	}
	s.loaded = true
	offsets, err := readOffsetIndex(fs, segmentFileName(dir, s.base, indexSuffix))
	if err == nil && validOffsetIndex(offsets, s.size, s.end-s.base) {
		s.offsets = offsets
	}
	s.offsetsPersisted = len(s.offsets)
	times, err := readTimeIndex(fs, segmentFileName(dir, s.base, timeIndexSuffix))
	if err == nil && validTimeIndex(times, s.end-s.base) {
		s.times = times
	}
	s.timesPersisted = len(s.times)
}

// validOffsetIndex checks that entries strictly increase and stay inside the segment.
func validOffsetIndex(entries []indexEntry, size, span int64) bool {
	for i, entry := range entries {
		if int64(entry.position) >= size || int64(entry.relativeOffset) >= span {
			return false
		}
		if i > 0 && (entry.position <= entries[i-1].position || entry.relativeOffset <= entries[i-1].relativeOffset) {
			return false
		}
	}
	return true
}

// validTimeIndex checks that entries increase and stay inside the segment.
func validTimeIndex(entries []timeEntry, span int64) bool {
	for i, entry := range entries {
		if int64(entry.relativeOffset) >= span {
			return false
		}
		if i > 0 && (entry.timestamp <= entries[i-1].timestamp || entry.relativeOffset < entries[i-1].relativeOffset) {
			return false
		}
	}
	return true
}

// readOffsetIndex decodes an .index file, ignoring a torn trailing entry.
func readOffsetIndex(fs FS, name string) ([]indexEntry, error) {
	data, err := readWholeFile(fs, name)
	if err != nil {
		return nil, err
	}
	entries := make([]indexEntry, 0, len(data)/indexEntrySize)
	for len(data) >= indexEntrySize {
		entries = append(entries, indexEntry{
			relativeOffset: binary.BigEndian.Uint32(data),
			position:       binary.BigEndian.Uint32(data[4:]),
		})
		data = data[indexEntrySize:]
	}
	return entries, nil
}

// readTimeIndex decodes a .timeindex file, ignoring a torn trailing entry.
func readTimeIndex(fs FS, name string) ([]timeEntry, error) {
	data, err := readWholeFile(fs, name)
	if err != nil {
		return nil, err
	}
	entries := make([]timeEntry, 0, len(data)/timeEntrySize)
	for len(data) >= timeEntrySize {
		entries = append(entries, timeEntry{
			timestamp:      int64(binary.BigEndian.Uint64(data)),
			relativeOffset: binary.BigEndian.Uint32(data[8:]),
		})
		data = data[timeEntrySize:]
	}
	return entries, nil
}

// readLastTimeEntry reads only the newest entry of a .timeindex file.
func readLastTimeEntry(fs FS, name string) (timeEntry, bool) {
	file, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return timeEntry{}, false
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil || info.Size() < timeEntrySize {
		return timeEntry{}, false
	}
	var buffer [timeEntrySize]byte
	at := info.Size() - info.Size()%timeEntrySize - timeEntrySize
	if _, err := file.ReadAt(buffer[:], at); err != nil {
		return timeEntry{}, false
	}
	return timeEntry{timestamp: int64(binary.BigEndian.Uint64(buffer[:])), relativeOffset: binary.BigEndian.Uint32(buffer[8:])}, true
}

// readLastIndexEntry reads only the newest entry of an .index file.
func readLastIndexEntry(fs FS, name string) (entry indexEntry, present bool, err error) {
	file, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return indexEntry{}, false, err
	}
	if err != nil {
		return indexEntry{}, false, err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return indexEntry{}, false, err
	}
	if info.Size()%indexEntrySize != 0 {
		return indexEntry{}, false, fmt.Errorf("index %s: size %d is not a multiple of %d", name, info.Size(), indexEntrySize)
	}
	if info.Size() == 0 {
		return indexEntry{}, false, nil
	}
	var buffer [indexEntrySize]byte
	if _, err := file.ReadAt(buffer[:], info.Size()-indexEntrySize); err != nil && !errors.Is(err, io.EOF) {
		return indexEntry{}, false, err
	}
	return indexEntry{relativeOffset: binary.BigEndian.Uint32(buffer[:]), position: binary.BigEndian.Uint32(buffer[4:])}, true, nil
}

// persistIndexes writes the index entries not yet on disk (cutting a stale
// tail first) and syncs the files. Caller holds Log.appendMu.
func (s *segment) persistIndexes(fs FS, dir string) error {
	if !s.loaded {
		return nil // a sealed segment whose indexes were never touched
	}
	offsets := make([]byte, 0, (len(s.offsets)-s.offsetsPersisted)*indexEntrySize)
	for _, entry := range s.offsets[s.offsetsPersisted:] {
		offsets = binary.BigEndian.AppendUint32(offsets, entry.relativeOffset)
		offsets = binary.BigEndian.AppendUint32(offsets, entry.position)
	}
	name := segmentFileName(dir, s.base, indexSuffix)
	if err := appendToFile(fs, name, s.offsetsPersisted, indexEntrySize, offsets, s.indexesStale); err != nil {
		return err
	}
	s.offsetsPersisted = len(s.offsets)
	times := make([]byte, 0, (len(s.times)-s.timesPersisted)*timeEntrySize)
	for _, entry := range s.times[s.timesPersisted:] {
		times = binary.BigEndian.AppendUint64(times, uint64(entry.timestamp))
		times = binary.BigEndian.AppendUint32(times, entry.relativeOffset)
	}
	name = segmentFileName(dir, s.base, timeIndexSuffix)
	if err := appendToFile(fs, name, s.timesPersisted, timeEntrySize, times, s.indexesStale); err != nil {
		return err
	}
	s.timesPersisted = len(s.times)
	s.indexesStale = false
	return nil
}

// pruneIndexes drops the index entries at or beyond byte position / offset
// end (caller holds Log.mu for writing, or owns the segment in recovery).
func (s *segment) pruneIndexes(position, end int64) {
	for len(s.offsets) > 0 && int64(s.offsets[len(s.offsets)-1].position) >= position {
		s.offsets = s.offsets[:len(s.offsets)-1]
	}
	for len(s.times) > 0 && s.base+int64(s.times[len(s.times)-1].relativeOffset) >= end {
		s.times = s.times[:len(s.times)-1]
	}
	if len(s.offsets) < s.offsetsPersisted || len(s.times) < s.timesPersisted {
		s.indexesStale = true
	}
	s.offsetsPersisted = min(s.offsetsPersisted, len(s.offsets))
	s.timesPersisted = min(s.timesPersisted, len(s.times))
}

// resetIndexes empties the indexes before a rebuild from the batches.
func (s *segment) resetIndexes() {
	s.offsets, s.times, s.loaded, s.indexesStale = nil, nil, true, true
	s.offsetsPersisted, s.timesPersisted = 0, 0
	s.maxTimestamp, s.firstTimestamp, s.lastBatchBase, s.bytesSinceIndex = -1, -1, s.base, 0
}

// appendToFile writes data after the first `persisted` entries of a file of
// fixed-size entries, first cutting anything beyond them if stale, and syncs.
func appendToFile(fs FS, name string, persisted, entrySize int, data []byte, stale bool) error {
	if len(data) == 0 && !stale && persisted > 0 {
		return nil // nothing new (an empty index file is still created once)
	}
	file, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if stale {
		if err := file.Truncate(int64(persisted * entrySize)); err != nil {
			return errors.Join(err, file.Close())
		}
	}
	if _, err := file.WriteAt(data, int64(persisted*entrySize)); err != nil {
		return errors.Join(err, file.Close())
	}
	if err := file.Sync(); err != nil {
		return errors.Join(err, file.Close())
	}
	return file.Close()
}

// releaseFiles drops the log's references to the segment's open files.
func (s *segment) releaseFiles() error {
	err := s.log.release()
	if s.txnFile != nil {
		err = errors.Join(err, s.txnFile.release())
		s.txnFile = nil
	}
	return err
}

// removeFiles unlinks every file of the segment (missing ones are fine).
func (s *segment) removeFiles(fs FS, dir string) error {
	var errs []error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := fs.Remove(segmentFileName(dir, s.base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
