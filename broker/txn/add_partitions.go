package txn

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddPartitionsToTxn (key 24), versions 0–5. v0–v3 are the client's form:
// one transactional id and its partitions; the partitions become
// participants (the first add opens the transaction) and the new state is
// written before the reply. v4+ is the brokers' batched form (KIP-890):
// several transactions, each either VerifyOnly (part 1: is every partition
// already in the open transaction? INVALID_TXN_STATE for those that are
// not; nothing is written) or an add (part 2: a partition leader adding a
// partition implicitly for a Produce v12+). v2+ get PRODUCER_FENCED where
// older versions get INVALID_PRODUCER_EPOCH. When some partition is
// unknown (Config.PartitionExists), it gets UNKNOWN_TOPIC_OR_PARTITION, the
// others OPERATION_NOT_ATTEMPTED, and nothing is added.
//
// AddOffsetsToTxn (key 25), versions 0–4: adds a consumer group, recorded
// as the group's __consumer_offsets partition (as Kafka does) plus the
// group id; at the end of the transaction the OffsetCommitter completes
// the group's offsets. v2+ get PRODUCER_FENCED.

// AddPartitionsToTxn serves an AddPartitionsToTxn request.
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	resp.Version = req.Version
	if req.Version < 4 {
		partitions := requestPartitions(req.Topics)
		codes := c.addOrVerify(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, partitions, false, req.Version)
		resp.Topics = responseTopics(partitions, codes)
		return resp
	}
	for _, transaction := range req.Transactions {
		var partitions []TopicPartition
		for _, topic := range transaction.Topics {
			for _, partition := range topic.Partitions {
				partitions = append(partitions, TopicPartition{Topic: topic.Topic, Partition: partition})
			}
		}
		codes := c.addOrVerify(ctx, transaction.TransactionalID, transaction.ProducerID, transaction.ProducerEpoch, partitions, transaction.VerifyOnly, req.Version)
		result := kmsg.AddPartitionsToTxnResponseTransaction{TransactionalID: transaction.TransactionalID}
		for _, topic := range responseTopics(partitions, codes) {
			resultTopic := kmsg.AddPartitionsToTxnResponseTransactionTopic{Topic: topic.Topic}
			for _, partition := range topic.Partitions {
				resultTopic.Partitions = append(resultTopic.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{
					Partition: partition.Partition, ErrorCode: partition.ErrorCode,
				})
			}
			result.Topics = append(result.Topics, resultTopic)
		}
		resp.Transactions = append(resp.Transactions, result)
	}
	return resp
}

// requestPartitions flattens a v0–v3 request's topics.
func requestPartitions(topics []kmsg.AddPartitionsToTxnRequestTopic) []TopicPartition {
	var partitions []TopicPartition
	for _, topic := range topics {
		for _, partition := range topic.Partitions {
			partitions = append(partitions, TopicPartition{Topic: topic.Topic, Partition: partition})
		}
	}
	return partitions
}

// responseTopics groups per-partition codes by topic, in request order.
func responseTopics(partitions []TopicPartition, codes []int16) []kmsg.AddPartitionsToTxnResponseTopic {
	var topics []kmsg.AddPartitionsToTxnResponseTopic
	index := make(map[string]int)
	for i, tp := range partitions {
		at, ok := index[tp.Topic]
		if !ok {
			at = len(topics)
			index[tp.Topic] = at
			topics = append(topics, kmsg.AddPartitionsToTxnResponseTopic{Topic: tp.Topic})
		}
		topics[at].Partitions = append(topics[at].Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: tp.Partition, ErrorCode: codes[i]})
	}
	return topics
}

// addOrVerify adds partitions to (or, verifyOnly, checks them against) a
// transaction and returns one error code per partition.
func (c *Coordinator) addOrVerify(ctx context.Context, transactionalID string, producerID int64, epoch int16, partitions []TopicPartition, verifyOnly bool, version int16) []int16 {
	codes := make([]int16, len(partitions))
	fill := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	if verifyOnly {
		m := c.snapshot(transactionalID)
		if m == nil {
			return fill(kerr.InvalidProducerIDMapping.Code)
		}
		if err := m.checkProducer(producerID, epoch); err != nil {
			return fill(errorCode(err, version, addPartitionsFencedVersion))
		}
		for i, tp := range partitions {
			codes[i] = errorCode(m.verify(tp), version, addPartitionsFencedVersion)
		}
		return codes
	}
	if c.cfg.PartitionExists != nil {
		unknown := false
		for i, tp := range partitions {
			if !c.cfg.PartitionExists(tp.Topic, tp.Partition) {
				codes[i] = kerr.UnknownTopicOrPartition.Code
				unknown = true
			}
		}
		if unknown {
			for i := range codes {
				if codes[i] == 0 {
					codes[i] = kerr.OperationNotAttempted.Code
				}
			}
			return codes
		}
	}
	err := c.add(ctx, transactionalID, producerID, epoch, partitions, "")
	return fill(errorCode(err, version, addPartitionsFencedVersion))
}

// AddOffsetsToTxn serves an AddOffsetsToTxn request.
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	resp := kmsg.NewPtrAddOffsetsToTxnResponse()
	resp.Version = req.Version
	var err error
	if req.Group == "" {
		err = fmt.Errorf("empty group id: %w", ErrInvalidRequest)
	} else {
		err = c.add(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, nil, req.Group)
	}
	resp.ErrorCode = errorCode(err, req.Version, addOffsetsFencedVersion)
	return resp
}

// OffsetsPartition is the __consumer_offsets partition of a group, as the
// coordinator records it for AddOffsetsToTxn.
func (c *Coordinator) OffsetsPartition(group string) TopicPartition {
	return TopicPartition{Topic: offsetsTopic, Partition: int32(PartitionFor(group, c.cfg.OffsetsTopicPartitions))}
}

// add makes partitions (and group, if not empty) participants of the
// producer's transaction, opening it if none is, and writes the new state.
func (c *Coordinator) add(ctx context.Context, transactionalID string, producerID int64, epoch int16, partitions []TopicPartition, group string) error {
	if transactionalID == "" {
		return fmt.Errorf("empty transactional id: %w", ErrInvalidRequest)
	}
	if group != "" {
		partitions = append(slices.Clone(partitions), c.OffsetsPartition(group))
	}
	e, err := c.lockEntry(transactionalID, nil)
	if err != nil {
		return err
	}
	if e == nil {
		return fmt.Errorf("transactional id %q unknown: %w", transactionalID, ErrInvalidProducerIDMapping)
	}
	defer e.mu.Unlock()
	next, changed, err := e.meta.addParticipants(c.cfg.Now(), producerID, epoch, partitions, group)
	if err != nil || !changed {
		return err
	}
	return c.write(ctx, e, next)
}

// checkProducer fails unless producerID and epoch are the current ones:
// ErrInvalidProducerIDMapping for another producer id, ErrProducerFenced
// for another epoch.
func (m *Metadata) checkProducer(producerID int64, epoch int16) error {
	if producerID != m.ProducerID {
		return fmt.Errorf("transactional id %q: producer id %d is not %d: %w", m.TransactionalID, producerID, m.ProducerID, ErrInvalidProducerIDMapping)
	}
	if epoch != m.ProducerEpoch {
		return fmt.Errorf("transactional id %q: epoch %d is not the current %d: %w", m.TransactionalID, epoch, m.ProducerEpoch, ErrProducerFenced)
	}
	return nil
}

// addParticipants decides an add (pure): the next state and whether it
// differs from m (a retried add of known participants writes nothing).
func (m *Metadata) addParticipants(now time.Time, producerID int64, epoch int16, partitions []TopicPartition, group string) (Metadata, bool, error) {
	if err := m.checkProducer(producerID, epoch); err != nil {
		return Metadata{}, false, err
	}
	switch m.State {
	case StateOngoing, StateEmpty, StateCompleteCommit, StateCompleteAbort:
	case StatePrepareCommit, StatePrepareAbort:
		return Metadata{}, false, fmt.Errorf("transactional id %q: previous transaction is %s: %w", m.TransactionalID, m.State, ErrConcurrentTransactions)
	default:
		return Metadata{}, false, fmt.Errorf("transactional id %q in state %s: %w", m.TransactionalID, m.State, ErrConcurrentTransactions)
	}
	if m.State == StateOngoing && (group == "" || slices.Contains(m.Groups, group)) &&
		!slices.ContainsFunc(partitions, func(tp TopicPartition) bool { return !m.hasPartition(tp) }) {
		return *m, false, nil
	}
	next, err := m.transition(StateOngoing, now, func(next *Metadata) {
		next.addPartitions(partitions)
		if group != "" {
			next.addGroup(group)
		}
	})
	return next, err == nil, err
}

// verify checks that tp is a participant of the open transaction
// (KIP-890 part 1): ErrInvalidTxnState otherwise.
func (m *Metadata) verify(tp TopicPartition) error {
	if m.State != StateOngoing || !m.hasPartition(tp) {
		return fmt.Errorf("transactional id %q (%s): partition %s not in the transaction: %w", m.TransactionalID, m.State, tp, ErrInvalidTxnState)
	}
	return nil
}

// VerifyPartition is the KIP-890 part 1 check the produce path makes for a
// transactional batch: the producer id and epoch are current and the
// partition was added to the open transaction. It reads the published
// state without locking. Errors (map them with ProduceErrorCode):
// ErrInvalidProducerIDMapping, ErrProducerFenced, ErrInvalidTxnState.
func (c *Coordinator) VerifyPartition(transactionalID string, producerID int64, epoch int16, topic string, partition int32) error {
	m := c.snapshot(transactionalID)
	if m == nil {
		return fmt.Errorf("transactional id %q unknown: %w", transactionalID, ErrInvalidProducerIDMapping)
	}
	if err := m.checkProducer(producerID, epoch); err != nil {
		return err
	}
	return m.verify(TopicPartition{Topic: topic, Partition: partition})
}
