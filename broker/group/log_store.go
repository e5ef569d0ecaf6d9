package group

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/wire"
)

// OffsetsTopic is the name of the internal topic holding groups and
// committed offsets.
const OffsetsTopic = "__consumer_offsets"

// replayReadBytes bounds one read while replaying a partition.
const replayReadBytes = 1 << 20

// LogStore is the OffsetStore backed by broker/storage logs: partition n of
// __consumer_offsets lives in dir/__consumer_offsets-n, holding real Kafka
// record batches (doc.go). Partitions are opened at OpenLogStore if their
// directory exists, otherwise on their first Append.
//
// mu guards logs and closed; appends to one partition are serialized by the
// coordinator (one group's lock) and by the log itself.
type LogStore struct {
	dir     string
	options storage.Options

	mu     sync.Mutex
	logs   map[int32]*storage.Log
	closed bool
}

// OpenLogStore opens the store in dir (created if missing), recovering
// every existing partition log.
func OpenLogStore(dir string, options storage.Options) (*LogStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open %s store in %s: %w", OffsetsTopic, dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s store in %s: %w", OffsetsTopic, dir, err)
	}
	store := &LogStore{dir: dir, options: options, logs: make(map[int32]*storage.Log)}
	for _, entry := range entries {
		partition, ok := parsePartitionDir(entry.Name())
		if !entry.IsDir() || !ok {
			continue
		}
		if _, err := store.openPartition(partition); err != nil {
			_ = store.Close()
			return nil, err
		}
	}
	return store, nil
}

func parsePartitionDir(name string) (int32, bool) {
	suffix, ok := strings.CutPrefix(name, OffsetsTopic+"-")
	if !ok {
		return 0, false
	}
	partition, err := strconv.ParseInt(suffix, 10, 32)
	if err != nil || partition < 0 {
		return 0, false
	}
	return int32(partition), true
}

// openPartition returns the partition's log, opening it if needed.
func (s *LogStore) openPartition(partition int32) (*storage.Log, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrStoreClosed
	}
	if log, ok := s.logs[partition]; ok {
		return log, nil
	}
	dir := filepath.Join(s.dir, OffsetsTopic+"-"+strconv.Itoa(int(partition)))
	log, _, err := storage.Open(dir, s.options)
	if err != nil {
		return nil, fmt.Errorf("open %s-%d: %w", OffsetsTopic, partition, err)
	}
	s.logs[partition] = log
	return log, nil
}

// Logs returns the partition logs opened so far, by partition (for the
// broker's log cleaner; the store keeps owning them).
func (s *LogStore) Logs() map[int32]*storage.Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32]*storage.Log, len(s.logs))
	for partition, log := range s.logs {
		out[partition] = log
	}
	return out
}

// Append encodes batch as a Kafka record batch, appends it and waits until
// it is durable under the log's fsync policy.
func (s *LogStore) Append(ctx context.Context, partition int32, batch StoreBatch) error {
	encoded, err := encodeStoreBatch(batch)
	if err != nil {
		return fmt.Errorf("encode batch for %s-%d: %w", OffsetsTopic, partition, err)
	}
	log, err := s.openPartition(partition)
	if err != nil {
		return err
	}
	result, err := log.Append(encoded)
	if err != nil {
		return fmt.Errorf("append to %s-%d: %w", OffsetsTopic, partition, err)
	}
	if err := log.WaitDurable(ctx, result.LastOffset); err != nil {
		return fmt.Errorf("wait for %s-%d offset %d to be durable: %w", OffsetsTopic, partition, result.LastOffset, err)
	}
	return nil
}

// Replay reads every open partition from its start to its end.
func (s *LogStore) Replay(ctx context.Context, apply func(partition int32, batch StoreBatch) error) error {
	s.mu.Lock()
	partitions := make([]int32, 0, len(s.logs))
	for partition := range s.logs {
		partitions = append(partitions, partition)
	}
	s.mu.Unlock()
	slices.Sort(partitions)
	for _, partition := range partitions {
		log, err := s.openPartition(partition)
		if err != nil {
			return err
		}
		if err := replayLog(ctx, log, partition, apply); err != nil {
			return fmt.Errorf("replay %s-%d: %w", OffsetsTopic, partition, err)
		}
	}
	return nil
}

func replayLog(ctx context.Context, log *storage.Log, partition int32, apply func(int32, StoreBatch) error) error {
	end := log.LogEndOffset()
	for from := log.LogStartOffset(); from < end; {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := log.ReadBatches(from, end, replayReadBytes)
		if err != nil {
			return fmt.Errorf("read at offset %d: %w", from, err)
		}
		if len(data) == 0 {
			return nil
		}
		for len(data) > 0 {
			view, err := wire.ParseBatch(data)
			if err != nil {
				return fmt.Errorf("batch after offset %d: %w", from, err)
			}
			batch, err := decodeStoreBatch(view)
			if err != nil {
				return fmt.Errorf("batch at offset %d: %w", view.BaseOffset(), err)
			}
			if err := apply(partition, batch); err != nil {
				return err
			}
			from = view.LastOffset() + 1
			data = data[view.Size():]
		}
	}
	return nil
}

// Close closes every partition log.
func (s *LogStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for partition, log := range s.logs {
		if err := log.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s-%d: %w", OffsetsTopic, partition, err))
		}
	}
	return errors.Join(errs...)
}

// encodeStoreBatch builds the record batch v2 for batch: a transaction
// marker (control batch) or a batch of key/value records.
func encodeStoreBatch(batch StoreBatch) ([]byte, error) {
	if batch.Marker != nil {
		return wire.BuildControlBatch(batch.ProducerID, batch.ProducerEpoch, batch.Marker.Commit, batch.Marker.CoordinatorEpoch, batch.TimestampMillis), nil
	}
	options := wire.PlainBatchOptions()
	options.ProducerID = batch.ProducerID
	options.ProducerEpoch = batch.ProducerEpoch
	options.Transactional = batch.Transactional
	records := make([]wire.BuilderRecord, len(batch.Records))
	for i, record := range batch.Records {
		records[i] = wire.BuilderRecord{TimestampMillis: batch.TimestampMillis, Key: record.Key, Value: record.Value}
	}
	return wire.BuildBatch(options, records)
}

// decodeStoreBatch is the inverse of encodeStoreBatch.
func decodeStoreBatch(view wire.BatchView) (StoreBatch, error) {
	batch := StoreBatch{
		ProducerID:      view.ProducerID(),
		ProducerEpoch:   view.ProducerEpoch(),
		Transactional:   view.Transactional(),
		TimestampMillis: view.MaxTimestamp(),
	}
	iterator, err := view.RecordIterator()
	if err != nil {
		return batch, err
	}
	for iterator.Next() {
		record := iterator.Record()
		if view.Control() {
			control, err := wire.ParseControlRecord(record.Key, record.Value)
			if err != nil {
				return batch, err
			}
			if control.IsTransactionMarker() {
				batch.Marker = &TxnMarker{Commit: control.Type == wire.ControlCommit, CoordinatorEpoch: control.CoordinatorEpoch}
			}
			continue
		}
		batch.Records = append(batch.Records, StoreRecord{Key: cloneBytes(record.Key), Value: cloneBytes(record.Value)})
	}
	if err := iterator.Err(); err != nil {
		return batch, err
	}
	if view.Control() && batch.Marker == nil {
		batch.Transactional = false // a non-marker control batch: nothing to apply
	}
	return batch, nil
}

// EncodeStoreBatch encodes batch as the Kafka record batch v2 the store
// writes (doc.go), for a store that appends through another log — a
// broker's replicated __consumer_offsets partition.
func EncodeStoreBatch(batch StoreBatch) ([]byte, error) { return encodeStoreBatch(batch) }

// ReplayLog calls apply for every batch of log (partition partition of
// __consumer_offsets) from its start to its end, as Replay does for one
// partition.
func ReplayLog(ctx context.Context, log *storage.Log, partition int32, apply func(int32, StoreBatch) error) error {
	return replayLog(ctx, log, partition, apply)
}
