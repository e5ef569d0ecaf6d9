package group

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch (key 9), versions 0–10 (v0, which read ZooKeeper in old
// Kafka, is answered like v1 from the same store). A null topic list (v2+) returns every committed offset of the
// group. An unknown group or uncommitted partition returns offset -1 with
// no error. v2+ carry a group-level error code; v5+ the leader epoch;
// v7+ RequireStable (a partition with a pending transactional commit
// answers UNSTABLE_OFFSET_COMMIT); v8+ batch several groups; v10 names
// topics by id. v9's member id and epoch apply to KIP-848 groups only and
// are ignored for classic groups.
func (c *Coordinator) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	requireStable := req.Version >= 7 && req.RequireStable
	if req.Version < 8 {
		var topics []fetchTopic
		if req.Topics != nil || req.Version < 2 {
			topics = make([]fetchTopic, 0, len(req.Topics))
			for _, topic := range req.Topics {
				topics = append(topics, fetchTopic{name: topic.Topic, partitions: topic.Partitions})
			}
		}
		code, fetched := c.fetchGroup(req.Group, topics, requireStable)
		if req.Version >= 2 {
			resp.ErrorCode = code
		}
		for _, topic := range fetched {
			responseTopic := kmsg.OffsetFetchResponseTopic{Topic: topic.name}
			for _, partition := range topic.partitions {
				responsePartition := kmsg.NewOffsetFetchResponseTopicPartition()
				responsePartition.Partition = partition.partition
				responsePartition.Offset = partition.value.Offset
				responsePartition.Metadata = &partition.value.Metadata
				responsePartition.ErrorCode = partition.errorCode
				if req.Version >= 5 {
					responsePartition.LeaderEpoch = partition.value.LeaderEpoch
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
	for _, requested := range req.Groups {
		resp.Groups = append(resp.Groups, c.fetchBatchedGroup(req.Version, requested, requireStable))
	}
	return resp
}

// fetchBatchedGroup answers one group of a v8+ request.
func (c *Coordinator) fetchBatchedGroup(version int16, requested kmsg.OffsetFetchRequestGroup, requireStable bool) kmsg.OffsetFetchResponseGroup {
	var topics []fetchTopic
	if requested.Topics != nil {
		topics = make([]fetchTopic, 0, len(requested.Topics))
		for _, topic := range requested.Topics {
			name := topic.Topic
			if version >= 10 {
				name, _ = c.topicName(topic.TopicID)
			}
			topics = append(topics, fetchTopic{name: name, id: topic.TopicID, partitions: topic.Partitions, unknownID: version >= 10 && name == ""})
		}
	}
	code, fetched := c.fetchGroup(requested.Group, topics, requireStable)
	group := kmsg.OffsetFetchResponseGroup{Group: requested.Group, ErrorCode: code}
	for _, topic := range fetched {
		responseTopic := kmsg.OffsetFetchResponseGroupTopic{Topic: topic.name, TopicID: topic.id}
		if version >= 10 && requested.Topics == nil {
			id, ok := c.topicID(topic.name)
			if !ok {
				continue // a topic without an id cannot be named in v10
			}
			responseTopic.TopicID = id
		}
		for _, partition := range topic.partitions {
			responsePartition := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			responsePartition.Partition = partition.partition
			responsePartition.Offset = partition.value.Offset
			responsePartition.LeaderEpoch = partition.value.LeaderEpoch
			responsePartition.Metadata = &partition.value.Metadata
			responsePartition.ErrorCode = partition.errorCode
			responseTopic.Partitions = append(responseTopic.Partitions, responsePartition)
		}
		group.Topics = append(group.Topics, responseTopic)
	}
	return group
}

// fetchTopic is one requested topic (or, in results, one answered topic).
type fetchTopic struct {
	name       string
	id         [16]byte
	unknownID  bool
	partitions []int32
}

type fetchedPartition struct {
	partition int32
	value     offsetValue
	errorCode int16
}

type fetchedTopic struct {
	name       string
	id         [16]byte
	partitions []fetchedPartition
}

// fetchGroup reads committed offsets: the requested partitions, or with
// topics == nil every committed offset of the group, sorted by topic and
// partition. It returns a group-level error code.
func (c *Coordinator) fetchGroup(groupID string, topics []fetchTopic, requireStable bool) (int16, []fetchedTopic) {
	missing := offsetValue{Offset: -1, LeaderEpoch: -1}
	g := c.lockGroup(groupID, false)
	if g == nil && c.isClosed() {
		return kerr.NotCoordinator.Code, nil
	}
	if g != nil {
		defer g.mu.Unlock()
	}
	if topics == nil {
		if g == nil {
			return 0, nil
		}
		return 0, g.allOffsets()
	}
	result := make([]fetchedTopic, 0, len(topics))
	for _, topic := range topics {
		answered := fetchedTopic{name: topic.name, id: topic.id}
		for _, partition := range topic.partitions {
			fetched := fetchedPartition{partition: partition, value: missing}
			key := topicPartition{Topic: topic.name, Partition: partition}
			switch {
			case topic.unknownID:
				fetched.errorCode = kerr.UnknownTopicID.Code
			case g == nil:
			case requireStable && g.hasPendingTxnOffset(key):
				fetched.errorCode = kerr.UnstableOffsetCommit.Code
			default:
				if entry, ok := g.offsets[key]; ok {
					fetched.value = entry.value
				}
			}
			answered.partitions = append(answered.partitions, fetched)
		}
		result = append(result, answered)
	}
	return 0, result
}

// allOffsets returns every committed offset, sorted. Called with g.mu held.
func (g *group) allOffsets() []fetchedTopic {
	keys := make([]topicPartition, 0, len(g.offsets))
	for key := range g.offsets {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b topicPartition) int {
		if order := strings.Compare(a.Topic, b.Topic); order != 0 {
			return order
		}
		return int(a.Partition) - int(b.Partition)
	})
	var result []fetchedTopic
	for _, key := range keys {
		if len(result) == 0 || result[len(result)-1].name != key.Topic {
			result = append(result, fetchedTopic{name: key.Topic})
		}
		last := &result[len(result)-1]
		last.partitions = append(last.partitions, fetchedPartition{partition: key.Partition, value: g.offsets[key].value})
	}
	return result
}

func (g *group) hasPendingTxnOffset(key topicPartition) bool {
	for _, offsets := range g.pendingTxn {
		if _, ok := offsets[key]; ok {
			return true
		}
	}
	return false
}
