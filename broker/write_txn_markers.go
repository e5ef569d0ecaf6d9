package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// WriteTxnMarkers v0–1 is how a transaction coordinator tells a partition
// leader to end a producer's transaction there: for each marker and each
// of its partitions, a COMMIT or ABORT control batch carrying the
// coordinator epoch is appended ([partition.Partition.AppendMarker] closes the
// producer's open transaction, moves the last stable offset, and records
// an ABORT in the aborted-transaction index), and the answer waits until
// the marker is durable under log.fsync. The handler decodes each marker
// into a [markerWrite] and serves it with [Broker.writeMarkers], the
// function this broker's own coordinator calls directly, so a remote
// coordinator's request and the local one take one path.
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
	authorized := c.authorizedCluster(kmsg.ACLOperationAlter) || c.authorizedCluster(kmsg.ACLOperationClusterAction)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, marker := range req.Markers {
		m := decodeMarkerWrite(marker)
		var errs []error
		if authorized {
			errs = c.broker.writeMarkers(c.ctx, m)
		} else {
			errs = make([]error, len(m.partitions))
			for i := range errs {
				errs[i] = errClusterAuthorization
			}
		}
		resp.Markers = append(resp.Markers, encodeMarkerResults(marker, errs))
	}
	return resp
}

// decodeMarkerWrite is one marker of the request, its partitions in the
// request's order.
func decodeMarkerWrite(marker kmsg.WriteTxnMarkersRequestMarker) markerWrite {
	m := markerWrite{
		producerID:       marker.ProducerID,
		producerEpoch:    marker.ProducerEpoch,
		coordinatorEpoch: marker.CoordinatorEpoch,
		commit:           marker.Committed,
	}
	for _, topic := range marker.Topics {
		for _, index := range topic.Partitions {
			m.partitions = append(m.partitions, txn.TopicPartition{Topic: topic.Topic, Partition: index})
		}
	}
	return m
}

// encodeMarkerResults is the answer to marker: errs are the results of
// its partitions in the order decodeMarkerWrite listed them.
func encodeMarkerResults(marker kmsg.WriteTxnMarkersRequestMarker, errs []error) kmsg.WriteTxnMarkersResponseMarker {
	result := kmsg.NewWriteTxnMarkersResponseMarker()
	result.ProducerID = marker.ProducerID
	next := 0
	for _, topic := range marker.Topics {
		resultTopic := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
		resultTopic.Topic = topic.Topic
		for _, index := range topic.Partitions {
			resultPartition := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
			resultPartition.Partition, resultPartition.ErrorCode = index, errorCode(errs[next])
			next++
			resultTopic.Partitions = append(resultTopic.Partitions, resultPartition)
		}
		result.Topics = append(result.Topics, resultTopic)
	}
	return result
}
