package api

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// DescribeTopicPartitions v0 (API 75, KIP-966) describes topics and their
// partitions — leader, leader epoch, replicas, ISR, offline replicas — as
// Metadata does, in pages: topics in name order from the request's cursor
// (a topic and a first partition), at most ResponsePartitionLimit
// partitions (2000 when 0 or more), with the cursor to continue from when
// the page is full. Kafka's admin client (3.8+) and kafka-topics.sh
// --describe use it. No topics named means every topic the principal may
// describe; a named one it may not is TOPIC_AUTHORIZATION_FAILED, an
// unknown one UNKNOWN_TOPIC_OR_PARTITION. Each topic carries its
// authorized operations (KIP-430). The eligible leader replicas of
// KIP-966's ELR are not kept: the two ELR lists are empty.
func init() {
	register(wire.APIDescribeTopicPartitions, 0, 0, InReader, describeTopicPartitions)
}

// describeTopicPartitionsLimit is Kafka's
// max.request.partition.size.limit default, the most partitions one
// answer carries.
const describeTopicPartitionsLimit = 2000

func describeTopicPartitions(_ context.Context, r *Request, req *kmsg.DescribeTopicPartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	limit := int(req.ResponsePartitionLimit)
	if limit <= 0 || limit > describeTopicPartitionsLimit {
		limit = describeTopicPartitionsLimit
	}
	var topics []kmsg.MetadataResponseTopic
	if len(req.Topics) == 0 {
		topics = describableTopics(r, r.Cluster.AllTopics())
	} else {
		names := make([]string, 0, len(req.Topics))
		for _, topic := range req.Topics {
			names = append(names, topic.Topic)
		}
		slices.Sort(names)
		for _, name := range slices.Compact(names) {
			if !r.AuthorizedTopic(kmsg.ACLOperationDescribe, name) {
				refused := kmsg.NewMetadataResponseTopic()
				refused.Topic, refused.ErrorCode = kmsg.StringPtr(name), kerr.TopicAuthorizationFailed.Code
				topics = append(topics, refused)
				continue
			}
			topics = append(topics, r.Cluster.Topic(name, false))
		}
	}
	// In name order: AllTopics sorts, and the named ones were sorted.
	cursorTopic, cursorPartition := "", int32(0)
	if req.Cursor != nil {
		cursorTopic, cursorPartition = req.Cursor.Topic, req.Cursor.Partition
	}
	described := 0
	for _, topic := range topics {
		name := topicName(topic)
		if name < cursorTopic {
			continue
		}
		answered := kmsg.NewDescribeTopicPartitionsResponseTopic()
		answered.Topic, answered.TopicID, answered.IsInternal, answered.ErrorCode = kmsg.StringPtr(name), topic.TopicID, topic.IsInternal, topic.ErrorCode
		if topic.ErrorCode == 0 {
			answered.AuthorizedOperations = authorizedOperations(r, kmsg.ACLResourceTypeTopic, name, topicOperations)
		}
		for _, partition := range topic.Partitions {
			if name == cursorTopic && partition.Partition < cursorPartition {
				continue
			}
			if described == limit {
				next := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
				next.Topic, next.Partition = name, partition.Partition
				resp.NextCursor = &next
				break
			}
			p := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			p.ErrorCode, p.Partition, p.LeaderID, p.LeaderEpoch = partition.ErrorCode, partition.Partition, partition.Leader, partition.LeaderEpoch
			p.Replicas, p.ISR, p.OfflineReplicas = partition.Replicas, partition.ISR, partition.OfflineReplicas
			p.EligibleLeaderReplicas, p.LastKnownELR = []int32{}, []int32{}
			answered.Partitions = append(answered.Partitions, p)
			described++
		}
		if len(answered.Partitions) > 0 || topic.ErrorCode != 0 || len(topic.Partitions) == 0 {
			resp.Topics = append(resp.Topics, answered)
		}
		if resp.NextCursor != nil {
			break
		}
	}
	return resp
}

// topicName is a described topic's name ("" when it has none).
func topicName(topic kmsg.MetadataResponseTopic) string {
	if topic.Topic == nil {
		return ""
	}
	return *topic.Topic
}
