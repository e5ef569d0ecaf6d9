package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// WriteTxnMarkers v0–1 is how a transaction coordinator tells a partition
// leader to end a producer's transaction there: for each marker and each
// of its partitions, a COMMIT or ABORT control batch carrying the
// coordinator epoch is appended
// ([github.com/exactly-eos/exactly/broker/partition.Partition.AppendMarker]
// closes the producer's open transaction, moves the last stable offset,
// and records an ABORT in the aborted-transaction index), and the answer
// waits until the marker is durable under log.fsync. The handler decodes each marker
// and serves it with [Transactions.WriteMarkers], the broker's one marker
// path, which this broker's own coordinator calls directly too, so a
// remote coordinator's request and the local one take one path.
//
// In a cluster requests come from the coordinators of other brokers too:
// a partition not led here answers NOT_LEADER_OR_FOLLOWER (the coordinator
// retries after the roles change), a marker waits until the ISR has it,
// and a marker for a partition of the replicated __consumer_offsets goes
// to the group shard leading it, answered once the producer's offsets are
// applied.
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
	register(wire.APIWriteTxnMarkers, 0, 1, InReader, writeTxnMarkers)
}

func writeTxnMarkers(ctx context.Context, r *Request, req *kmsg.WriteTxnMarkersRequest) kmsg.Response {
	// Authorization: Alter or ClusterAction on the Cluster, else every
	// partition is CLUSTER_AUTHORIZATION_FAILED.
	authorized := r.AuthorizedCluster(kmsg.ACLOperationAlter) || r.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, marker := range req.Markers {
		partitions := markerPartitions(marker)
		var errs []error
		if authorized {
			errs = r.Transactions.WriteMarkers(ctx, marker.ProducerID, marker.ProducerEpoch, marker.CoordinatorEpoch, marker.Committed, partitions)
		} else {
			errs = make([]error, len(partitions))
			for i := range errs {
				errs[i] = errcode.ErrClusterAuthorization
			}
		}
		resp.Markers = append(resp.Markers, encodeMarkerResults(marker, errs))
	}
	return resp
}

// markerPartitions are the partitions of one marker of the request, in the
// request's order.
func markerPartitions(marker kmsg.WriteTxnMarkersRequestMarker) []txn.TopicPartition {
	var partitions []txn.TopicPartition
	for _, topic := range marker.Topics {
		for _, index := range topic.Partitions {
			partitions = append(partitions, txn.TopicPartition{Topic: topic.Topic, Partition: index})
		}
	}
	return partitions
}

// encodeMarkerResults is the answer to marker: errs are the results of
// its partitions in the order markerPartitions listed them.
func encodeMarkerResults(marker kmsg.WriteTxnMarkersRequestMarker, errs []error) kmsg.WriteTxnMarkersResponseMarker {
	result := kmsg.NewWriteTxnMarkersResponseMarker()
	result.ProducerID = marker.ProducerID
	next := 0
	for _, topic := range marker.Topics {
		resultTopic := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
		resultTopic.Topic = topic.Topic
		for _, index := range topic.Partitions {
			resultPartition := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
			resultPartition.Partition, resultPartition.ErrorCode = index, errcode.Of(errs[next])
			next++
			resultTopic.Partitions = append(resultTopic.Partitions, resultPartition)
		}
		result.Topics = append(result.Topics, resultTopic)
	}
	return result
}
