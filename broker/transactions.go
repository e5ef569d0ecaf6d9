package broker

import (
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
)

// This file wires the transaction coordinator (broker/txn) into the
// broker: its configuration, and what a coordinator shard calls back
// through. The coordinator is sharded over the replicated topic
// __transaction_state (syncTxnShards, transactionsFor), whose partition p
// is a partition of the cluster like any other, created through the
// controller on first use; its markers go to the data partitions' leaders
// (clusterMarkerWriter, [Broker.writeMarkersToLeaders]) and its offsets
// to the groups' coordinators (Broker.completeGroupTxn). Retention is off:
// a shard replays the whole partition when it loads. The topic is
// compacted (cleanup.policy=compact, segments of
// transaction.state.log.segment.bytes), as in Kafka, by the log cleaner
// (logCleaner); an expired transactional id's tombstone goes after
// log.cleaner.delete.retention.ms.
//
// Goroutines: the coordinator's core runs none; its production driver
// (txn.GoroutineDriver) runs a timer goroutine (timeouts, expiry) and one
// completion goroutine per transaction in PrepareCommit or PrepareAbort;
// completions write markers into partitions (taking each partition's
// append lock) and complete the groups' offsets. Close stops the shards
// before the partition logs are closed.
//
// Transaction version: transaction.version (our broker property, default
// 2) selects KIP-890 part 2. At 2 the broker advertises the finalized
// feature transaction.version=2 (appendFeatures), EndTxn v5 bumps the
// epoch, and Produce v12+ / TxnOffsetCommit v5+ add their partition or
// group to the transaction implicitly. Below 2 clients use the classic
// protocol; EndTxn v5 then behaves as v4, and Produce and TxnOffsetCommit
// only verify. KIP-890's verification and implicit adds ask the
// coordinator's broker (Broker.verifyWithCoordinator,
// Broker.addProducedPartition, Broker.addOffsetsGroup).

// txnConfig is the transaction coordinator's configuration from the settings.
func (b *Broker) txnConfig() txn.Config {
	settings := b.config.settings
	return txn.Config{
		MaxTimeout:             settings.TransactionMaxTimeout,
		IDExpiration:           settings.TransactionalIDExpiration,
		CleanupInterval:        settings.TransactionCleanupInterval,
		OffsetsTopicPartitions: int(b.internalPartitions(group.OffsetsTopic, settings.OffsetsTopicPartitions)),
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

// partitionExists tells the coordinator whether a partition added to a
// transaction exists.
func (b *Broker) partitionExists(topicName string, index int32) bool {
	return int(index) < len(b.topicRoles(topicName))
}
