package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// ListOffsets v1–10 answers, per partition: latest (-1: the high
// watermark, or under isolation level read_committed (v2+) the last stable
// offset),
// earliest (-2) and earliest-local (-4, the log start offset), max
// timestamp (-3, v7+: the last offset of the first batch holding the
// largest timestamp, found by scanning batch headers), and a timestamp ≥ 0
// (the first batch whose max timestamp is at least it; offset -1 when
// none). Offsets are batch-granular: batches are never decompressed.
// Only a partition's leader answers (NOT_LEADER_OR_FOLLOWER elsewhere),
// with the leader-epoch checks of Fetch ([Topics.ListOffset]).
func init() {
	register(wire.APIListOffsets, 1, 10, InReader, listOffsets)
}

// IsolationReadCommitted is the read_committed isolation level of
// ListOffsets and Fetch.
const IsolationReadCommitted = 1

func listOffsets(_ context.Context, r *Request, req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	readCommitted := req.IsolationLevel == IsolationReadCommitted
	for _, rt := range req.Topics {
		listed := kmsg.NewListOffsetsResponseTopic()
		listed.Topic = rt.Topic
		authorized := r.AuthorizedTopic(kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			result := kmsg.NewListOffsetsResponseTopicPartition()
			result.Partition = rp.Partition
			offset, timestamp, epoch, err := int64(0), int64(0), int32(0), error(errcode.ErrTopicAuthorization)
			if authorized {
				offset, timestamp, epoch, err = r.Topics.ListOffset(rt.Topic, rp, req.Version, readCommitted)
			}
			result.ErrorCode = errcode.Of(err)
			result.Offset, result.Timestamp, result.LeaderEpoch = -1, -1, -1
			if err == nil {
				result.Offset, result.Timestamp = offset, timestamp
				if offset >= 0 {
					result.LeaderEpoch = epoch
				}
			}
			listed.Partitions = append(listed.Partitions, result)
		}
		resp.Topics = append(resp.Topics, listed)
	}
	return resp
}
