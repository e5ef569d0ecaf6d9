package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Files of the log cleaner (see "Compaction" in the package doc):
//
//	<dir>/cleaner-offset-checkpoint   first dirty offset and compacted end
//	<dir>/<base>.<suffix>.cleaned     a cleaned segment being written
//	<dir>/<base>.swap                 swap manifest: the commit point of a clean
const (
	cleanerCheckpointName    = "cleaner-offset-checkpoint"
	cleanerCheckpointMagic   = "EXCC"
	cleanerCheckpointVersion = 1
	cleanedSuffix            = ".cleaned"
	swapSuffix               = ".swap"
	swapMagic                = "EXSW"
	swapVersion              = 1
)

// segmentSuffixes are a segment's files, the .log last: a swap renames the
// indexes first, so a .log.cleaned still present means the swap is unfinished.
var segmentSuffixes = []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix}

// cleanerCheckpoint is the content of cleaner-offset-checkpoint.
type cleanerCheckpoint struct {
	// firstDirty is where the next clean's offset map starts: everything
	// below was compacted against the keys up to it.
	firstDirty int64
	// compactedEnd bounds every offset a clean may have rewritten (written
	// before a clean commits anything): below it batches may have gaps, and
	// recovery accepts increasing instead of contiguous offsets there.
	compactedEnd int64
}

// encodeTwoOffsets lays out magic, version, two offsets and a CRC-32C.
func encodeTwoOffsets(magic string, version uint16, a, b int64) []byte {
	data := make([]byte, 0, 4+2+16+4)
	data = append(data, magic...)
	data = binary.BigEndian.AppendUint16(data, version)
	data = binary.BigEndian.AppendUint64(data, uint64(a))
	data = binary.BigEndian.AppendUint64(data, uint64(b))
	return binary.BigEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
}

// decodeTwoOffsets is encodeTwoOffsets' inverse; it checks size, magic,
// version and CRC.
func decodeTwoOffsets(data []byte, magic string, version uint16) (int64, int64, error) {
	if len(data) != 4+2+16+4 {
		return 0, 0, fmt.Errorf("%d bytes, want %d", len(data), 4+2+16+4)
	}
	if string(data[:4]) != magic || binary.BigEndian.Uint16(data[4:]) != version {
		return 0, 0, errors.New("bad magic or version")
	}
	if crc32.Checksum(data[:len(data)-4], castagnoli) != binary.BigEndian.Uint32(data[len(data)-4:]) {
		return 0, 0, errors.New("bad CRC")
	}
	return int64(binary.BigEndian.Uint64(data[6:])), int64(binary.BigEndian.Uint64(data[14:])), nil
}

// readCleanerCheckpoint reads cleaner-offset-checkpoint; zero if missing or damaged.
func (l *Log) readCleanerCheckpoint() cleanerCheckpoint {
	data, err := readWholeFile(l.fs, filepath.Join(l.dir, cleanerCheckpointName))
	if err != nil {
		return cleanerCheckpoint{}
	}
	firstDirty, compactedEnd, err := decodeTwoOffsets(data, cleanerCheckpointMagic, cleanerCheckpointVersion)
	if err != nil || firstDirty < 0 || compactedEnd < 0 {
		return cleanerCheckpoint{}
	}
	return cleanerCheckpoint{firstDirty: firstDirty, compactedEnd: compactedEnd}
}

// writeCleanerCheckpoint replaces cleaner-offset-checkpoint atomically.
// The compacted end never goes down: Clean and a gapped AppendReplica
// (which holds no cleanMu) both write the file, under cleanerFileMu.
func (l *Log) writeCleanerCheckpoint(c cleanerCheckpoint) error {
	l.cleanerFileMu.Lock()
	defer l.cleanerFileMu.Unlock()
	c.compactedEnd = max(c.compactedEnd, l.compactedEnd.Load())
	return l.writeCleanerCheckpointLocked(c)
}

// raiseCompactedEnd makes the compacted end at least end, keeping the
// first dirty offset (a follower appending a batch past a gap).
func (l *Log) raiseCompactedEnd(end int64) error {
	l.cleanerFileMu.Lock()
	defer l.cleanerFileMu.Unlock()
	if l.compactedEnd.Load() >= end {
		return nil
	}
	c := cleanerCheckpoint{firstDirty: l.firstDirty.Load(), compactedEnd: end}
	return l.writeCleanerCheckpointLocked(c)
}

func (l *Log) writeCleanerCheckpointLocked(c cleanerCheckpoint) error {
	data := encodeTwoOffsets(cleanerCheckpointMagic, cleanerCheckpointVersion, c.firstDirty, c.compactedEnd)
	if err := WriteFileAtomic(l.fs, filepath.Join(l.dir, cleanerCheckpointName), data); err != nil {
		return fmt.Errorf("cleaner checkpoint: %w", err)
	}
	l.compactedEnd.Store(c.compactedEnd)
	l.firstDirty.Store(c.firstDirty)
	return nil
}

// cleanedName is the name of a cleaned segment's file being written.
func cleanedName(dir string, base int64, suffix string) string {
	return segmentFileName(dir, base, suffix) + cleanedSuffix
}

// writeSwapManifest commits a swap: the cleaned files of the segment at base
// replace every segment whose base is in [base, end).
func (l *Log) writeSwapManifest(base, end int64) error {
	return WriteFileAtomic(l.fs, segmentFileName(l.dir, base, swapSuffix), encodeTwoOffsets(swapMagic, swapVersion, base, end))
}

// finishSwap completes a committed swap (idempotent, so recovery can redo
// it): it removes the files of the replaced segments after the first,
// renames the cleaned files over the first's (indexes, then the log),
// syncs the directory and removes the manifest.
func (l *Log) finishSwap(base, end int64) error {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("finish swap %d: %w", base, err)
	}
	for _, entry := range entries {
		stem, suffix, _ := strings.Cut(entry.Name(), ".")
		other, err := strconv.ParseInt(stem, 10, 64)
		if len(stem) != 20 || err != nil || other <= base || other >= end || strings.Contains(suffix, ".") {
			continue // not a live file of a replaced segment (cleaned files and manifests have two dots)
		}
		if err := l.fs.Remove(filepath.Join(l.dir, entry.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("finish swap %d: %w", base, err)
		}
	}
	for _, suffix := range segmentSuffixes {
		from := cleanedName(l.dir, base, suffix)
		if err := l.fs.Rename(from, segmentFileName(l.dir, base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("finish swap %d: %w", base, err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("finish swap %d: %w", base, err)
	}
	if err := l.fs.Remove(segmentFileName(l.dir, base, swapSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("finish swap %d: %w", base, err)
	}
	return l.fs.SyncDir(l.dir)
}

// recoverSwaps runs first at Open: it completes every committed swap (a
// manifest is present) and removes cleaned files of uncommitted ones.
func (l *Log) recoverSwaps() error {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	for _, entry := range entries {
		stem, ok := strings.CutSuffix(entry.Name(), swapSuffix)
		if !ok || len(stem) != 20 {
			continue
		}
		data, err := readWholeFile(l.fs, filepath.Join(l.dir, entry.Name()))
		if err != nil {
			return fmt.Errorf("swap manifest %s: %w", entry.Name(), err)
		}
		base, end, err := decodeTwoOffsets(data, swapMagic, swapVersion)
		if err != nil || segmentFileName(l.dir, base, "") != filepath.Join(l.dir, stem) || end <= base {
			return fmt.Errorf("swap manifest %s is damaged (%v): written atomically, so this is disk corruption", entry.Name(), err)
		}
		if err := l.finishSwap(base, end); err != nil {
			return fmt.Errorf("recovery: %w", err)
		}
	}
	if entries, err = l.fs.ReadDir(l.dir); err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	for _, entry := range entries {
		if strings.HasSuffix(entry.Name(), cleanedSuffix) {
			if err := l.fs.Remove(filepath.Join(l.dir, entry.Name())); err != nil {
				return fmt.Errorf("remove leftover %s: %w", entry.Name(), err)
			}
		}
	}
	saved := l.readCleanerCheckpoint()
	l.compactedEnd.Store(saved.compactedEnd)
	l.firstDirty.Store(saved.firstDirty)
	return nil
}

// writeSyncedFile creates (truncating) name with data and syncs it.
func writeSyncedFile(fs FS, name string, data []byte) error {
	file, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := file.WriteAt(data, 0); err != nil {
		return errors.Join(err, file.Close())
	}
	if err := file.Sync(); err != nil {
		return errors.Join(err, file.Close())
	}
	return file.Close()
}

// removeCleaned removes the cleaned files of base (best effort, after a failed clean).
func (l *Log) removeCleaned(base int64) error {
	var errs []error
	for _, suffix := range segmentSuffixes {
		if err := l.fs.Remove(cleanedName(l.dir, base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
