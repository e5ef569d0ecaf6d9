package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// OffsetCommit v0–10 stores committed offsets in __consumer_offsets and
// answers once they are durable under log.fsync. It runs in the reader
// goroutine so a later OffsetFetch on the same connection sees the commit.
//
// Versions: members commit with their generation and member id, checked
// against the group (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID); v0 has
// neither and is always a "simple" commit (generation -1, no member id),
// allowed only while the group has no members. v2–v4's retention time is
// ignored (offsets expire as Kafka 2.1+ does, offsets.retention after the
// group empties); v6+ carry the leader epoch; v7+ the instance id; v10
// names topics by id.
func init() {
	register(wire.APIOffsetCommit, 0, 10, InReader, offsetCommit)
}

func offsetCommit(ctx context.Context, r *Request, req *kmsg.OffsetCommitRequest) kmsg.Response {
	commit := group.CommitRequest{
		Group:      req.Group,
		Generation: req.Generation,
		MemberID:   req.MemberID,
		InstanceID: req.InstanceID,
		ByTopicID:  req.Version >= 10,
		// Consumer-protocol members must commit with v9+ (KIP-848).
		LegacyVersion: req.Version < 9,
	}
	if req.Version < 1 {
		commit.Generation, commit.MemberID = -1, ""
	}
	if req.Version < 7 {
		commit.InstanceID = nil
	}
	// Authorization (the broker's authorizationRules): Read on the group,
	// or every partition fails; Read on each topic, or its partitions fail
	// and are not committed.
	groupAuthorized := r.AuthorizedGroup(kmsg.ACLOperationRead, req.Group)
	refused := make([]error, len(req.Topics))
	for i, topic := range req.Topics {
		switch {
		case !groupAuthorized:
			refused[i] = errcode.ErrGroupAuthorization
		case r.TopicRefused(kmsg.ACLOperationRead, topic.Topic, topic.TopicID, commit.ByTopicID):
			refused[i] = errcode.ErrTopicAuthorization
		}
	}
	var committedIndex []int // request topic index of each commit.Topics entry
	for i, topic := range req.Topics {
		if refused[i] != nil {
			continue
		}
		committedIndex = append(committedIndex, i)
		committed := group.CommitTopic{Name: topic.Topic, ID: topic.TopicID}
		for _, partition := range topic.Partitions {
			leaderEpoch := partition.LeaderEpoch
			if req.Version < 6 {
				leaderEpoch = -1
			}
			committed.Partitions = append(committed.Partitions, group.CommitPartition{
				Partition: partition.Partition, Offset: partition.Offset, LeaderEpoch: leaderEpoch, Metadata: partition.Metadata,
			})
		}
		commit.Topics = append(commit.Topics, committed)
	}
	var errs [][]error
	if len(commit.Topics) > 0 || len(req.Topics) == 0 {
		errs = r.Groups.For(commit.Group).CommitOffsets(ctx, commit)
		countOffsetsCommitted(r, errs)
	}
	partitionErrs := make([][]error, len(req.Topics))
	for k, i := range committedIndex {
		partitionErrs[i] = errs[k]
	}
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = req.Version
	for i, topic := range req.Topics {
		responseTopic := kmsg.OffsetCommitResponseTopic{Topic: topic.Topic, TopicID: topic.TopicID}
		for j, partition := range topic.Partitions {
			err := refused[i]
			if err == nil {
				err = partitionErrs[i][j]
			}
			responseTopic.Partitions = append(responseTopic.Partitions, kmsg.OffsetCommitResponseTopicPartition{
				Partition: partition.Partition, ErrorCode: errcode.Of(err),
			})
		}
		resp.Topics = append(resp.Topics, responseTopic)
	}
	return resp
}

// countOffsetsCommitted counts the partitions an OffsetCommit or
// TxnOffsetCommit got accepted (a nil error each).
func countOffsetsCommitted(r *Request, errs [][]error) {
	if r.Metrics == nil {
		return
	}
	accepted := 0
	for _, topic := range errs {
		for _, err := range topic {
			if err == nil {
				accepted++
			}
		}
	}
	r.Metrics.OffsetsCommitted(accepted)
}
