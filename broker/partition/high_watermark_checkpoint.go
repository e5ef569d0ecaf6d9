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

// The high-watermark checkpoint (Kafka's replication-offset-checkpoint,
// one file per partition here): a replicated partition's high watermark,
// written every replica.high.watermark.checkpoint.interval.ms and at
// close, read when the partition opens. Without it a restarted broker
// starts every partition's high watermark at the log start, so a leader
// serves nothing it had committed before until its followers fetch again,
// and a follower that cannot learn the leader's epochs truncates to it.
//
// Why a stale value is safe: the file only ever holds a high watermark
// the partition had, which the ISR had replicated, so every record below
// it was committed; a value older (lower) than the true one only delays
// reads. On open it is capped by the recovered log end (a crash may have
// lost an unsynced tail).

// HighWatermarkCheckpointFile is the checkpoint's name in a partition's
// directory: "0\n" (the format version) then the offset and "\n".
const HighWatermarkCheckpointFile = "high-watermark-checkpoint"

// loadHighWatermark sets p.hw from the checkpoint in dir: the log start
// when there is none, else the checkpointed offset within the log's
// bounds.
func (p *Partition) loadHighWatermark(fsys storage.FS, dir string) error {
	p.fs, p.hwFile = fsys, filepath.Join(dir, HighWatermarkCheckpointFile)
	start, end := p.log.LogStartOffset(), p.log.LogEndOffset()
	hw := start
	data, err := storage.ReadFile(fsys, p.hwFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", p.hwFile, err)
	default:
		saved, err := decodeHighWatermark(data)
		if err != nil {
			return fmt.Errorf("%s: %w", p.hwFile, err)
		}
		hw = min(max(saved, start), end)
	}
	p.hw.Store(hw)
	p.hwWritten.Store(hw)
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

// CheckpointHighWatermark writes the high watermark when it changed since
// the last write. Safe from any goroutine (hwFileMu).
func (p *Partition) CheckpointHighWatermark() error {
	if p.hwFile == "" {
		return nil // replication off
	}
	p.hwFileMu.Lock()
	defer p.hwFileMu.Unlock()
	hw := p.hw.Load()
	if hw == p.hwWritten.Load() {
		return nil
	}
	if err := storage.WriteFileAtomic(p.fs, p.hwFile, []byte("0\n"+strconv.FormatInt(hw, 10)+"\n")); err != nil {
		return fmt.Errorf("%w: high-watermark checkpoint of %s: %w", ErrStorage, p.Name(), err)
	}
	p.hwWritten.Store(hw)
	return nil
}
