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

// encode lays the entry out as ".txnindex" in the package doc describes.
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
// transaction index. Call it after appending the abort marker (t.LastOffset)
// and before waiting for the marker to be durable.
//
// The entry is written to the index file, kept open while the segment is
// active, without a sync of its own: it becomes durable with the segment,
// under the log's fsync policy ("Durability" in the package doc). With fsync always or
// interval, WaitDurable of the marker's offset (or of any later one) returns
// only once an fdatasync of the index that covers the entry returned; a
// roll syncs the sealed segment's index before the Append that rolled
// returns (with every fsync policy), and Flush, Close and truncation sync it
// too. SyncAbortedTxns syncs it on demand.
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
	file, err := l.openTxnIndex(active)
	if err == nil {
		_, err = file.file.WriteAt(t.encode(), int64(active.abortedPersisted*abortedEntrySize))
	}
	if err != nil {
		return l.fail(fmt.Errorf("append aborted transaction %s segment %d: %w", l.dir, active.base, err))
	}
	l.mu.Lock()
	active.aborted = append(active.aborted, t)
	l.mu.Unlock()
	active.abortedPersisted = len(active.aborted)
	// Noted after the write: a sync that captures the index from now on
	// (syncActive) covers this entry.
	l.noteAbortWritten(t.LastOffset)
	return nil
}

// SyncAbortedTxns makes every transaction index entry appended so far
// durable: a caller that records state which assumes them on disk (a
// producer-state snapshot past their markers) calls it first. It costs
// nothing when every entry is synced already.
func (l *Log) SyncAbortedTxns() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if !l.abortsUnsynced() {
		return nil
	}
	if err := l.syncTxnIndex(l.active()); err != nil {
		return l.fail(fmt.Errorf("sync aborted transactions %s: %w", l.dir, err))
	}
	l.abortsAllSynced()
	return nil
}

// openTxnIndex returns the segment's open transaction index, opening (and,
// if missing, creating) it on the first entry appended while the segment
// is active. The file is cut to the entries the segment holds: recovery may
// have dropped a torn tail. A created file's directory entry is synced at
// once, so a later sync of the file makes its entries durable (once per
// segment that holds aborted transactions). Caller holds appendMu.
func (l *Log) openTxnIndex(s *segment) (*sharedFile, error) {
	if s.txnFile != nil {
		return s.txnFile, nil
	}
	name := segmentFileName(l.dir, s.base, txnIndexSuffix)
	file, err := l.fs.OpenFile(name, os.O_RDWR, 0)
	created := errors.Is(err, os.ErrNotExist)
	if created {
		file, err = l.fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("open transaction index: %w", err)
	}
	if err := file.Truncate(int64(s.abortedPersisted * abortedEntrySize)); err != nil {
		return nil, errors.Join(fmt.Errorf("cut transaction index: %w", err), file.Close())
	}
	if created {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return nil, errors.Join(fmt.Errorf("create transaction index: %w", err), file.Close())
		}
	}
	shared := newSharedFile(file)
	l.mu.Lock()
	s.txnFile = shared // read by syncActive under mu
	l.mu.Unlock()
	return shared, nil
}

// syncTxnIndex fdatasyncs the segment's open transaction index, if it has
// one (caller holds appendMu).
func (l *Log) syncTxnIndex(s *segment) error {
	if s.txnFile == nil {
		return nil
	}
	if err := s.txnFile.file.Sync(); err != nil {
		return fmt.Errorf("sync transaction index of segment %d: %w", s.base, err)
	}
	return nil
}

// closeTxnIndex drops the log's reference to the segment's transaction
// index file (a sync in flight holds its own) when the segment stops being
// active (caller holds appendMu).
func (l *Log) closeTxnIndex(s *segment) error {
	if s.txnFile == nil {
		return nil
	}
	l.mu.Lock()
	file := s.txnFile
	s.txnFile = nil
	l.mu.Unlock()
	return file.release()
}

// writeAbortedTxns makes the segment's .txnindex hold `keep` entries
// followed by data, and syncs it (truncation, recovery). It goes through
// the open file when the segment has one.
func (l *Log) writeAbortedTxns(s *segment, keep int, data []byte) error {
	if s.txnFile != nil {
		return rewriteSynced(s.txnFile.file, keep, data)
	}
	file, err := l.fs.OpenFile(segmentFileName(l.dir, s.base, txnIndexSuffix), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := rewriteSynced(file, keep, data); err != nil {
		return errors.Join(err, file.Close())
	}
	return file.Close()
}

// rewriteSynced cuts a transaction index after `keep` entries, writes data
// there and syncs the file.
func rewriteSynced(file File, keep int, data []byte) error {
	if err := file.Truncate(int64(keep * abortedEntrySize)); err != nil {
		return err
	}
	if _, err := file.WriteAt(data, int64(keep*abortedEntrySize)); err != nil {
		return err
	}
	return file.Sync()
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
// corrupt tail and entries beyond the segment's end (recovery only). When
// it dropped any, it rewrites the file with the entries kept and syncs it:
// an entry whose marker a crash lost must not come back once a later batch
// takes the marker's offset (entries are synced before their segment's
// data, so a crash can leave such an entry behind; see syncActive).
func (l *Log) loadAbortedTxns(s *segment) error {
	data, err := readWholeFile(l.fs, segmentFileName(l.dir, s.base, txnIndexSuffix))
	if err != nil {
		return nil // no index: no aborted transaction in this segment
	}
	entries := decodeAbortedTxns(data)
	kept := entries[:0]
	for _, t := range entries {
		if t.LastOffset < s.end {
			kept = append(kept, t)
		}
	}
	s.aborted = kept
	s.abortedPersisted = len(kept)
	if len(data) == len(kept)*abortedEntrySize {
		return nil
	}
	if err := l.writeAbortedTxns(s, 0, encodeAbortedTxns(kept)); err != nil {
		return fmt.Errorf("recovery: transaction index of segment %d: %w", s.base, err)
	}
	return nil
}
