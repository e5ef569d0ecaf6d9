package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/broker/txn"
)

// The broker's side of transactions on a partition (the partition's side
// — open transactions, the last stable offset, markers and the KIP-890
// guard — is in package partition, [partition.TxnVerifier] and
// [partition.Partition.AppendMarker]): a Produce request's transaction,
// produceTxn, is the [partition.TxnVerifier] that asks the transaction
// coordinator whether a transactional batch may be appended.

// produceTxn is what the produce path knows about a request's transaction.
type produceTxn struct {
	broker *Broker
	// transactionalID is the request's transactional id; nil when null.
	transactionalID []byte
	version         int16
	ctx             context.Context
}

var _ partition.TxnVerifier = produceTxn{}

// CanVerify refuses a transactional batch in a request without a
// transactional id (INVALID_RECORD), and any when there is no broker to
// ask a transaction coordinator through (COORDINATOR_NOT_AVAILABLE).
func (tx produceTxn) CanVerify() error {
	if tx.transactionalID == nil {
		return fmt.Errorf("%w: transactional batch in a request without a transactional id", errInvalidRecord)
	}
	if tx.broker == nil {
		return fmt.Errorf("%w: no transaction coordinator", errNoCoordinator)
	}
	return nil
}

// VerifyTransactional is [Broker.verifyTransactionalBatch] for the
// request's transaction.
func (tx produceTxn) VerifyTransactional(producerID int64, producerEpoch int16, topicName string, index int32) error {
	return tx.broker.verifyTransactionalBatch(tx, producerID, producerEpoch, topicName, index)
}

// verifyTransactionalBatch asks the coordinator whether the producer's
// open transaction includes the partition; under transaction version 2 a
// Produce v12+ adds it (KIP-890 part 2) when it is not in yet. The
// coordinator's sentinels reach the Produce response through the error
// table (a fenced producer is INVALID_PRODUCER_EPOCH there).
func (b *Broker) verifyTransactionalBatch(tx produceTxn, producerID int64, epoch int16, topicName string, index int32) error {
	producer := txn.Producer{TransactionalID: string(tx.transactionalID), ProducerID: producerID, Epoch: epoch}
	partition := txn.TopicPartition{Topic: topicName, Partition: index}
	err := b.verifyWithCoordinator(tx.ctx, producer, partition)
	if errors.Is(err, errNoCoordinator) || errors.Is(err, txn.ErrCoordinatorClosed) || errors.Is(err, txn.ErrCoordinatorLoadInProgress) {
		// The coordinator could not be asked (it moves, or loads): as in
		// Kafka, a retriable NOT_ENOUGH_REPLICAS, which every client retries.
		return fmt.Errorf("%w: verification: %w", errNotEnoughReplicas, err)
	}
	if err == nil || !errors.Is(err, txn.ErrInvalidTxnState) || tx.version < 12 || b.transactionVersion < 2 {
		return err
	}
	err = b.addProducedPartition(tx.ctx, producer, partition)
	if errors.Is(err, errNoCoordinator) || errors.Is(err, txn.ErrCoordinatorClosed) || errors.Is(err, txn.ErrCoordinatorLoadInProgress) {
		return fmt.Errorf("%w: add to transaction: %w", errNotEnoughReplicas, err)
	}
	if err != nil {
		return fmt.Errorf("add %s to transaction %q: %w", partition, producer.TransactionalID, err)
	}
	return nil
}
