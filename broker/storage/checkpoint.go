package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
)

const (
	checkpointFileName  = "checkpoint"
	cleanShutdownMarker = ".clean-shutdown"
	checkpointMagic     = "EXCK"
	checkpointVersion   = 1
	checkpointSize      = 4 + 2 + 8*4 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkpoint is the content of the checkpoint file: the log start offset and
// the recovery point, a batch boundary up to which the log and the indexes
// of its segment were synced.
type checkpoint struct {
	logStartOffset   int64
	recoverySegment  int64 // base offset of the segment holding the recovery point
	recoveryPosition int64 // byte position of the recovery point in that segment
	recoveryOffset   int64 // offset of the batch starting at recoveryPosition (or the segment's end)
}

// encode lays the checkpoint out as the package doc's "checkpoint" section describes.
func (c checkpoint) encode() []byte {
	data := make([]byte, 0, checkpointSize)
	data = append(data, checkpointMagic...)
	data = binary.BigEndian.AppendUint16(data, checkpointVersion)
	for _, value := range []int64{c.logStartOffset, c.recoverySegment, c.recoveryPosition, c.recoveryOffset} {
		data = binary.BigEndian.AppendUint64(data, uint64(value))
	}
	return binary.BigEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
}

// decodeCheckpoint parses and verifies a checkpoint file's bytes.
func decodeCheckpoint(data []byte) (checkpoint, error) {
	if len(data) != checkpointSize {
		return checkpoint{}, fmt.Errorf("checkpoint: %d bytes, want %d", len(data), checkpointSize)
	}
	if string(data[:4]) != checkpointMagic || binary.BigEndian.Uint16(data[4:]) != checkpointVersion {
		return checkpoint{}, errors.New("checkpoint: bad magic or version")
	}
	if got, want := crc32.Checksum(data[:checkpointSize-4], castagnoli), binary.BigEndian.Uint32(data[checkpointSize-4:]); got != want {
		return checkpoint{}, fmt.Errorf("checkpoint: CRC %#08x, want %#08x", got, want)
	}
	field := func(i int) int64 { return int64(binary.BigEndian.Uint64(data[6+8*i:])) }
	c := checkpoint{logStartOffset: field(0), recoverySegment: field(1), recoveryPosition: field(2), recoveryOffset: field(3)}
	if c.logStartOffset < 0 || c.recoverySegment < 0 || c.recoveryPosition < 0 || c.recoveryOffset < c.recoverySegment {
		return checkpoint{}, fmt.Errorf("checkpoint: inconsistent fields %+v", c)
	}
	return c, nil
}

// writeCheckpoint persists the log start offset and a new recovery point
// (takes checkpointMu; callers hold appendMu or, for the roll flusher,
// removeMu).
func (l *Log) writeCheckpoint(recoverySegment, recoveryPosition, recoveryOffset int64) error {
	l.checkpointMu.Lock()
	defer l.checkpointMu.Unlock()
	return l.writeCheckpointLocked(recoverySegment, recoveryPosition, recoveryOffset)
}

// writeCheckpointLocked is writeCheckpoint for a holder of checkpointMu.
// The log start is read here, under checkpointMu, so the last checkpoint
// written carries the newest one.
func (l *Log) writeCheckpointLocked(recoverySegment, recoveryPosition, recoveryOffset int64) error {
	c := checkpoint{
		logStartOffset:   l.LogStartOffset(),
		recoverySegment:  recoverySegment,
		recoveryPosition: recoveryPosition,
		recoveryOffset:   recoveryOffset,
	}
	if err := WriteFileAtomic(l.fs, filepath.Join(l.dir, checkpointFileName), c.encode()); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	l.lastCheckpoint = c
	return nil
}

// rewriteCheckpoint persists a changed log start offset with the current recovery point.
func (l *Log) rewriteCheckpoint() error {
	l.checkpointMu.Lock()
	defer l.checkpointMu.Unlock()
	c := l.lastCheckpoint
	return l.writeCheckpointLocked(c.recoverySegment, c.recoveryPosition, c.recoveryOffset)
}
