package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/exactly-eos/exactly/broker/txn"
)

// This file wires the transaction coordinator (broker/txn) into the broker:
// opening it over the __transaction_state logs, closing it, and the two
// adapters it calls back through — the MarkerWriter (markers go through
// [Broker.writeMarkers], the core a remote coordinator's WriteTxnMarkers
// request is served by) and the OffsetCommitter (the group coordinator's
// CompleteTxn).
//
// Storage: partition p of __transaction_state is a storage log in
// <data-dir>/__transaction_state/__transaction_state-<p> (the extra level
// keeps it apart from user topics, as for __consumer_offsets); the
// partition count (transaction.state.log.num.partitions) is recorded in
// transaction-state-topic.json there on first start and may not change.
// Retention is off: the coordinator replays the whole log at startup. The
// topic is compacted (cleanup.policy=compact, segments of
// transaction.state.log.segment.bytes), as in Kafka, by the log cleaner
// (logCleaner); an expired transactional id's tombstone goes after
// log.cleaner.delete.retention.ms.
//
// Goroutines: the coordinator's core runs none; its production driver
// (txn.GoroutineDriver) runs a timer goroutine (timeouts, expiry) and one
// completion goroutine per transaction in PrepareCommit or PrepareAbort;
// completions write markers into partitions (taking each partition's
// append lock) and call the group coordinator. Close stops them before the
// partition logs and the group coordinator are closed.
//
// Transaction version: transaction.version (our broker property, default
// 2) selects KIP-890 part 2. At 2 the broker advertises the finalized
// feature transaction.version=2 (appendFeatures), EndTxn v5 bumps the
// epoch, and Produce v12+ / TxnOffsetCommit v5+ add their partition or
// group to the transaction implicitly. Below 2 clients use the classic
// protocol; EndTxn v5 then behaves as v4, and Produce and TxnOffsetCommit
// only verify.

// transactionsDirName is the directory under the data directory holding
// the __transaction_state partition logs.
const transactionsDirName = txn.TransactionStateTopic

// transactionsTopicFile records the partition count the log was created with.
const transactionsTopicFile = "transaction-state-topic.json"

// openTransactions opens the transaction log and starts the coordinator,
// which replays it and resumes the completion of every transaction found
// in PrepareCommit or PrepareAbort. Start calls it after the topics and
// the group coordinator are open (completions write markers to both).
func (b *Broker) openTransactions() error {
	settings := b.config.settings
	b.transactionVersion = settings.TransactionVersion
	if b.clusterGroups() {
		// Sharded over the replicated topic (syncTxnShards, transactionsFor);
		// KIP-890's verification and implicit adds ask the coordinator's
		// broker (Broker.verifyWithCoordinator, Broker.addProducedPartition,
		// Broker.addOffsetsGroup).
		return nil
	}
	partitions := int(settings.TransactionStatePartitions)
	dir := filepath.Join(b.dataDir, transactionsDirName)
	if err := checkInternalPartitions(dir, transactionsTopicFile, "transaction.state.log.num.partitions", txn.TransactionStateTopic, partitions); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	options := b.config.storageOptions(b.config.newTopicConfig(nil))
	options.OnSync = b.onSync()
	options.RetentionAge, options.RetentionBytes = -1, -1
	options.SegmentBytes = int64(settings.TransactionStateSegmentBytes)
	log, err := txn.OpenStorageLog(dir, partitions, options)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	committer := txn.OffsetCommitterFunc(func(ctx context.Context, _ string, producerID int64, producerEpoch int16, commit bool) error {
		// The group coordinator finds the groups holding the producer's
		// pending offsets itself; a second call for another group of the
		// same transaction finds nothing left and does nothing.
		return b.groups.CompleteTxn(ctx, producerID, producerEpoch, commit)
	})
	coordinator, err := txn.NewCoordinator(b.txnConfig(), log, b.producerIDs, markerWriter{broker: b}, committer)
	if err != nil {
		return errors.Join(fmt.Errorf("broker: %w", err), log.Close())
	}
	b.txnLog, b.transactions = log, coordinator
	return nil
}

// txnConfig is the transaction coordinator's configuration from the settings.
func (b *Broker) txnConfig() txn.Config {
	settings := b.config.settings
	return txn.Config{
		MaxTimeout:             settings.TransactionMaxTimeout,
		IDExpiration:           settings.TransactionalIDExpiration,
		CleanupInterval:        settings.TransactionCleanupInterval,
		OffsetsTopicPartitions: int(settings.OffsetsTopicPartitions),
		PartitionExists:        b.partitionExists,
		Observer:               b.txnObserver(),
	}
}

// txnObserver is the coordinator's observer: the metrics, or nil (a nil
// *metrics.Broker must not become a non-nil interface).
func (b *Broker) txnObserver() txn.Observer {
	if b.metrics == nil {
		return nil
	}
	return b.metrics
}

// closeTransactions stops the coordinator (pending completions resume at
// the next start) and closes its log. Close calls it after every
// connection finished and before the partitions and groups are closed.
func (b *Broker) closeTransactions() error {
	if b.transactions == nil {
		return nil
	}
	err := b.transactions.Close()
	if closeErr := b.txnLog.Close(); closeErr != nil {
		err = errors.Join(err, fmt.Errorf("close transaction log: %w", closeErr))
	}
	return err
}

// partitionExists tells the coordinator whether a partition added to a
// transaction exists.
func (b *Broker) partitionExists(topicName string, index int32) bool {
	if b.clusterGroups() {
		return int(index) < len(b.topicRoles(topicName))
	}
	t := b.topicByName(topicName)
	if t == nil {
		return false
	}
	_, err := b.partitionOf(t, index)
	return err == nil
}

// markerWriter is the coordinator's MarkerWriter: it writes the markers
// with [Broker.writeMarkers], the core of the WriteTxnMarkers handler.
type markerWriter struct{ broker *Broker }

// WriteMarkers writes one marker to every partition; partitions that no
// longer exist count as done (their data is gone with them).
func (w markerWriter) WriteMarkers(ctx context.Context, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, partitions []txn.TopicPartition) error {
	if hook := w.broker.beforeMarkers; hook != nil {
		if err := hook(ctx); err != nil {
			return err
		}
	}
	m := markerWrite{producerID: producerID, producerEpoch: producerEpoch, coordinatorEpoch: coordinatorEpoch, commit: commit, partitions: partitions}
	failures := markerFailures{producerID: producerID}
	failures.addAll(partitions, w.broker.writeMarkers(ctx, m))
	return failures.err()
}
