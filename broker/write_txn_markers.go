package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// WriteTxnMarkers v0–1 is how a transaction coordinator tells a partition
// leader to end a producer's transaction there: for each marker and each
// of its partitions, a COMMIT or ABORT control batch carrying the
// coordinator epoch is appended ([partition.Partition.AppendMarker] closes the
// producer's open transaction, moves the last stable offset, and records
// an ABORT in the aborted-transaction index), and the answer waits until
// the marker is durable under log.fsync. The coordinator of this broker
// writes its markers through the same function (markerWriter), so a remote coordinator's request and the local one take
// one path.
//
// In a cluster (Broker.transactionsFor) requests come from the
// coordinators of other brokers too: a partition not led here answers
// NOT_LEADER_OR_FOLLOWER (the coordinator retries after the roles
// change), a marker waits until the ISR has it, and a marker for a
// partition of the replicated __consumer_offsets goes to the group shard
// leading it, answered once the producer's offsets are applied.
//
// Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION for a partition that
// does not exist (the coordinator then stops retrying it: the partition
// was deleted), TRANSACTION_COORDINATOR_FENCED for a marker from an older
// coordinator epoch, KAFKA_STORAGE_ERROR for a failed write. A marker
// older than the producer's epoch on the partition is stale and answered
// with success without being written. Markers for __consumer_offsets are
// not served here: this broker's coordinator completes group offsets
// through the group coordinator directly, so they get
// UNKNOWN_TOPIC_OR_PARTITION like any partition this broker does not hold.
func init() {
	register(wire.APIWriteTxnMarkers, 0, 1, kmsgHandler(handleWriteTxnMarkers))
}

func handleWriteTxnMarkers(c *connection, req *kmsg.WriteTxnMarkersRequest) kmsg.Response {
	// Authorization (authorizationRules): Alter or ClusterAction on the Cluster,
	// else every partition is CLUSTER_AUTHORIZATION_FAILED.
	if !c.authorizedCluster(kmsg.ACLOperationAlter) && !c.authorizedCluster(kmsg.ACLOperationClusterAction) {
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		for _, marker := range req.Markers {
			result := kmsg.NewWriteTxnMarkersResponseMarker()
			result.ProducerID = marker.ProducerID
			for _, topic := range marker.Topics {
				resultTopic := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				resultTopic.Topic = topic.Topic
				for _, index := range topic.Partitions {
					resultPartition := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					resultPartition.Partition, resultPartition.ErrorCode = index, errorCode(errClusterAuthorization)
					resultTopic.Partitions = append(resultTopic.Partitions, resultPartition)
				}
				result.Topics = append(result.Topics, resultTopic)
			}
			resp.Markers = append(resp.Markers, result)
		}
		return resp
	}
	return c.broker.writeTxnMarkers(c.ctx, req)
}

// writeTxnMarkers serves a WriteTxnMarkers request: it writes every marker
// and waits for each written one to be durable.
func (b *Broker) writeTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, marker := range req.Markers {
		result := kmsg.NewWriteTxnMarkersResponseMarker()
		result.ProducerID = marker.ProducerID
		for _, topic := range marker.Topics {
			resultTopic := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			resultTopic.Topic = topic.Topic
			for _, index := range topic.Partitions {
				err := b.writeMarker(ctx, topic.Topic, index, marker)
				resultPartition := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				resultPartition.Partition, resultPartition.ErrorCode = index, errorCode(err)
				if err != nil && ctx.Err() == nil {
					b.logger.Warn("transaction marker not written", "topic", topic.Topic, "partition", index,
						"producer_id", marker.ProducerID, "commit", marker.Committed, "error", err)
				}
				resultTopic.Partitions = append(resultTopic.Partitions, resultPartition)
			}
			result.Topics = append(result.Topics, resultTopic)
		}
		resp.Markers = append(resp.Markers, result)
	}
	return resp
}

// writeMarker appends one marker to one partition and waits for it to be
// durable.
func (b *Broker) writeMarker(ctx context.Context, topicName string, index int32, marker kmsg.WriteTxnMarkersRequestMarker) error {
	if topicName == group.OffsetsTopic && b.clusterGroups() {
		return b.completeOffsetsTxn(ctx, index, marker.ProducerID, marker.ProducerEpoch, marker.Committed)
	}
	t := b.topicByName(topicName)
	var p *topicPartition
	err := fmt.Errorf("%w: %s", errUnknownTopic, topicName)
	if t != nil {
		p, err = b.partitionOf(t, index)
	}
	if err != nil {
		if b.clusterGroups() && int(index) < len(b.topicRoles(topicName)) {
			// The partition exists in the cluster, with no replica here:
			// the coordinator's roles are stale, it must not count the
			// marker as done (UNKNOWN_TOPIC_OR_PARTITION means deleted).
			return fmt.Errorf("%w: no replica of %s-%d here", errNotLeader, topicName, index)
		}
		return err
	}
	offset, err := p.AppendMarker(marker.ProducerID, marker.ProducerEpoch, marker.CoordinatorEpoch, marker.Committed)
	if err != nil || offset < 0 {
		return err
	}
	if b.metrics != nil {
		b.metrics.MarkersWritten(1)
	}
	if p.Replicated() {
		// A replicated partition: the marker is answered once the ISR has
		// it, so a new leader cannot lack a marker the coordinator counted.
		minInsync := t.config.Load().minInsyncReplica
		if err := p.WaitReplicated(ctx, b.ctx.Done(), offset, minInsync, internalAppendTimeout); err != nil {
			return err
		}
	}
	return p.WaitDurable(ctx, offset)
}
