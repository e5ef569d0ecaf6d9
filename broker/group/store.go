package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// StoreRecord is one key/value record of the __consumer_offsets topic, in
// Kafka's byte formats (see "__consumer_offsets record formats" in the
// package doc). A nil Value is a tombstone: it deletes the key.
type StoreRecord struct {
	Key   []byte
	Value []byte
}

// StoreBatch is one record batch of the __consumer_offsets topic.
//
// A plain batch has ProducerID -1. A transactional batch (offsets committed
// with TxnOffsetCommit) carries the producer's id and epoch; its records
// take effect only when a later commit marker for the same producer id is
// appended to the same partition, and are dropped by an abort marker.
type StoreBatch struct {
	ProducerID    int64
	ProducerEpoch int16
	Transactional bool
	// Marker is set for a control batch (no Records): the end of the
	// producer's transaction on this partition.
	Marker *TxnMarker
	// Records are the batch's records, in order.
	Records []StoreRecord
	// TimestampMillis is the batch's create time.
	TimestampMillis int64
}

// TxnMarker is the end of a transaction on one partition.
type TxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// OffsetStore persists the __consumer_offsets partitions. The coordinator
// is the only writer; it serializes the appends of one group (holding the
// group's lock), and appends to different partitions concurrently.
type OffsetStore interface {
	// Append writes batch to partition and returns once the batch is
	// durable. An error means the batch may or may not be in the log; the
	// coordinator does not apply it and reports the commit as failed.
	Append(ctx context.Context, partition int32, batch StoreBatch) error
	// Replay calls apply for every batch of every partition, partition by
	// partition, in log order. It is called once, before any Append.
	Replay(ctx context.Context, apply func(partition int32, batch StoreBatch) error) error
	// Close releases the store's resources.
	Close() error
}

// ErrStoreClosed is returned by a store after Close.
var ErrStoreClosed = errors.New("offset store closed")

// MemoryStore is an OffsetStore kept in memory: a slice of batches per
// partition. It survives a Coordinator being closed and recreated on it,
// which is what restart tests need. Its mutex guards all fields.
type MemoryStore struct {
	mu         sync.Mutex
	partitions map[int32][]StoreBatch
	closed     bool
	// failAppends, when non-nil, is returned by every Append (tests).
	failAppends error
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{partitions: make(map[int32][]StoreBatch)}
}

// Append stores a deep copy of batch.
func (s *MemoryStore) Append(ctx context.Context, partition int32, batch StoreBatch) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("append to partition %d: %w", partition, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStoreClosed
	}
	if s.failAppends != nil {
		return fmt.Errorf("append to partition %d: %w", partition, s.failAppends)
	}
	s.partitions[partition] = append(s.partitions[partition], copyBatch(batch))
	return nil
}

// Replay applies every stored batch, partition by partition.
func (s *MemoryStore) Replay(ctx context.Context, apply func(partition int32, batch StoreBatch) error) error {
	s.mu.Lock()
	snapshot := make(map[int32][]StoreBatch, len(s.partitions))
	partitionIDs := make([]int32, 0, len(s.partitions))
	for partition, batches := range s.partitions {
		snapshot[partition] = append([]StoreBatch(nil), batches...)
		partitionIDs = append(partitionIDs, partition)
	}
	s.mu.Unlock()
	slices.Sort(partitionIDs)
	for _, partition := range partitionIDs {
		for _, batch := range snapshot[partition] {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := apply(partition, copyBatch(batch)); err != nil {
				return fmt.Errorf("replay partition %d: %w", partition, err)
			}
		}
	}
	return nil
}

// Close is a no-op: the contents stay for a later coordinator (a restart).
func (s *MemoryStore) Close() error { return nil }

// SetAppendError makes every later Append fail with err (nil clears it).
func (s *MemoryStore) SetAppendError(err error) {
	s.mu.Lock()
	s.failAppends = err
	s.mu.Unlock()
}

// BatchCount returns how many batches partition holds.
func (s *MemoryStore) BatchCount(partition int32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.partitions[partition])
}

func copyBatch(batch StoreBatch) StoreBatch {
	out := batch
	out.Records = make([]StoreRecord, len(batch.Records))
	for i, record := range batch.Records {
		out.Records[i] = StoreRecord{Key: cloneBytes(record.Key), Value: cloneBytes(record.Value)}
	}
	if batch.Marker != nil {
		marker := *batch.Marker
		out.Marker = &marker
	}
	return out
}

func cloneBytes(raw []byte) []byte {
	if raw == nil {
		return nil
	}
	return append([]byte{}, raw...)
}
