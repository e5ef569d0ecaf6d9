package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// OffsetForLeaderEpoch v2–4 tells a client (or a follower truncating its
// log, the broker's replica fetcher) where a leader epoch ended.
// CurrentLeaderEpoch is checked as in Fetch (FENCED_LEADER_EPOCH /
// UNKNOWN_LEADER_EPOCH), and only the partition's leader answers
// (NOT_LEADER_OR_FOLLOWER elsewhere). Without replication every partition
// has had one epoch (0) since it was created, so epoch 0 ends at the log
// end offset, and a later epoch is unknown (-1, -1). A replicated partition
// answers from its leader-epoch checkpoint ([Topics.EndOffsetOfEpoch],
// Kafka's semantics): the current epoch ends at the log end, an older one
// where the next higher epoch starts, and an unknown one is answered for
// the largest epoch below it.
func init() {
	register(wire.APIOffsetForLeaderEpoch, 2, 4, InReader, offsetForLeaderEpoch)
}

func offsetForLeaderEpoch(_ context.Context, r *Request, req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// Authorization: ClusterAction on the Cluster (brokers) covers every
	// topic; otherwise each topic needs Describe.
	clusterAction := r.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	for _, rt := range req.Topics {
		answered := kmsg.NewOffsetForLeaderEpochResponseTopic()
		answered.Topic = rt.Topic
		authorized := clusterAction || r.AuthorizedTopic(kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			result := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			result.Partition = rp.Partition
			result.LeaderEpoch, result.EndOffset = -1, -1
			err := error(errcode.ErrTopicAuthorization)
			if authorized {
				var epoch int32
				var end int64
				epoch, end, err = r.Topics.EndOffsetOfEpoch(rt.Topic, rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch)
				if err == nil {
					result.LeaderEpoch, result.EndOffset = epoch, end
				}
			}
			result.ErrorCode = errcode.Of(err)
			answered.Partitions = append(answered.Partitions, result)
		}
		resp.Topics = append(resp.Topics, answered)
	}
	return resp
}
