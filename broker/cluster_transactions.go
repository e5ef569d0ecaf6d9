package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/exactly-eos/exactly/broker/txn"
)

// Transaction coordinators in a cluster (coordinatorShards has the
// sharding): __transaction_state is a replicated topic of the cluster,
// created through the controller on the first FindCoordinator for a
// transactional id, with transaction.state.log.num.partitions partitions,
// replication factor min(3, live brokers) and min.insync.replicas
// min(2, RF). An id belongs to partition txn.PartitionFor(id, partitions);
// the shard of a partition led here is a txn.Coordinator over
// partitionTxnLog (acks=all appends to that partition) whose coordinator
// epoch is the partition's leader epoch. Loading a shard replays the
// partition and resumes the completion of every transaction found in
// PrepareCommit or PrepareAbort (txn.NewCoordinator does), so a
// coordinator that died between Prepare* and the markers is finished by
// the next leader.
//
// Markers go to each data partition's current leader
// ([Broker.writeMarkersToLeaders]): through [Broker.writeMarkers] when
// that is this broker, else as a WriteTxnMarkers request to it
// ([Broker.remoteWriteMarkers]), carrying the coordinator epoch; a
// leader that moved answers NOT_LEADER_OR_FOLLOWER and the completion
// retries with the roles of the time. Groups' offsets are
// completed by a marker to their __consumer_offsets partition's leader,
// whose group shard applies them before answering.
//
// KIP-890: a partition leader verifies every transactional batch and
// TxnOffsetCommit with the id's coordinator (part 1): the local shard, or
// AddPartitionsToTxn VerifyOnly to the coordinator's broker. Under
// transaction.version 2 (part 2, finalized in a cluster as on one node)
// a Produce v12+ whose partition is not in the transaction adds it there
// (AddPartitionsToTxn v5 without VerifyOnly), and a TxnOffsetCommit v5+
// its group (AddOffsetsToTxn), so clients send neither; EndTxn v5 bumps
// the epoch, and the markers carry the new one.
//
// Producer ids: each broker's allocator hands out ids from blocks the
// quorum's controller allocates (AllocateProducerIds, opened by
// openProducerIDs), so coordinators on different brokers never give two
// producers one id.

// Refusing coordinators: what transactionsFor returns for an id this
// broker does not coordinate (yet).
var (
	notTxnCoordinator     = txn.NewRefusingCoordinator(txn.ErrCoordinatorClosed)
	txnCoordinatorLoading = txn.NewRefusingCoordinator(txn.ErrCoordinatorLoadInProgress)
)

// transactionStatePartition is the __transaction_state partition of id.
func (b *Broker) transactionStatePartition(transactionalID string) int32 {
	return int32(txn.PartitionFor(transactionalID, int(b.internalPartitions(txn.TransactionStateTopic, b.config.settings.TransactionStatePartitions))))
}

// transactionsFor returns the coordinator serving transactionalID here:
// the shard of its partition, or a refusing coordinator (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
func (b *Broker) transactionsFor(transactionalID string) *txn.Coordinator {
	c, loaded, exists := b.replication.txns.lookup(b.transactionStatePartition(transactionalID))
	switch {
	case !exists:
		return notTxnCoordinator
	case !loaded:
		return txnCoordinatorLoading
	}
	return c
}

// syncTxnShards makes the transaction shards match view (ApplyPartitionRoles).
func (b *Broker) syncTxnShards(view *clusterView) {
	b.replication.txns.sync(b, view.topics[txn.TransactionStateTopic], shardLoader[*txn.Coordinator]{
		load: func(_ context.Context, p *topicPartition, leaderEpoch int32) (*txn.Coordinator, error) {
			config := b.txnConfig()
			config.CoordinatorEpoch = leaderEpoch
			log := &partitionTxnLog{broker: b, partition: p, leaderEpoch: leaderEpoch}
			committer := txn.OffsetCommitterFunc(func(ctx context.Context, groupID string, producerID int64, producerEpoch int16, commit bool) error {
				return b.completeGroupTxn(ctx, groupID, producerID, producerEpoch, leaderEpoch, commit)
			})
			return txn.NewCoordinator(config, log, b.producerIDs, clusterMarkerWriter{broker: b}, committer)
		},
	})
}

// listTransactions lists the transactions of every coordinator serving
// here (in a cluster, those of the partitions led here).
func (b *Broker) listTransactions(filter txn.ListFilter) (txn.ListResult, error) {
	var out txn.ListResult
	for _, c := range b.replication.txns.loaded() {
		result, err := c.ListTransactions(filter)
		if err != nil && !errors.Is(err, txn.ErrCoordinatorClosed) {
			return txn.ListResult{}, err
		}
		out.Transactions = append(out.Transactions, result.Transactions...)
		out.UnknownStates = result.UnknownStates
	}
	slices.SortFunc(out.Transactions, func(x, y txn.Listing) int { return compareStrings(x.TransactionalID, y.TransactionalID) })
	return out, nil
}

// verifyWithCoordinator is KIP-890 part 1 for a transactional batch or
// TxnOffsetCommit: is partition in the producer's open transaction? The
// local coordinator answers when it serves the id; in a cluster the id's
// coordinator may be another broker, asked with AddPartitionsToTxn
// VerifyOnly.
func (b *Broker) verifyWithCoordinator(ctx context.Context, producer txn.Producer, partition txn.TopicPartition) error {
	leader, err := b.transactionCoordinatorBroker(producer.TransactionalID)
	switch {
	case err != nil:
		return err
	case leader == b.nodeID:
		return b.transactionsFor(producer.TransactionalID).VerifyPartition(producer, partition)
	}
	ctx, cancel := context.WithTimeout(ctx, internalAppendTimeout)
	defer cancel()
	return b.remoteAddPartition(ctx, leader, producer, partition, true)
}

// addProducedPartition is KIP-890 part 2's implicit add of a Produce v12+
// under transaction.version 2: the partition joins the producer's
// transaction at its coordinator, here or (in a cluster) on the broker
// leading the id's __transaction_state partition.
func (b *Broker) addProducedPartition(ctx context.Context, producer txn.Producer, partition txn.TopicPartition) error {
	leader, err := b.transactionCoordinatorBroker(producer.TransactionalID)
	switch {
	case err != nil:
		return err
	case leader == b.nodeID:
		return b.transactionsFor(producer.TransactionalID).AddProducedPartition(ctx, producer, partition)
	}
	ctx, cancel := context.WithTimeout(ctx, internalAppendTimeout)
	defer cancel()
	return b.remoteAddPartition(ctx, leader, producer, partition, false)
}

// addOffsetsGroup is KIP-890 part 2's implicit add of a TxnOffsetCommit
// v5+ under transaction.version 2: the group joins the producer's
// transaction at its coordinator, here or on another broker.
func (b *Broker) addOffsetsGroup(ctx context.Context, producer txn.Producer, groupID string) error {
	leader, err := b.transactionCoordinatorBroker(producer.TransactionalID)
	switch {
	case err != nil:
		return err
	case leader == b.nodeID:
		return b.transactionsFor(producer.TransactionalID).AddOffsets(ctx, producer, groupID)
	}
	ctx, cancel := context.WithTimeout(ctx, internalAppendTimeout)
	defer cancel()
	return b.remoteAddOffsets(ctx, leader, producer, groupID)
}

// transactionCoordinatorBroker is the broker coordinating a transactional
// id in a cluster: the leader of its __transaction_state partition.
func (b *Broker) transactionCoordinatorBroker(transactionalID string) (int32, error) {
	index := b.transactionStatePartition(transactionalID)
	leader := b.partitionLeader(txn.TransactionStateTopic, index)
	if leader < 0 {
		return -1, fmt.Errorf("%w: %s-%d has no leader", errNoCoordinator, txn.TransactionStateTopic, index)
	}
	return leader, nil
}

// clusterMarkerWriter is a shard's MarkerWriter: markers to each
// partition's current leader.
type clusterMarkerWriter struct{ broker *Broker }

// WriteMarkers writes one marker to every partition
// ([Broker.writeMarkersToLeaders]).
func (w clusterMarkerWriter) WriteMarkers(ctx context.Context, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, partitions []txn.TopicPartition) error {
	if hook := w.broker.beforeMarkers; hook != nil {
		if err := hook(ctx); err != nil {
			return err
		}
	}
	return w.broker.writeMarkersToLeaders(ctx, markerWrite{producerID: producerID, producerEpoch: producerEpoch,
		coordinatorEpoch: coordinatorEpoch, commit: commit, partitions: partitions})
}

// partitionTxnLog is a transaction shard's Log: one replicated
// __transaction_state partition, appended to as its leader at the shard's
// leader epoch with acks=all.
type partitionTxnLog struct {
	broker      *Broker
	partition   *topicPartition
	leaderEpoch int32
}

// Append writes one record and waits until the ISR has it.
func (l *partitionTxnLog) Append(ctx context.Context, key, value []byte) error {
	batch, err := txn.EncodeLogBatch(key, value, time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("encode record for %s: %w", l.partition.Name(), err)
	}
	if err := l.broker.appendInternalReplicated(ctx, l.partition, batch, l.leaderEpoch); err != nil {
		// As text: the coordinator answers COORDINATOR_NOT_AVAILABLE (it
		// wraps txn.ErrCoordinatorNotAvailable), never the partition's own
		// code (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE while the
		// broker closes), which a client does not expect from EndTxn.
		return fmt.Errorf("append to %s: %v", l.partition.Name(), err)
	}
	return nil
}

// Load reads the partition from its start to its end.
func (l *partitionTxnLog) Load(fn func(key, value []byte) error) error {
	return txn.LoadPartitionLog(l.partition.Log(), fn)
}
