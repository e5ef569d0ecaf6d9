package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
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
	register(wire.APIOffsetFetch, 0, 10, InReader, offsetFetch)
}

func offsetFetch(_ context.Context, r *Request, req *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	requireStable := req.Version >= 7 && req.RequireStable
	if req.Version >= 8 {
		for _, requested := range req.Groups {
			if !r.AuthorizedGroup(kmsg.ACLOperationDescribe, requested.Group) {
				resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: requested.Group, ErrorCode: errcode.Of(errcode.ErrGroupAuthorization)})
				continue
			}
			answered := fetchBatchedGroup(r.Groups.For(requested.Group), req.Version, requested, requireStable)
			answered.Topics = describableOffsetTopics(r, answered.Topics, requested.Topics != nil,
				func(t kmsg.OffsetFetchResponseGroupTopic) (string, [16]byte) { return t.Topic, t.TopicID },
				func(t *kmsg.OffsetFetchResponseGroupTopic) {
					for i := range t.Partitions {
						p := &t.Partitions[i]
						p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, new(string), errcode.Of(errcode.ErrTopicAuthorization)
					}
				}, req.Version >= 10)
			resp.Groups = append(resp.Groups, answered)
		}
		return resp
	}
	if !r.AuthorizedGroup(kmsg.ACLOperationDescribe, req.Group) {
		return offsetFetchGroupRefused(req)
	}
	fetch := group.FetchRequest{Group: req.Group, RequireStable: requireStable}
	if req.Topics != nil || req.Version < 2 {
		fetch.Topics = make([]group.FetchTopic, 0, len(req.Topics))
		for _, topic := range req.Topics {
			fetch.Topics = append(fetch.Topics, group.FetchTopic{Name: topic.Topic, Partitions: topic.Partitions})
		}
	}
	topics, err := r.Groups.For(fetch.Group).FetchOffsets(fetch)
	code := errcode.Of(err)
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
			responsePartition.ErrorCode = errcode.Of(partition.Err)
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
	resp.Topics = describableOffsetTopics(r, resp.Topics, fetch.Topics != nil,
		func(t kmsg.OffsetFetchResponseTopic) (string, [16]byte) { return t.Topic, [16]byte{} },
		func(t *kmsg.OffsetFetchResponseTopic) {
			for i := range t.Partitions {
				p := &t.Partitions[i]
				p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, new(string), errcode.Of(errcode.ErrTopicAuthorization)
			}
		}, false)
	return resp
}

// offsetFetchGroupRefused answers a v0–7 OffsetFetch of a group the
// principal may not Describe: GROUP_AUTHORIZATION_FAILED at the top (v2+)
// and on every requested partition, as Kafka's error response has it.
func offsetFetchGroupRefused(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	code := errcode.Of(errcode.ErrGroupAuthorization)
	if req.Version >= 2 {
		resp.ErrorCode = code
	}
	for _, topic := range req.Topics {
		responseTopic := kmsg.OffsetFetchResponseTopic{Topic: topic.Topic}
		for _, index := range topic.Partitions {
			p := kmsg.NewOffsetFetchResponseTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = index, -1, -1, new(string), code
			responseTopic.Partitions = append(responseTopic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, responseTopic)
	}
	return resp
}

// describableOffsetTopics applies Kafka's topic authorization to an
// OffsetFetch answer: offsets of topics the principal may not Describe are
// not disclosed. A topic the request named gets refuse (every partition
// TOPIC_AUTHORIZATION_FAILED); when the request asked for all topics, the
// topic is left out.
func describableOffsetTopics[T any](r *Request, topics []T, named bool, key func(T) (string, [16]byte), refuse func(*T), byID bool) []T {
	if !r.Auth.Enabled() {
		return topics
	}
	out := topics[:0]
	for _, t := range topics {
		name, id := key(t)
		if !r.TopicRefused(kmsg.ACLOperationDescribe, name, id, byID) {
			out = append(out, t)
			continue
		}
		if named {
			refuse(&t)
			out = append(out, t)
		}
	}
	return out
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
	answered := kmsg.OffsetFetchResponseGroup{Group: requested.Group, ErrorCode: errcode.Of(err)}
	for _, topic := range topics {
		responseTopic := kmsg.OffsetFetchResponseGroupTopic{Topic: topic.Name, TopicID: topic.ID}
		for _, partition := range topic.Partitions {
			responsePartition := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			responsePartition.Partition = partition.Partition
			responsePartition.Offset = partition.Offset
			responsePartition.LeaderEpoch = partition.LeaderEpoch
			metadata := partition.Metadata
			responsePartition.Metadata = &metadata
			responsePartition.ErrorCode = errcode.Of(partition.Err)
			responseTopic.Partitions = append(responseTopic.Partitions, responsePartition)
		}
		answered.Topics = append(answered.Topics, responseTopic)
	}
	return answered
}
