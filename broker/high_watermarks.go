package broker

import (
	"maps"
	"path/filepath"
	"slices"
	"sync"

	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/broker/txn"
)

// highWatermarkCheckpointFile is the broker's high-watermark checkpoint in
// its data directory, under Kafka's name for it.
const highWatermarkCheckpointFile = "replication-offset-checkpoint"

// highWatermarkCheckpoint is the broker's one file of every replicated
// partition's high watermark ([partition.WriteHighWatermarkCheckpoint]),
// in place of one file per partition: at 3,000 partitions those cost two
// fsyncs each every replica.high.watermark.checkpoint.interval.ms.
//
// Goroutines: the file is read once, by the first partition that opens
// (loadOnce); it is written by the checkpoint goroutine ([Broker.every])
// and by Close after the partitions are closed. mu serializes the writers
// and guards written.
type highWatermarkCheckpoint struct {
	loadOnce sync.Once
	loaded   map[txn.TopicPartition]int64 // the file as the broker started
	loadErr  error

	mu      sync.Mutex
	written map[txn.TopicPartition]int64 // what the file holds now
}

// checkpointedHighWatermark is the high watermark the checkpoint held for
// topic's partition index when the broker started, 0 when none.
func (b *Broker) checkpointedHighWatermark(topic string, index int32) (int64, error) {
	c := &b.highWatermarks
	c.loadOnce.Do(func() {
		entries, err := partition.ReadHighWatermarkCheckpoint(b.fs, filepath.Join(b.dataDir, highWatermarkCheckpointFile))
		c.loaded, c.loadErr = make(map[txn.TopicPartition]int64, len(entries)), err
		for _, e := range entries {
			c.loaded[txn.TopicPartition{Topic: e.Topic, Partition: e.Index}] = e.HighWatermark
		}
	})
	return c.loaded[txn.TopicPartition{Topic: topic, Partition: index}], c.loadErr
}

// checkpointHighWatermarks writes the high watermarks of the broker's
// replicated partitions into its checkpoint, when one changed since the
// last write; it runs every replica.high.watermark.checkpoint.interval.ms
// and at close. Partitions closed by Close count (their high watermark is
// final); those of deleted topics do not.
func (b *Broker) checkpointHighWatermarks() {
	current := map[txn.TopicPartition]int64{}
	for _, p := range b.allPartitions() {
		current[txn.TopicPartition{Topic: p.Topic(), Partition: p.Index()}] = p.HighWatermark()
	}
	c := &b.highWatermarks
	c.mu.Lock()
	defer c.mu.Unlock()
	if maps.Equal(current, c.written) {
		return
	}
	entries := make([]partition.CheckpointEntry, 0, len(current))
	for tp, hw := range current {
		entries = append(entries, partition.CheckpointEntry{Topic: tp.Topic, Index: tp.Partition, HighWatermark: hw})
	}
	slices.SortFunc(entries, func(x, y partition.CheckpointEntry) int {
		if x.Topic != y.Topic {
			return compareStrings(x.Topic, y.Topic)
		}
		return int(x.Index - y.Index)
	})
	if err := partition.WriteHighWatermarkCheckpoint(b.fs, filepath.Join(b.dataDir, highWatermarkCheckpointFile), entries); err != nil {
		b.logger.Error("high watermark checkpoint failed", "error", err)
		return
	}
	c.written = current
}
