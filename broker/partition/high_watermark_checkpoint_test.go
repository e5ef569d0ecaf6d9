package partition

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/wire"
)

// TestHighWatermarkCheckpointReopen: a sole replica that leads commits
// what it appends; the broker's checkpoint keeps the high watermark, and
// the reopened replica starts from it before any role arrives, capped by
// its log; without an entry it reads the per-partition file of earlier
// versions.
func TestHighWatermarkCheckpointReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	checkpoint := filepath.Join(t.TempDir(), "replication-offset-checkpoint")
	open := func(checkpointed int64) *Partition {
		p, err := Open(Config{Topic: "hw", Index: 0, Dir: dir, Logger: slog.New(slog.DiscardHandler),
			Replication: &Replication{NodeID: 1, CheckpointedHighWatermark: checkpointed}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := open(0)
	if err := p.BecomeLeader(&Role{Leader: 1, LeaderEpoch: 0, PartitionEpoch: 0, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := p.AppendProduced(testBatch(t, wire.PlainBatchOptions(), 2), nil); err != nil {
			t.Fatal(err)
		}
	}
	if hw := p.HighWatermark(); hw != 6 {
		t.Fatalf("high watermark of a sole leader after 6 records: %d", hw)
	}
	entries := []CheckpointEntry{{Topic: "hw", Index: 0, HighWatermark: p.HighWatermark()}, {Topic: "other.topic_x", Index: 2999, HighWatermark: 1 << 40}}
	if err := WriteHighWatermarkCheckpoint(storage.OSFS{}, checkpoint, entries); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	read, err := ReadHighWatermarkCheckpoint(storage.OSFS{}, checkpoint)
	if err != nil || !slices.Equal(read, entries) {
		t.Fatalf("checkpoint read back: %v, %v; want %v", read, err, entries)
	}
	p = open(read[0].HighWatermark)
	if hw, role := p.HighWatermark(), p.Role(); hw != 6 || role.Leader != -1 {
		t.Fatalf("reopened: high watermark %d, role %+v; want 6 and no leader", hw, role)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	// A checkpoint beyond the recovered log (a lost unsynced tail) is capped.
	p = open(999)
	if hw := p.HighWatermark(); hw != 6 {
		t.Fatalf("a checkpoint of 999 over a log of 6 records: high watermark %d", hw)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	// No entry: the per-partition file of earlier versions, capped too.
	if err := os.WriteFile(filepath.Join(dir, HighWatermarkCheckpointFile), []byte("0\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p = open(0)
	defer p.Close()
	if hw := p.HighWatermark(); hw != 4 {
		t.Fatalf("an earlier version's checkpoint of 4: high watermark %d", hw)
	}
}

// A malformed checkpoint is an error naming the file, never a guess.
func TestHighWatermarkCheckpointMalformed(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"1\n0\n", "0\n2\nt 0 5\n", "0\n1\nt x 5\n", "0\n1\nt 0 -1\n", "0\n1\nt 0\n"} {
		path := filepath.Join(t.TempDir(), "checkpoint")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if entries, err := ReadHighWatermarkCheckpoint(storage.OSFS{}, path); err == nil {
			t.Errorf("%q read as %v", text, entries)
		}
	}
	if entries, err := ReadHighWatermarkCheckpoint(storage.OSFS{}, filepath.Join(t.TempDir(), "missing")); err != nil || entries != nil {
		t.Errorf("a missing checkpoint: %v, %v; want none", entries, err)
	}
}
