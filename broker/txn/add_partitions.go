package txn

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// AddPartitionsToTxn (key 24): the partitions become participants of the
// producer's transaction (the first add opens it) and the new state is
// written before the reply. When some partition is unknown
// (Config.PartitionExists) it gets ErrUnknownPartition, the others
// ErrOperationNotAttempted, and nothing is added. The brokers' batched
// form (KIP-890, v4+) either verifies (VerifyPartitions: is every
// partition already in the open transaction? nothing is written) or adds;
// a partition leader's implicit add for a Produce v12+ is
// AddProducedPartition.
//
// AddOffsetsToTxn (key 25): adds a consumer group, recorded as the group's
// __consumer_offsets partition (as Kafka does) plus the group id; at the
// end of the transaction the OffsetCommitter completes the group's
// offsets.

// AddPartitions adds partitions to the producer's transaction and returns
// one error per partition, indexed like partitions (nil: added).
func (c *Coordinator) AddPartitions(ctx context.Context, p Producer, partitions []TopicPartition) []error {
	errs := make([]error, len(partitions))
	if c.cfg.PartitionExists != nil {
		unknown := false
		for i, tp := range partitions {
			if !c.cfg.PartitionExists(tp.Topic, tp.Partition) {
				errs[i] = fmt.Errorf("partition %s: %w", tp, ErrUnknownPartition)
				unknown = true
			}
		}
		if unknown {
			for i, tp := range partitions {
				if errs[i] == nil {
					errs[i] = fmt.Errorf("partition %s: another partition of the request is unknown: %w", tp, ErrOperationNotAttempted)
				}
			}
			return errs
		}
	}
	err := c.add(ctx, p, partitions, "")
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// AddProducedPartition is KIP-890 part 2's implicit add: the partition
// leader of a Produce v12+ whose transactional batch failed
// VerifyPartition with ErrInvalidTxnState adds the partition to the
// producer's transaction itself. It is AddPartitions of one partition.
func (c *Coordinator) AddProducedPartition(ctx context.Context, p Producer, tp TopicPartition) error {
	return c.AddPartitions(ctx, p, []TopicPartition{tp})[0]
}

// VerifyPartitions is the brokers' VerifyOnly form of AddPartitionsToTxn
// (KIP-890 part 1): one error per partition, nil for a partition of the
// producer's open transaction. It reads the published state and writes
// nothing.
func (c *Coordinator) VerifyPartitions(p Producer, partitions []TopicPartition) []error {
	errs := make([]error, len(partitions))
	m := c.snapshot(p.TransactionalID)
	closed := c.isClosed()
	for i, tp := range partitions {
		if closed {
			errs[i] = fmt.Errorf("verify %s for %q: %w", tp, p.TransactionalID, c.refuse)
			continue
		}
		errs[i] = verifyPublished(m, p, tp)
	}
	return errs
}

// AddOffsets adds a consumer group to the producer's transaction
// (AddOffsetsToTxn).
func (c *Coordinator) AddOffsets(ctx context.Context, p Producer, group string) error {
	if group == "" {
		return fmt.Errorf("empty group id: %w", ErrInvalidRequest)
	}
	return c.add(ctx, p, nil, group)
}

// OffsetsPartition is the __consumer_offsets partition of a group, as the
// coordinator records it for AddOffsetsToTxn.
func (c *Coordinator) OffsetsPartition(group string) TopicPartition {
	return TopicPartition{Topic: offsetsTopic, Partition: int32(PartitionFor(group, c.cfg.OffsetsTopicPartitions))}
}

// add makes partitions (and group, if not empty) participants of the
// producer's transaction, opening it if none is, and writes the new state.
func (c *Coordinator) add(ctx context.Context, p Producer, partitions []TopicPartition, group string) error {
	if p.TransactionalID == "" {
		return fmt.Errorf("empty transactional id: %w", ErrInvalidRequest)
	}
	if group != "" {
		partitions = append(slices.Clone(partitions), c.OffsetsPartition(group))
	}
	e, err := c.lockEntry(p.TransactionalID, nil)
	if err != nil {
		return err
	}
	if e == nil {
		return fmt.Errorf("transactional id %q unknown: %w", p.TransactionalID, ErrInvalidProducerIDMapping)
	}
	defer e.mu.Unlock()
	next, changed, err := e.meta.addParticipants(c.cfg.Now(), p.ProducerID, p.Epoch, partitions, group)
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
// state without locking. Errors: ErrInvalidProducerIDMapping,
// ErrProducerFenced, ErrInvalidTxnState.
func (c *Coordinator) VerifyPartition(p Producer, tp TopicPartition) error {
	if c.isClosed() {
		return fmt.Errorf("verify %s for %q: %w", tp, p.TransactionalID, c.refuse)
	}
	return verifyPublished(c.snapshot(p.TransactionalID), p, tp)
}

// verifyPublished is VerifyPartition against the published state m (nil:
// the id is unknown).
func verifyPublished(m *Metadata, p Producer, tp TopicPartition) error {
	if m == nil {
		return fmt.Errorf("transactional id %q unknown: %w", p.TransactionalID, ErrInvalidProducerIDMapping)
	}
	if err := m.checkProducer(p.ProducerID, p.Epoch); err != nil {
		return err
	}
	return m.verify(tp)
}
