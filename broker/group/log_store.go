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
// record batches (see "Batches and transactions" in the package doc).
// Partitions are opened at OpenLogStore if their directory exists,
// otherwise on their first Append.
//
// mu guards logs, txns and closed; appends to one partition are serialized
// by its partitionTxns.mu (groups of one partition append concurrently).
//
// Transactional offset commits make the logs carry transactions: data
// batches of a producer, then its COMMIT or ABORT marker. Like a
// partition, the store records each aborted transaction in the log's
// aborted-transaction index when it appends the ABORT marker, so the log
// cleaner drops the aborted records (it reads that index) instead of
// taking them as a key's latest value; Replay restores the entries a
// crash lost between marker and index.
type LogStore struct {
	dir     string
	options storage.Options

	mu     sync.Mutex
	logs   map[int32]*storage.Log
	txns   map[int32]*partitionTxns
	closed bool
}

// partitionTxns are the open transactions of one partition log. mu is
// held across the log append and the update of open, so the first offset
// recorded is the one the append got and markers see every earlier batch;
// it is held only for the append (write(2)) and, for an ABORT marker, the
// aborted-index write, never for the durability wait.
type partitionTxns struct {
	mu sync.Mutex
	// open maps a producer id to the first offset of its open transaction
	// in this log (mu).
	open map[int64]int64
}

// observe updates open with one batch at [first, last] and returns the
// aborted transaction an ABORT marker ends (ok false for anything else).
func (p *partitionTxns) observe(producerID int64, transactional bool, marker *TxnMarker, first, last int64) (storage.AbortedTxn, bool) {
	if producerID < 0 {
		return storage.AbortedTxn{}, false
	}
	if marker == nil {
		if _, open := p.open[producerID]; transactional && !open {
			p.open[producerID] = first
		}
		return storage.AbortedTxn{}, false
	}
	start, open := p.open[producerID]
	delete(p.open, producerID)
	if marker.Commit || !open {
		return storage.AbortedTxn{}, false
	}
	lastStable := last + 1
	for _, other := range p.open {
		lastStable = min(lastStable, other)
	}
	return storage.AbortedTxn{ProducerID: producerID, FirstOffset: start, LastOffset: last, LastStableOffset: lastStable}, true
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
	store := &LogStore{dir: dir, options: options, logs: make(map[int32]*storage.Log), txns: make(map[int32]*partitionTxns)}
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

// openPartition returns the partition's log and open transactions,
// opening it if needed.
func (s *LogStore) openPartition(partition int32) (*storage.Log, error) {
	log, _, err := s.partition(partition)
	return log, err
}

func (s *LogStore) partition(partition int32) (*storage.Log, *partitionTxns, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, ErrStoreClosed
	}
	if log, ok := s.logs[partition]; ok {
		return log, s.txns[partition], nil
	}
	dir := filepath.Join(s.dir, OffsetsTopic+"-"+strconv.Itoa(int(partition)))
	log, _, err := storage.Open(dir, s.options)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s-%d: %w", OffsetsTopic, partition, err)
	}
	s.logs[partition] = log
	s.txns[partition] = &partitionTxns{open: map[int64]int64{}}
	return log, s.txns[partition], nil
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
	log, txns, err := s.partition(partition)
	if err != nil {
		return err
	}
	txns.mu.Lock()
	result, err := log.Append(encoded)
	if err == nil {
		if aborted, ok := txns.observe(batch.ProducerID, batch.Transactional, batch.Marker, result.FirstOffset, result.LastOffset); ok {
			err = log.AppendAbortedTxn(aborted)
		}
	}
	txns.mu.Unlock()
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
		log, txns, err := s.partition(partition)
		if err != nil {
			return err
		}
		var aborted []storage.AbortedTxn
		observe := func(view wire.BatchView, batch StoreBatch) {
			if txn, ok := txns.observe(batch.ProducerID, batch.Transactional, batch.Marker, view.BaseOffset(), view.LastOffset()); ok {
				aborted = append(aborted, txn)
			}
		}
		txns.mu.Lock()
		err = replayLog(ctx, log, partition, apply, observe)
		if err == nil {
			err = restoreAbortedIndex(log, aborted)
		}
		txns.mu.Unlock()
		if err != nil {
			return fmt.Errorf("replay %s-%d: %w", OffsetsTopic, partition, err)
		}
	}
	return nil
}

// restoreAbortedIndex adds the replayed aborted transactions the log's
// index lacks (a crash between an ABORT marker and its index entry).
func restoreAbortedIndex(log *storage.Log, replayed []storage.AbortedTxn) error {
	for _, txn := range replayed {
		present := slices.ContainsFunc(log.AbortedTxns(txn.LastOffset, txn.LastOffset+1), func(entry storage.AbortedTxn) bool {
			return entry.ProducerID == txn.ProducerID && entry.LastOffset == txn.LastOffset
		})
		if present {
			continue
		}
		if err := log.AppendAbortedTxn(txn); err != nil {
			return fmt.Errorf("restore aborted transaction index: %w", err)
		}
	}
	return nil
}

// replayLog calls apply for every batch of the log, and observe (if not
// nil) with its view first.
func replayLog(ctx context.Context, log *storage.Log, partition int32, apply func(int32, StoreBatch) error, observe func(wire.BatchView, StoreBatch)) error {
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
			if observe != nil {
				observe(view, batch)
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
// writes (see "Batches and transactions" in the package doc), for a store
// that appends through another log — a broker's replicated
// __consumer_offsets partition.
func EncodeStoreBatch(batch StoreBatch) ([]byte, error) { return encodeStoreBatch(batch) }

// ReplayLog calls apply for every batch of log (partition partition of
// __consumer_offsets) from its start to its end, as Replay does for one
// partition.
func ReplayLog(ctx context.Context, log *storage.Log, partition int32, apply func(int32, StoreBatch) error) error {
	return replayLog(ctx, log, partition, apply, nil)
}
