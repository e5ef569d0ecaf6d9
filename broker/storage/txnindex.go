package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
)

// abortedEntrySize: version int16, producer id, first offset, last offset,
// last stable offset (int64 each), CRC-32C uint32.
const (
	abortedEntrySize    = 2 + 4*8 + 4
	abortedEntryVersion = 0
)

// AbortedTxn is one aborted transaction of one producer on this partition:
// its data spans [FirstOffset, LastOffset], LastOffset being the abort
// marker, and LastStableOffset is the partition's LSO when it was aborted.
type AbortedTxn struct {
	ProducerID, FirstOffset, LastOffset, LastStableOffset int64
}

// encode lays the entry out as doc.go describes.
func (t AbortedTxn) encode() []byte {
	data := make([]byte, 0, abortedEntrySize)
	data = binary.BigEndian.AppendUint16(data, abortedEntryVersion)
	for _, value := range []int64{t.ProducerID, t.FirstOffset, t.LastOffset, t.LastStableOffset} {
		data = binary.BigEndian.AppendUint64(data, uint64(value))
	}
	return binary.BigEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
}

// decodeAbortedTxns reads entries until the first torn or corrupt one.
func decodeAbortedTxns(data []byte) []AbortedTxn {
	var entries []AbortedTxn
	for ; len(data) >= abortedEntrySize; data = data[abortedEntrySize:] {
		entry := data[:abortedEntrySize]
		if binary.BigEndian.Uint16(entry) != abortedEntryVersion ||
			crc32.Checksum(entry[:abortedEntrySize-4], castagnoli) != binary.BigEndian.Uint32(entry[abortedEntrySize-4:]) {
			break
		}
		field := func(i int) int64 { return int64(binary.BigEndian.Uint64(entry[2+8*i:])) }
		entries = append(entries, AbortedTxn{ProducerID: field(0), FirstOffset: field(1), LastOffset: field(2), LastStableOffset: field(3)})
	}
	return entries
}

// AppendAbortedTxn records an aborted transaction in the active segment's
// transaction index and syncs it. Call it after appending the abort marker
// (t.LastOffset) and before waiting for the marker to be durable.
func (l *Log) AppendAbortedTxn(t AbortedTxn) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if t.FirstOffset > t.LastOffset || t.LastOffset >= l.logEnd {
		return fmt.Errorf("aborted transaction %+v: offsets outside the log (end %d)", t, l.logEnd)
	}
	active := l.active()
	if err := l.writeAbortedTxns(active, len(active.aborted), t.encode()); err != nil {
		return l.fail(fmt.Errorf("append aborted transaction %s: %w", l.dir, err))
	}
	l.mu.Lock()
	active.aborted = append(active.aborted, t)
	l.mu.Unlock()
	active.abortedPersisted = len(active.aborted)
	return nil
}

// writeAbortedTxns makes the segment's .txnindex hold `keep` entries followed by data.
func (l *Log) writeAbortedTxns(s *segment, keep int, data []byte) error {
	file, err := l.fs.OpenFile(segmentFileName(l.dir, s.base, txnIndexSuffix), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := file.Truncate(int64(keep * abortedEntrySize)); err != nil {
		return errors.Join(err, file.Close())
	}
	if _, err := file.WriteAt(data, int64(keep*abortedEntrySize)); err != nil {
		return errors.Join(err, file.Close())
	}
	if err := file.Sync(); err != nil {
		return errors.Join(err, file.Close())
	}
	return file.Close()
}

// AbortedTxns returns the aborted transactions overlapping [from, to), in
// the order they were appended.
func (l *Log) AbortedTxns(from, to int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var result []AbortedTxn
	for _, s := range l.segments {
		if s.end <= from {
			continue // its entries all end before `from`
		}
		for _, t := range s.aborted {
			if t.LastOffset >= from && t.FirstOffset < to {
				result = append(result, t)
			}
		}
	}
	return result
}

// loadAbortedTxns reads a segment's transaction index, dropping a torn or
// corrupt tail and entries beyond the segment's end (recovery only).
func (l *Log) loadAbortedTxns(s *segment) {
	data, err := readWholeFile(l.fs, segmentFileName(l.dir, s.base, txnIndexSuffix))
	if err != nil {
		return
	}
	entries := decodeAbortedTxns(data)
	kept := entries[:0]
	for _, t := range entries {
		if t.LastOffset < s.end {
			kept = append(kept, t)
		}
	}
	s.aborted = kept
	s.abortedPersisted = len(kept) // a torn tail is cut by the next write
}
