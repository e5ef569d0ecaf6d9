package txn

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/wire"
)

// TransactionStateTopic is Kafka's name for the transaction log topic.
const TransactionStateTopic = "__transaction_state"

// DefaultTransactionStatePartitions is transaction.state.log.num.partitions.
const DefaultTransactionStatePartitions = 50

// loadReadBytes is how much Load reads from a partition at a time.
const loadReadBytes = 1 << 20

// StorageLog is the Log kept in the partitions of __transaction_state,
// each a broker/storage log in <dir>/__transaction_state-<p>. A record goes
// to partition PartitionFor(transactionalID, partitions), one record per
// batch: a real Kafka record batch (magic 2, uncompressed, no producer id)
// whose record key and value are the __transaction_state key and value
// (see "Transaction log records" and "StorageLog layout" in the package
// doc). Append waits until the batch is durable per the storage
// fsync policy.
//
// The broker's log cleaner compacts the partitions (each id's latest
// record stays); Load replays what is left, gaps included (see "StorageLog
// layout" in the package doc).
type StorageLog struct {
	partitions []*storage.Log
	now        func() time.Time
}

// OpenStorageLog opens (creating as needed) the partitions of the
// transaction log under dir. partitions below 1 means the default (50).
// The partition count must not change between runs: ids would map to
// other partitions (Kafka has the same rule).
func OpenStorageLog(dir string, partitions int, options storage.Options) (*StorageLog, error) {
	if partitions < 1 {
		partitions = DefaultTransactionStatePartitions
	}
	now := options.Now
	if now == nil {
		now = time.Now
	}
	l := &StorageLog{now: now}
	for p := range partitions {
		partitionDir := filepath.Join(dir, TransactionStateTopic+"-"+strconv.Itoa(p))
		log, _, err := storage.Open(partitionDir, options)
		if err != nil {
			closeErr := l.Close()
			return nil, errors.Join(fmt.Errorf("open transaction log: %w", err), closeErr)
		}
		l.partitions = append(l.partitions, log)
	}
	return l, nil
}

// Partitions returns the partition logs, in partition order (for the
// broker to serve or replicate them).
func (l *StorageLog) Partitions() []*storage.Log { return l.partitions }

// Append writes one record to its transactional id's partition and waits
// for it to be durable.
func (l *StorageLog) Append(ctx context.Context, key, value []byte) error {
	id, err := decodeKey(key)
	if err != nil {
		return fmt.Errorf("transaction log append: %w", err)
	}
	p := PartitionFor(id, len(l.partitions))
	batch, err := wire.BuildBatch(wire.PlainBatchOptions(), []wire.BuilderRecord{{
		TimestampMillis: l.now().UnixMilli(), Key: key, Value: value,
	}})
	if err != nil {
		return fmt.Errorf("transaction log append %s-%d: %w", TransactionStateTopic, p, err)
	}
	result, err := l.partitions[p].Append(batch)
	if err != nil {
		return fmt.Errorf("transaction log append %s-%d: %w", TransactionStateTopic, p, err)
	}
	if err := l.partitions[p].WaitDurable(ctx, result.LastOffset); err != nil {
		return fmt.Errorf("transaction log append %s-%d: %w", TransactionStateTopic, p, err)
	}
	return nil
}

// Load reads every record of every partition, partition by partition, in
// offset order (the latest value of an id is in one partition, so the
// order between partitions does not matter). Control batches are skipped.
func (l *StorageLog) Load(fn func(key, value []byte) error) error {
	for p, log := range l.partitions {
		if err := loadPartition(log, fn); err != nil {
			return fmt.Errorf("load %s-%d: %w", TransactionStateTopic, p, err)
		}
	}
	return nil
}

// LoadPartitionLog calls fn for every record of one __transaction_state
// partition log from its start to its end (control batches skipped), for
// a log the broker replicates.
func LoadPartitionLog(log *storage.Log, fn func(key, value []byte) error) error {
	return loadPartition(log, fn)
}

// EncodeLogBatch is the record batch StorageLog appends for one record.
func EncodeLogBatch(key, value []byte, timestampMillis int64) ([]byte, error) {
	return wire.BuildBatch(wire.PlainBatchOptions(), []wire.BuilderRecord{{TimestampMillis: timestampMillis, Key: key, Value: value}})
}

// loadPartition replays one partition from its log start.
func loadPartition(log *storage.Log, fn func(key, value []byte) error) error {
	from, end := log.LogStartOffset(), log.LogEndOffset()
	for from < end {
		data, err := log.ReadBatches(from, end, loadReadBytes)
		if err != nil {
			return fmt.Errorf("read at %d: %w", from, err)
		}
		if len(data) == 0 {
			return nil // compaction removed every batch left below the end
		}
		for len(data) > 0 {
			batch, err := wire.ParseBatch(data)
			if err != nil {
				return fmt.Errorf("batch after %d: %w", from, err)
			}
			data = data[batch.Size():]
			from = batch.LastOffset() + 1
			if batch.Control() {
				continue
			}
			records, err := batch.RecordIterator()
			if err != nil {
				return fmt.Errorf("batch at %d: %w", batch.BaseOffset(), err)
			}
			for records.Next() {
				record := records.Record()
				if err := fn(record.Key, record.Value); err != nil {
					return fmt.Errorf("record at %d: %w", record.Offset, err)
				}
			}
			if err := records.Err(); err != nil {
				return fmt.Errorf("batch at %d: %w", batch.BaseOffset(), err)
			}
		}
	}
	return nil
}

// Close closes every partition.
func (l *StorageLog) Close() error {
	var errs []error
	for _, log := range l.partitions {
		errs = append(errs, log.Close())
	}
	return errors.Join(errs...)
}
