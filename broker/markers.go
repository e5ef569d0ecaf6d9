package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
)

// Transaction markers: a COMMIT or ABORT control batch that ends a
// producer's transaction on one partition. [Broker.writeMarkers] is the
// one core every writer calls with a typed [markerWrite]: the
// WriteTxnMarkers handler (a remote coordinator's request, decoded from
// and encoded back to the wire there), and [Broker.writeMarkersToLeaders]
// (this broker's coordinator shards) for the partitions led here; only the request to another broker
// ([Broker.remoteWriteMarkers]) is built as a Kafka message. Results are
// Go errors per partition; errorCode maps them to Kafka codes where an
// answer goes out on the wire.

// markerWrite is one transaction marker for some of a producer's
// partitions.
type markerWrite struct {
	producerID    int64
	producerEpoch int16
	// coordinatorEpoch fences a stale coordinator: a partition refuses a
	// marker older than the last coordinator epoch it saw.
	coordinatorEpoch int32
	// commit says COMMIT; false is ABORT.
	commit     bool
	partitions []txn.TopicPartition
}

// writeMarkers writes m to each of its partitions, in order, and waits
// for each written one to be durable (and, replicated, in the ISR). The
// result of m.partitions[i] is errs[i]: nil once the partition has the
// marker or the marker was stale (older than the producer's epoch there,
// answered without being written).
func (b *Broker) writeMarkers(ctx context.Context, m markerWrite) (errs []error) {
	errs = make([]error, len(m.partitions))
	for i, tp := range m.partitions {
		err := b.writeMarker(ctx, tp, m)
		if err != nil && ctx.Err() == nil {
			b.logger.Warn("transaction marker not written", "topic", tp.Topic, "partition", tp.Partition,
				"producer_id", m.producerID, "commit", m.commit, "error", err)
		}
		errs[i] = err
	}
	return errs
}

// writeMarker appends m to partition tp and waits for it to be durable.
func (b *Broker) writeMarker(ctx context.Context, tp txn.TopicPartition, m markerWrite) error {
	topicName, index := tp.Topic, tp.Partition
	if topicName == group.OffsetsTopic {
		return b.completeOffsetsTxn(ctx, index, m.producerID, m.producerEpoch, m.commit)
	}
	t := b.topicByName(topicName)
	var p *topicPartition
	err := fmt.Errorf("%w: %s", errUnknownTopic, topicName)
	if t != nil {
		p, err = b.partitionOf(t, index)
	}
	if err != nil {
		if int(index) < len(b.topicRoles(topicName)) {
			// The partition exists in the cluster, with no replica here:
			// the coordinator's roles are stale, it must not count the
			// marker as done (UNKNOWN_TOPIC_OR_PARTITION means deleted).
			return fmt.Errorf("%w: no replica of %s here", errNotLeader, tp)
		}
		return err
	}
	offset, err := p.AppendMarker(m.producerID, m.producerEpoch, m.coordinatorEpoch, m.commit)
	if err != nil || offset < 0 {
		return err
	}
	if b.metrics != nil {
		b.metrics.MarkersWritten(1)
	}
	// The marker is answered once the ISR has it, so a new leader cannot
	// lack a marker the coordinator counted.
	minInsync := t.config.Load().minInsyncReplica
	if err := p.WaitReplicated(ctx, b.ctx.Done(), offset, minInsync, internalAppendTimeout); err != nil {
		return err
	}
	return p.WaitDurable(ctx, offset)
}

// markerPartitionGone reports whether a marker's error says its partition
// no longer exists here, although this broker's view named it the leader
// (the topic was deleted in between): the coordinator counts that marker
// as done (the partition's data is gone with it), as Kafka does. Another
// leader's UNKNOWN_TOPIC_OR_PARTITION is not this error
// ([Broker.remoteWriteMarkers] retries it): that broker's view may lag.
func markerPartitionGone(err error) bool { return errors.Is(err, errUnknownTopic) }

// markerFailures gathers the partitions of a [markerWrite] still missing
// their marker into the [txn.MarkerError] the coordinator retries them by.
type markerFailures struct {
	producerID int64
	failed     []txn.TopicPartition
	first      error
}

// add records the result of one partition: nothing when written or gone.
func (f *markerFailures) add(tp txn.TopicPartition, err error) {
	if err == nil || markerPartitionGone(err) {
		return
	}
	f.failed = append(f.failed, tp)
	if f.first == nil {
		f.first = fmt.Errorf("marker for producer %d on %s: %w", f.producerID, tp, err)
	}
}

// addAll records the results of writeMarkers (or remoteWriteMarkers) for
// the partitions they were given.
func (f *markerFailures) addAll(partitions []txn.TopicPartition, errs []error) {
	for i, tp := range partitions {
		f.add(tp, errs[i])
	}
}

// err is nil when every partition has its marker, else a *txn.MarkerError
// naming those that do not.
func (f *markerFailures) err() error {
	if len(f.failed) == 0 {
		return nil
	}
	return &txn.MarkerError{Failed: f.failed, Err: f.first}
}

// writeMarkersToLeaders writes m to each partition's current leader in a
// cluster: through [Broker.writeMarkers] for those led here, by a
// WriteTxnMarkers request ([Broker.remoteWriteMarkers]) for the others.
// Partitions that no longer exist count as done. A failure is a
// *txn.MarkerError naming the partitions still to do (the coordinator
// retries them, after the roles moved on if need be).
func (b *Broker) writeMarkersToLeaders(ctx context.Context, m markerWrite) error {
	failures := markerFailures{producerID: m.producerID}
	byLeader := map[int32][]txn.TopicPartition{}
	for _, tp := range m.partitions {
		leader := b.partitionLeader(tp.Topic, tp.Partition)
		if leader < 0 {
			if b.topicRoles(tp.Topic) == nil {
				continue // the topic was deleted: its data is gone with it
			}
			failures.add(tp, fmt.Errorf("%w: no leader", errNotLeader))
			continue
		}
		byLeader[leader] = append(byLeader[leader], tp)
	}
	for leader, partitions := range byLeader {
		part := m
		part.partitions = partitions
		if leader == b.nodeID {
			failures.addAll(partitions, b.writeMarkers(ctx, part))
		} else {
			failures.addAll(partitions, b.remoteWriteMarkers(ctx, leader, part))
		}
	}
	return failures.err()
}
