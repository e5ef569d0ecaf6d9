package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// OffsetFetch v0–10 returns committed offsets. An unknown group or
// uncommitted partition returns offset -1 with no error.
//
// Versions: v0, which read ZooKeeper in old Kafka, is answered like v1
// from the same store. A null topic list (v2+) returns every committed
// offset of the group. v2+ carry a group-level error code (before, each
// partition carries it); v5+ the leader epoch; v7+ RequireStable (a
// partition with a pending transactional commit answers
// UNSTABLE_OFFSET_COMMIT); v8+ batch several groups; v10 names topics by
// id. v9's member id and epoch are checked for consumer-protocol (KIP-848)
// groups (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH) and ignored for classic
// groups.
func init() {
	register(wire.APIOffsetFetch, 0, 10, groupHandler(inReader, handleOffsetFetch))
}

func handleOffsetFetch(_ context.Context, c *connection, req *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	requireStable := req.Version >= 7 && req.RequireStable
	if req.Version >= 8 {
		for _, requested := range req.Groups {
			resp.Groups = append(resp.Groups, fetchBatchedGroup(c.broker.groupsFor(requested.Group), req.Version, requested, requireStable))
		}
		return resp
	}
	fetch := group.FetchRequest{Group: req.Group, RequireStable: requireStable}
	if req.Topics != nil || req.Version < 2 {
		fetch.Topics = make([]group.FetchTopic, 0, len(req.Topics))
		for _, topic := range req.Topics {
			fetch.Topics = append(fetch.Topics, group.FetchTopic{Name: topic.Topic, Partitions: topic.Partitions})
		}
	}
	topics, err := c.broker.groupsFor(fetch.Group).FetchOffsets(fetch)
	code := errorCode(err)
	if req.Version >= 2 {
		resp.ErrorCode = code
	}
	for _, topic := range topics {
		responseTopic := kmsg.OffsetFetchResponseTopic{Topic: topic.Name}
		for _, partition := range topic.Partitions {
			responsePartition := kmsg.NewOffsetFetchResponseTopicPartition()
			responsePartition.Partition = partition.Partition
			responsePartition.Offset = partition.Offset
			metadata := partition.Metadata
			responsePartition.Metadata = &metadata
			responsePartition.ErrorCode = errorCode(partition.Err)
			if req.Version >= 5 {
				responsePartition.LeaderEpoch = partition.LeaderEpoch
			}
			if req.Version < 2 && code != 0 {
				responsePartition.ErrorCode = code
			}
			responseTopic.Partitions = append(responseTopic.Partitions, responsePartition)
		}
		resp.Topics = append(resp.Topics, responseTopic)
	}
	return resp
}

// fetchBatchedGroup answers one group of a v8+ request.
func fetchBatchedGroup(groups *group.Coordinator, version int16, requested kmsg.OffsetFetchRequestGroup, requireStable bool) kmsg.OffsetFetchResponseGroup {
	fetch := group.FetchRequest{Group: requested.Group, ByTopicID: version >= 10, RequireStable: requireStable, MemberEpoch: -1}
	if version >= 9 { // KIP-848: the fetching member of a consumer-protocol group
		fetch.MemberID, fetch.MemberEpoch = requested.MemberID, requested.MemberEpoch
	}
	if requested.Topics != nil {
		fetch.Topics = make([]group.FetchTopic, 0, len(requested.Topics))
		for _, topic := range requested.Topics {
			fetch.Topics = append(fetch.Topics, group.FetchTopic{Name: topic.Topic, ID: topic.TopicID, Partitions: topic.Partitions})
		}
	}
	topics, err := groups.FetchOffsets(fetch)
	answered := kmsg.OffsetFetchResponseGroup{Group: requested.Group, ErrorCode: errorCode(err)}
	for _, topic := range topics {
		responseTopic := kmsg.OffsetFetchResponseGroupTopic{Topic: topic.Name, TopicID: topic.ID}
		for _, partition := range topic.Partitions {
			responsePartition := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			responsePartition.Partition = partition.Partition
			responsePartition.Offset = partition.Offset
			responsePartition.LeaderEpoch = partition.LeaderEpoch
			metadata := partition.Metadata
			responsePartition.Metadata = &metadata
			responsePartition.ErrorCode = errorCode(partition.Err)
			responseTopic.Partitions = append(responseTopic.Partitions, responsePartition)
		}
		answered.Topics = append(answered.Topics, responseTopic)
	}
	return answered
}
