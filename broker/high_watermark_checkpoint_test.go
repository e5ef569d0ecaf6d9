package broker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// TestHighWatermarkSurvivesRestart: the leader's high watermark reaches
// its checkpoint while it runs (the periodic write, what a crash leaves)
// and at close, and a restarted replica starts from it, capped by its log,
// before any role arrives.
func TestHighWatermarkSurvivesRestart(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, map[string]string{"replica.high.watermark.checkpoint.interval.ms": "50"})
	c.createTopic("hw", 1)
	producer := c.client(kgo.DefaultProduceTopic("hw"), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const total = 50
	for i := range total {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	c.waitCaughtUp("hw", 0)
	leader := c.role("hw", 0).Leader
	file := filepath.Join(c.broker(leader).dataDir, highWatermarkCheckpointFile)
	testutil.Until(t, 10*time.Second, "the running leader's checkpoint holds the high watermark", func() bool {
		entries, err := partition.ReadHighWatermarkCheckpoint(storage.OSFS{}, file)
		return err == nil && slices.Contains(entries, partition.CheckpointEntry{Topic: "hw", Index: 0, HighWatermark: total})
	})

	// A follower learns the high watermark from its next fetch's answer:
	// wait until every replica has it, so each checkpoints it at close.
	testutil.Until(t, 10*time.Second, "every replica at the high watermark", func() bool {
		for id := int32(1); id <= 3; id++ {
			if c.localPartition(id, "hw", 0).HighWatermark() != total {
				return false
			}
		}
		return true
	})
	c.mu.Lock()
	brokers := c.brokers
	c.brokers = map[int32]*Broker{}
	c.mu.Unlock()
	for id, b := range brokers {
		if err := b.Close(); err != nil {
			t.Fatalf("close broker %d: %v", id, err)
		}
	}
	for id := int32(1); id <= 3; id++ {
		c.startBroker(id)
		p := c.localPartition(id, "hw", 0)
		if hw, end := p.HighWatermark(), p.Log().LogEndOffset(); hw != total || end != total {
			t.Errorf("broker %d after restart: high watermark %d, log end %d; want %d and %d", id, hw, end, total, total)
		}
	}

	// A checkpoint beyond the recovered log (a lost unsynced tail) is capped.
	b := c.broker(1)
	dir := b.dataDir
	c.mu.Lock()
	delete(c.brokers, 1)
	c.mu.Unlock()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, highWatermarkCheckpointFile), []byte("0\n1\nhw 0 999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.startBroker(1)
	if hw := c.localPartition(1, "hw", 0).HighWatermark(); hw != total {
		t.Errorf("a checkpoint of 999 over a log of %d records: high watermark %d, want %d", total, hw, total)
	}
}
