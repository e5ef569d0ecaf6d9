package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/txn"
)

// transactionService is the broker as api.Transactions, the service package api's handlers see.
type transactionService struct{ b *Broker }

// For is [Broker.transactionsFor].
func (s transactionService) For(transactionalID string) *txn.Coordinator {
	return s.b.transactionsFor(transactionalID)
}

// Version is the finalized transaction.version.
func (s transactionService) Version() int16 { return s.b.transactionVersion }

// NextProducerID allocates from the broker's producer id blocks.
func (s transactionService) NextProducerID() (int64, error) { return s.b.producerIDs.Next() }

// List is [Broker.listTransactions].
func (s transactionService) List(filter txn.ListFilter) (txn.ListResult, error) {
	return s.b.listTransactions(filter)
}

// CheckOffsetCommit is [Broker.verifyWithCoordinator] for the group's
// __consumer_offsets partition, then [Broker.addOffsetsGroup] when the
// group is not in the transaction and addGroup. A refusal is logged at
// debug level.
func (s transactionService) CheckOffsetCommit(ctx context.Context, producer txn.Producer, groupID string, addGroup bool) error {
	b := s.b
	offsets := txn.TopicPartition{Topic: group.OffsetsTopic, Partition: b.offsetsPartition(groupID)}
	err := b.verifyWithCoordinator(ctx, producer, offsets)
	if err == nil {
		return nil
	}
	if errors.Is(err, txn.ErrInvalidTxnState) && addGroup {
		err = b.addOffsetsGroup(ctx, producer, groupID)
	}
	if err != nil {
		b.logger.Debug("transactional offset commit refused", "group", groupID,
			"transactional_id", producer.TransactionalID, "error", fmt.Sprint(err))
	}
	return err
}

// Producers is the partition's [partition.Partition.DescribeProducers].
func (s transactionService) Producers(topic string, index int32) ([]producers.ProducerInfo, error) {
	t := s.b.topicByName(topic)
	if t == nil {
		return nil, errUnknownTopic
	}
	p, err := s.b.partitionOf(t, index)
	if err != nil {
		return nil, err
	}
	return p.DescribeProducers()
}

// WriteMarkers is [Broker.writeMarkers]. The handler's ctx ends when the
// connection dies and also when the broker closes; the marker writes
// then under way go on under a context that ends only with the former,
// so a broker shutting down lets them finish, as it lets Produce's
// durability waits finish (both wait under the connection's lifetime).
func (s transactionService) WriteMarkers(ctx context.Context, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, partitions []txn.TopicPartition) []error {
	writing, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if s.b.ctx.Err() == nil { // the connection died, not the broker
			cancel()
		}
	})
	defer stop()
	return s.b.writeMarkers(writing, markerWrite{
		producerID:       producerID,
		producerEpoch:    producerEpoch,
		coordinatorEpoch: coordinatorEpoch,
		commit:           commit,
		partitions:       partitions,
	})
}
