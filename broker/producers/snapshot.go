package producers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/exactly-eos/exactly/broker/storage"
)

// Snapshot file layout constants; the package doc ("Snapshot file format")
// describes the format byte by byte.
const (
	snapshotMagic          = "XPRS"
	snapshotVersion        = 1
	snapshotHeaderSize     = 24
	snapshotEntryFixedSize = 32
	snapshotBatchSize      = 32
	snapshotSuffix         = ".snapshot"
	snapshotTempSuffix     = ".snapshot.tmp"
	snapshotDigits         = 20
	// SnapshotsKept is how many snapshot files WriteSnapshot (WriteTo) leaves.
	SnapshotsKept = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SnapshotFileName returns the file name of the snapshot taken at offset:
// the offset in 20 decimal digits, then ".snapshot" (Kafka's convention).
func SnapshotFileName(offset int64) string {
	return fmt.Sprintf("%0*d%s", snapshotDigits, offset, snapshotSuffix)
}

// parseSnapshotFileName returns the offset a snapshot file name carries.
func parseSnapshotFileName(name string) (int64, bool) {
	digits, found := strings.CutSuffix(name, snapshotSuffix)
	if !found || len(digits) != snapshotDigits {
		return 0, false
	}
	offset, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || offset < 0 {
		return 0, false
	}
	return offset, true
}

// encodeSnapshot serializes the state as of log offset (see "Snapshot file
// format" in the package doc); a producer updated since the last sweep is
// stamped with nowMillis.
func (s *PartitionState) encodeSnapshot(offset, nowMillis int64) []byte {
	entries := make([]*producerEntry, 0, len(s.producers))
	size := snapshotHeaderSize
	for _, entry := range s.producers {
		entries = append(entries, entry)
		size += snapshotEntryFixedSize + entry.count*snapshotBatchSize
	}
	slices.SortFunc(entries, func(a, b *producerEntry) int {
		switch {
		case a.producerID < b.producerID:
			return -1
		case a.producerID > b.producerID:
			return 1
		}
		return 0
	})
	buffer := make([]byte, snapshotHeaderSize, size)
	copy(buffer, snapshotMagic)
	binary.BigEndian.PutUint16(buffer[4:], snapshotVersion)
	binary.BigEndian.PutUint64(buffer[12:], uint64(offset))
	binary.BigEndian.PutUint32(buffer[20:], uint32(len(entries)))
	for _, entry := range entries {
		buffer = binary.BigEndian.AppendUint64(buffer, uint64(entry.producerID))
		buffer = binary.BigEndian.AppendUint16(buffer, uint16(entry.epoch))
		buffer = append(buffer, byte(entry.count), 0)
		buffer = binary.BigEndian.AppendUint32(buffer, uint32(entry.coordinatorEpoch))
		lastUpdateMillis := entry.lastUpdateMillis
		if entry.touched {
			lastUpdateMillis = nowMillis
		}
		buffer = binary.BigEndian.AppendUint64(buffer, uint64(lastUpdateMillis))
		buffer = binary.BigEndian.AppendUint64(buffer, uint64(entry.currentTxnFirstOffset))
		for i := entry.count - 1; i >= 0; i-- { // oldest first
			m := entry.batches[(entry.newest-i+MaxCachedBatches)%MaxCachedBatches]
			buffer = binary.BigEndian.AppendUint32(buffer, uint32(m.firstSequence))
			buffer = binary.BigEndian.AppendUint32(buffer, uint32(m.lastSequence))
			buffer = binary.BigEndian.AppendUint64(buffer, uint64(m.firstOffset))
			buffer = binary.BigEndian.AppendUint64(buffer, uint64(m.lastOffset))
			buffer = binary.BigEndian.AppendUint64(buffer, uint64(m.maxTimestamp))
		}
	}
	binary.BigEndian.PutUint32(buffer[8:], crc32.Checksum(buffer[12:], castagnoli))
	return buffer
}

// errCorruptSnapshot is wrapped by every decoding failure.
var errCorruptSnapshot = errors.New("corrupt producer snapshot")

// decodeSnapshot parses a snapshot file's bytes into a state and checks
// every field's range; it never panics on bad input.
func decodeSnapshot(data []byte, options Options) (*PartitionState, int64, error) {
	if len(data) < snapshotHeaderSize {
		return nil, 0, fmt.Errorf("%w: %d bytes, header needs %d", errCorruptSnapshot, len(data), snapshotHeaderSize)
	}
	if string(data[:4]) != snapshotMagic {
		return nil, 0, fmt.Errorf("%w: bad magic %q", errCorruptSnapshot, data[:4])
	}
	if version := binary.BigEndian.Uint16(data[4:]); version != snapshotVersion {
		return nil, 0, fmt.Errorf("%w: unsupported version %d", errCorruptSnapshot, version)
	}
	if reserved := binary.BigEndian.Uint16(data[6:]); reserved != 0 {
		return nil, 0, fmt.Errorf("%w: reserved header bytes %04x", errCorruptSnapshot, reserved)
	}
	if stored, computed := binary.BigEndian.Uint32(data[8:]), crc32.Checksum(data[12:], castagnoli); stored != computed {
		return nil, 0, fmt.Errorf("%w: crc32c %08x, computed %08x", errCorruptSnapshot, stored, computed)
	}
	offset := int64(binary.BigEndian.Uint64(data[12:]))
	count := binary.BigEndian.Uint32(data[20:])
	if offset < 0 || uint64(count)*snapshotEntryFixedSize > uint64(len(data)-snapshotHeaderSize) {
		return nil, 0, fmt.Errorf("%w: offset %d, %d producers in %d bytes", errCorruptSnapshot, offset, count, len(data))
	}
	state := NewPartitionState(options)
	rest := data[snapshotHeaderSize:]
	previousID := int64(-1)
	for i := uint32(0); i < count; i++ {
		entry, used, err := decodeEntry(rest)
		if err != nil {
			return nil, 0, fmt.Errorf("producer %d of %d: %w", i, count, err)
		}
		if entry.producerID <= previousID {
			return nil, 0, fmt.Errorf("%w: producer %d after %d, ids must increase", errCorruptSnapshot, entry.producerID, previousID)
		}
		previousID = entry.producerID
		state.producers[entry.producerID] = entry
		rest = rest[used:]
	}
	if len(rest) != 0 {
		return nil, 0, fmt.Errorf("%w: %d trailing bytes", errCorruptSnapshot, len(rest))
	}
	return state, offset, nil
}

// decodeEntry parses one producer entry and returns how many bytes it used.
func decodeEntry(data []byte) (*producerEntry, int, error) {
	if len(data) < snapshotEntryFixedSize {
		return nil, 0, fmt.Errorf("%w: entry truncated", errCorruptSnapshot)
	}
	entry := &producerEntry{
		producerID:            int64(binary.BigEndian.Uint64(data[0:])),
		epoch:                 int16(binary.BigEndian.Uint16(data[8:])),
		coordinatorEpoch:      int32(binary.BigEndian.Uint32(data[12:])),
		lastUpdateMillis:      int64(binary.BigEndian.Uint64(data[16:])),
		currentTxnFirstOffset: int64(binary.BigEndian.Uint64(data[24:])),
	}
	batchCount := int(data[10])
	if entry.producerID < 0 || entry.epoch < 0 || batchCount > MaxCachedBatches || data[11] != 0 ||
		entry.coordinatorEpoch < -1 || entry.currentTxnFirstOffset < noOffset {
		return nil, 0, fmt.Errorf("%w: producer %d epoch %d, %d batches, coordinator epoch %d, txn offset %d",
			errCorruptSnapshot, entry.producerID, entry.epoch, batchCount, entry.coordinatorEpoch, entry.currentTxnFirstOffset)
	}
	used := snapshotEntryFixedSize + batchCount*snapshotBatchSize
	if len(data) < used {
		return nil, 0, fmt.Errorf("%w: producer %d batches truncated", errCorruptSnapshot, entry.producerID)
	}
	for i := 0; i < batchCount; i++ {
		b := data[snapshotEntryFixedSize+i*snapshotBatchSize:]
		m := batchMetadata{
			firstSequence: int32(binary.BigEndian.Uint32(b[0:])),
			lastSequence:  int32(binary.BigEndian.Uint32(b[4:])),
			firstOffset:   int64(binary.BigEndian.Uint64(b[8:])),
			lastOffset:    int64(binary.BigEndian.Uint64(b[16:])),
			maxTimestamp:  int64(binary.BigEndian.Uint64(b[24:])),
		}
		// Sequences are both -1 for a batch written without them (the
		// group coordinator's transactional offset commits), else both
		// at least 0.
		noSequence := m.firstSequence == -1 && m.lastSequence == -1
		if !noSequence && (m.firstSequence < 0 || m.lastSequence < 0) || m.firstOffset < 0 || m.lastOffset < m.firstOffset {
			return nil, 0, fmt.Errorf("%w: producer %d batch %d: sequences %d..%d offsets %d..%d", errCorruptSnapshot,
				entry.producerID, i, m.firstSequence, m.lastSequence, m.firstOffset, m.lastOffset)
		}
		entry.push(m)
	}
	return entry, used, nil
}

// Snapshot is the state encoded as of a log offset, ready to be written
// by WriteTo. Encoding needs the state's owner (it reads the state);
// writing does not, so the owner can encode under its lock and do the
// file I/O after releasing it.
type Snapshot struct {
	offset int64
	data   []byte
	fs     storage.FS
}

// Offset is the log offset the snapshot was taken at.
func (s Snapshot) Offset() int64 { return s.offset }

// Snapshot encodes the state as of log offset (every batch below offset is
// reflected, none at or above it); WriteTo writes it.
func (s *PartitionState) Snapshot(offset int64) (Snapshot, error) {
	if offset < 0 {
		return Snapshot{}, fmt.Errorf("producer snapshot: negative offset %d", offset)
	}
	return Snapshot{offset: offset, data: s.encodeSnapshot(offset, s.options.Now().UnixMilli()), fs: s.options.FS}, nil
}

// WriteTo writes the snapshot to dir/SnapshotFileName(offset) atomically
// (storage.WriteFileAtomic through the state's Options.FS: a temporary
// file written and fsynced, renamed into place, the directory fsynced).
// It then deletes all but the SnapshotsKept newest snapshots and any
// leftover temporary files. On an error before the rename the older
// snapshots are untouched.
func (s Snapshot) WriteTo(dir string) error {
	final := filepath.Join(dir, SnapshotFileName(s.offset))
	if err := storage.WriteFileAtomic(s.fs, final, s.data); err != nil {
		return fmt.Errorf("write producer snapshot: %w", err)
	}
	if err := pruneSnapshots(s.fs, dir, SnapshotsKept); err != nil {
		return fmt.Errorf("write producer snapshot %s: %w", final, err)
	}
	return nil
}

// WriteSnapshot encodes the state as of log offset and writes it to dir
// (Snapshot, then WriteTo).
func (s *PartitionState) WriteSnapshot(dir string, offset int64) error {
	snapshot, err := s.Snapshot(offset)
	if err != nil {
		return fmt.Errorf("write producer snapshot in %s: %w", dir, err)
	}
	return snapshot.WriteTo(dir)
}

// listSnapshots returns the offsets of dir's snapshot files, newest first.
// A missing directory has none.
func listSnapshots(fsys storage.FS, dir string) ([]int64, error) {
	entries, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list producer snapshots: %w", err)
	}
	var offsets []int64
	for _, entry := range entries {
		if offset, ok := parseSnapshotFileName(entry.Name()); ok && entry.Type().IsRegular() {
			offsets = append(offsets, offset)
		}
	}
	slices.Sort(offsets)
	slices.Reverse(offsets)
	return offsets, nil
}

// pruneSnapshots deletes all but the keep newest snapshots, and temporary
// files left by a crash during WriteSnapshot.
func pruneSnapshots(fsys storage.FS, dir string, keep int) error {
	offsets, err := listSnapshots(fsys, dir)
	if err != nil {
		return err
	}
	removed := false
	for _, offset := range offsets[min(keep, len(offsets)):] {
		if err := fsys.Remove(filepath.Join(dir, SnapshotFileName(offset))); err != nil {
			return fmt.Errorf("prune producer snapshots: %w", err)
		}
		removed = true
	}
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("prune producer snapshots: %w", err)
	}
	for _, entry := range entries {
		if !strings.HasSuffix(entry.Name(), snapshotTempSuffix) {
			continue
		}
		if err := fsys.Remove(filepath.Join(dir, entry.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("prune producer snapshots: %w", err)
		}
		removed = true
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("prune producer snapshots: sync directory %s: %w", dir, err)
		}
	}
	return nil
}

// RemoveSnapshotsAbove deletes the snapshots taken at offsets above offset,
// through options.FS. The owner calls it when the log is truncated to
// offset (its end is now offset), before reloading: those snapshots
// describe batches that are gone. A snapshot at exactly offset stays
// valid: it reflects batches below offset.
func RemoveSnapshotsAbove(dir string, offset int64, options Options) error {
	fsys := options.withDefaults().FS
	offsets, err := listSnapshots(fsys, dir)
	if err != nil {
		return err
	}
	removed := false
	for _, snapshotOffset := range offsets {
		if snapshotOffset <= offset {
			break
		}
		if err := fsys.Remove(filepath.Join(dir, SnapshotFileName(snapshotOffset))); err != nil {
			return fmt.Errorf("remove producer snapshots above %d: %w", offset, err)
		}
		removed = true
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("remove producer snapshots above %d: sync directory %s: %w", offset, dir, err)
		}
	}
	return nil
}

// SkippedSnapshot is a snapshot file LoadLatestSnapshot could not use.
type SkippedSnapshot struct {
	Path   string
	Reason error
}

// SnapshotLoad reports what LoadLatestSnapshot used.
type SnapshotLoad struct {
	// Found is set when a snapshot was loaded.
	Found bool
	// Offset is the loaded snapshot's offset: the owner replays the log's
	// batch headers from here (or from the log start, if Found is unset
	// or the log start is higher) to the log end.
	Offset int64
	// Skipped lists newer snapshots that were unreadable or corrupt.
	Skipped []SkippedSnapshot
}

// LoadLatestSnapshot loads the newest snapshot in dir whose offset is at
// most maxOffset (the log end). A snapshot that cannot be read or fails
// validation (magic, version, CRC, field ranges, offset matching its name) is
// skipped with its reason and the next older one tried; if none is usable
// the state is empty and Found is unset. Files are left in place. The error
// is non-nil only when the directory itself cannot be listed.
func LoadLatestSnapshot(dir string, maxOffset int64, options Options) (*PartitionState, SnapshotLoad, error) {
	var load SnapshotLoad
	options = options.withDefaults()
	offsets, err := listSnapshots(options.FS, dir)
	if err != nil {
		return nil, load, fmt.Errorf("load producer snapshot from %s: %w", dir, err)
	}
	for _, offset := range offsets {
		if offset > maxOffset {
			continue
		}
		path := filepath.Join(dir, SnapshotFileName(offset))
		state, err := readSnapshot(path, offset, options)
		if err != nil {
			load.Skipped = append(load.Skipped, SkippedSnapshot{Path: path, Reason: err})
			continue
		}
		load.Found, load.Offset = true, offset
		return state, load, nil
	}
	return NewPartitionState(options), load, nil
}

// readSnapshot reads and decodes one snapshot file.
func readSnapshot(path string, nameOffset int64, options Options) (*PartitionState, error) {
	data, err := storage.ReadFile(options.FS, path)
	if err != nil {
		return nil, err
	}
	state, offset, err := decodeSnapshot(data, options)
	if err != nil {
		return nil, err
	}
	if offset != nameOffset {
		return nil, fmt.Errorf("%w: offset %d inside, %d in the name", errCorruptSnapshot, offset, nameOffset)
	}
	return state, nil
}
