package partition

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/exactly-eos/exactly/broker/storage"
)

// The high-watermark checkpoint (Kafka's replication-offset-checkpoint):
// every replicated partition's high watermark, in one file per broker,
// written every replica.high.watermark.checkpoint.interval.ms and at
// close ([WriteHighWatermarkCheckpoint]), read when the broker starts
// ([ReadHighWatermarkCheckpoint]) and handed to each partition as it opens
// ([Replication.CheckpointedHighWatermark]). Without it a restarted broker
// starts every partition's high watermark at the log start, so a leader
// serves nothing it had committed before until its followers fetch again,
// and a follower that cannot learn the leader's epochs truncates to it.
// One file, not one per partition: a broker of 3,000 partitions paid two
// fsyncs per partition every interval.
//
// Why a stale value is safe: the file only ever holds a high watermark
// the partition had, which the ISR had replicated, so every record below
// it was committed; a value older (lower) than the true one only delays
// reads. On open it is capped by the recovered log end (a crash may have
// lost an unsynced tail).

// HighWatermarkCheckpointFile is the per-partition checkpoint of earlier
// versions in a partition's directory ("0\n", the format version, then
// the offset and "\n"): read when the broker's checkpoint has no entry
// for the partition, never written.
const HighWatermarkCheckpointFile = "high-watermark-checkpoint"

// CheckpointEntry is one partition's line in the broker's checkpoint.
type CheckpointEntry struct {
	Topic         string
	Index         int32
	HighWatermark int64
}

// WriteHighWatermarkCheckpoint replaces the checkpoint at path with
// entries, atomically (storage.WriteFileAtomic: a crash leaves the old
// file or the new one). The format is Kafka's: the version 0, the count,
// then "topic partition offset" per line (topic names hold no spaces).
func WriteHighWatermarkCheckpoint(fsys storage.FS, path string, entries []CheckpointEntry) error {
	var b strings.Builder
	b.WriteString("0\n")
	b.WriteString(strconv.Itoa(len(entries)))
	b.WriteByte('\n')
	for _, e := range entries {
		b.WriteString(e.Topic)
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(int(e.Index)))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(e.HighWatermark, 10))
		b.WriteByte('\n')
	}
	if err := storage.WriteFileAtomic(fsys, path, []byte(b.String())); err != nil {
		return fmt.Errorf("%w: high-watermark checkpoint %s: %w", ErrStorage, path, err)
	}
	return nil
}

// ReadHighWatermarkCheckpoint reads the checkpoint at path; a missing
// file is no entries.
func ReadHighWatermarkCheckpoint(fsys storage.FS, path string) ([]CheckpointEntry, error) {
	data, err := storage.ReadFile(fsys, path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("%s: not a version 0 high-watermark checkpoint", path)
	}
	count, err := strconv.Atoi(lines[1])
	if err != nil || count != len(lines)-2 {
		return nil, fmt.Errorf("%s: count %q does not match its %d entries", path, lines[1], len(lines)-2)
	}
	entries := make([]CheckpointEntry, 0, count)
	for _, line := range lines[2:] {
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s: bad entry %q", path, line)
		}
		index, err1 := strconv.ParseInt(fields[1], 10, 32)
		offset, err2 := strconv.ParseInt(fields[2], 10, 64)
		if err1 != nil || err2 != nil || index < 0 || offset < 0 {
			return nil, fmt.Errorf("%s: bad entry %q", path, line)
		}
		entries = append(entries, CheckpointEntry{Topic: fields[0], Index: int32(index), HighWatermark: offset})
	}
	return entries, nil
}

// loadHighWatermark sets p.hw: checkpointed when the broker's checkpoint
// has it (above 0), else the per-partition file of earlier versions in
// dir if there is one, else the log start; always within the log's
// bounds.
func (p *Partition) loadHighWatermark(fsys storage.FS, dir string, checkpointed int64) error {
	start, end := p.log.LogStartOffset(), p.log.LogEndOffset()
	hw := start
	if checkpointed > 0 {
		hw = min(max(checkpointed, start), end)
		p.hw.Store(hw)
		return nil
	}
	file := filepath.Join(dir, HighWatermarkCheckpointFile)
	data, err := storage.ReadFile(fsys, file)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", file, err)
	default:
		saved, err := decodeHighWatermark(data)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		hw = min(max(saved, start), end)
	}
	p.hw.Store(hw)
	return nil
}

func decodeHighWatermark(data []byte) (int64, error) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "0" {
		return 0, fmt.Errorf("not a version 0 high-watermark checkpoint: %q", data)
	}
	offset, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || offset < 0 {
		return 0, fmt.Errorf("bad offset %q", lines[1])
	}
	return offset, nil
}
