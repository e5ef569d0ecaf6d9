package partition

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/exactly-eos/exactly/broker/storage"
)

// Leader epochs of a replicated partition (KIP-101, KIP-279): every batch
// carries the leader epoch of the leader that appended it (its
// PartitionLeaderEpoch field), and each partition keeps a leader-epoch
// checkpoint: for every epoch, the offset of its first batch. A new leader
// records its epoch at the log end when it becomes leader, before it
// writes anything, so the end of the previous epoch is known even if the
// new leader never appends; a follower records an epoch when it appends
// the first batch carrying it. OffsetForLeaderEpoch answers from it, and a
// follower truncates what its leader's epochs say diverged.
//
// The file, <partition-dir>/leader-epoch-checkpoint, is Kafka's format:
//
//	0            (version)
//	2            (number of entries)
//	0 0          (epoch, start offset), ascending in both
//	3 1200
//
// It is replaced whole through storage.WriteFileAtomic whenever an entry
// is added or truncated away; the name is not a segment name, so storage
// never removes it. Entries are few (one per leader change), so the file
// stays small and is rewritten rarely (under Partition.appendMu: once per
// leader change, and at a truncation).

// LeaderEpochCheckpointFile is the checkpoint's name in the partition directory.
const LeaderEpochCheckpointFile = "leader-epoch-checkpoint"

// epochEntry is one leader epoch and the offset of its first batch.
type epochEntry struct {
	epoch       int32
	startOffset int64
}

// leaderEpochCache is the partition's epoch → start offset map, backed by
// the checkpoint file. Guarded by Partition.appendMu. Invariant: entries
// are strictly ascending in epoch and non-decreasing in start offset, and
// every start offset is at most the log end.
type leaderEpochCache struct {
	fs      storage.FS
	path    string
	entries []epochEntry
}

// openLeaderEpochCache loads the checkpoint of the partition in dir (an
// empty cache when there is none yet).
func openLeaderEpochCache(fsys storage.FS, dir string) (*leaderEpochCache, error) {
	cache := &leaderEpochCache{fs: fsys, path: filepath.Join(dir, LeaderEpochCheckpointFile)}
	data, err := storage.ReadFile(fsys, cache.path)
	if errors.Is(err, os.ErrNotExist) {
		return cache, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", cache.path, err)
	}
	entries, err := decodeEpochCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cache.path, err)
	}
	cache.entries = entries
	return cache, nil
}

func decodeEpochCheckpoint(data []byte) ([]epochEntry, error) {
	scanner := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for scanner.Scan() {
		if line := strings.TrimSpace(scanner.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("not a version 0 leader-epoch checkpoint")
	}
	count, err := strconv.Atoi(lines[1])
	if err != nil || count != len(lines)-2 {
		return nil, fmt.Errorf("entry count %q does not match %d entries", lines[1], len(lines)-2)
	}
	entries := make([]epochEntry, 0, count)
	for _, line := range lines[2:] {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("bad entry %q", line)
		}
		epoch, err1 := strconv.ParseInt(fields[0], 10, 32)
		start, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad entry %q", line)
		}
		entries = append(entries, epochEntry{epoch: int32(epoch), startOffset: start})
	}
	return entries, nil
}

func (c *leaderEpochCache) encode() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "0\n%d\n", len(c.entries))
	for _, e := range c.entries {
		fmt.Fprintf(&b, "%d %d\n", e.epoch, e.startOffset)
	}
	return []byte(b.String())
}

func (c *leaderEpochCache) write() error {
	if err := storage.WriteFileAtomic(c.fs, c.path, c.encode()); err != nil {
		return fmt.Errorf("%w: leader-epoch checkpoint: %w", ErrStorage, err)
	}
	return nil
}

// latest is the newest epoch, -1 when none.
func (c *leaderEpochCache) latest() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].epoch
}

// startOf is the start offset of epoch, -1 when unknown.
func (c *leaderEpochCache) startOf(epoch int32) int64 {
	for _, e := range c.entries {
		if e.epoch == epoch {
			return e.startOffset
		}
	}
	return -1
}

// assign records that epoch starts at startOffset, if epoch is newer than
// every known one; entries starting after startOffset (which only a
// truncation not yet applied to the cache could leave) are dropped first.
// It writes the checkpoint when anything changed.
func (c *leaderEpochCache) assign(epoch int32, startOffset int64) error {
	if epoch < 0 || epoch <= c.latest() {
		return nil
	}
	for len(c.entries) > 0 && c.entries[len(c.entries)-1].startOffset > startOffset {
		c.entries = c.entries[:len(c.entries)-1]
	}
	c.entries = append(c.entries, epochEntry{epoch: epoch, startOffset: startOffset})
	return c.write()
}

// truncateFromEnd drops the epochs starting at or after endOffset, after
// the log was truncated to endOffset.
func (c *leaderEpochCache) truncateFromEnd(endOffset int64) error {
	keep := len(c.entries)
	for keep > 0 && c.entries[keep-1].startOffset >= endOffset {
		keep--
	}
	if keep == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:keep]
	return c.write()
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka's LeaderEpochFileCache
// does: for the latest epoch, the log end; for an older known epoch, the
// start of the next higher epoch; for an unknown epoch between known ones,
// the largest epoch below it and the start of the next one above it; for an
// epoch below every known one, that epoch and the first known start; and
// (-1, -1) for an epoch above every known one, or an empty cache.
func (c *leaderEpochCache) endOffsetFor(requested int32, logEnd int64) (epoch int32, endOffset int64) {
	if requested < 0 || len(c.entries) == 0 {
		return -1, -1
	}
	if requested == c.latest() {
		return requested, logEnd
	}
	higher := -1
	for i, e := range c.entries {
		if e.epoch > requested {
			higher = i
			break
		}
	}
	if higher < 0 {
		return -1, -1
	}
	if higher == 0 {
		return requested, c.entries[0].startOffset
	}
	return c.entries[higher-1].epoch, c.entries[higher].startOffset
}

// clear drops every epoch, after the log was emptied and restarted at an
// offset the old epochs say nothing about.
func (c *leaderEpochCache) clear() error {
	if len(c.entries) == 0 {
		return nil
	}
	c.entries = nil
	return c.write()
}
