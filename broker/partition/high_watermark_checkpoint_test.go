package partition

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactly-eos/exactly/wire"
)

// TestHighWatermarkCheckpointReopen: a sole replica that leads commits
// what it appends; close checkpoints the high watermark, and the reopened
// replica starts from it before any role arrives, capped by its log.
func TestHighWatermarkCheckpointReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func() *Partition {
		p, err := Open(Config{Topic: "hw", Index: 0, Dir: dir, Logger: slog.New(slog.DiscardHandler),
			Replication: &Replication{NodeID: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := open()
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
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p = open()
	if hw, role := p.HighWatermark(), p.Role(); hw != 6 || role.Leader != -1 {
		t.Fatalf("reopened: high watermark %d, role %+v; want 6 and no leader", hw, role)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	// A checkpoint beyond the recovered log (a lost unsynced tail) is capped.
	if err := os.WriteFile(filepath.Join(dir, HighWatermarkCheckpointFile), []byte("0\n999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p = open()
	defer p.Close()
	if hw := p.HighWatermark(); hw != 6 {
		t.Fatalf("a checkpoint of 999 over a log of 6 records: high watermark %d", hw)
	}
}
