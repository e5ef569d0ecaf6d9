package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// OffsetForLeaderEpoch v2–4 tells a client (or a follower truncating its
// log, replicaFetcher.truncate) where a leader epoch ended.
// CurrentLeaderEpoch is checked as in Fetch (FENCED_LEADER_EPOCH /
// UNKNOWN_LEADER_EPOCH), and only the partition's leader answers
// (NOT_LEADER_OR_FOLLOWER elsewhere). Without replication every partition
// has had one epoch (0) since it was created, so epoch 0 ends at the log
// end offset, and a later epoch is unknown (-1, -1). A replicated partition
// answers from its leader-epoch checkpoint ([partition.Partition.EndOffsetOfEpoch],
// Kafka's semantics): the current epoch ends at the log end, an older one
// where the next higher epoch starts, and an unknown one is answered for
// the largest epoch below it.
func init() {
	register(wire.APIOffsetForLeaderEpoch, 2, 4, kmsgHandler(handleOffsetForLeaderEpoch))
}

func handleOffsetForLeaderEpoch(c *connection, req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// Authorization (authorizationRules): ClusterAction on the Cluster
	// (brokers) covers every topic; otherwise each topic needs Describe.
	clusterAction := c.authorizedCluster(kmsg.ACLOperationClusterAction)
	for _, rt := range req.Topics {
		answered := kmsg.NewOffsetForLeaderEpochResponseTopic()
		answered.Topic = rt.Topic
		t := b.topicByName(rt.Topic)
		authorized := clusterAction || c.authorizedTopic(kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			result := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			result.Partition = rp.Partition
			result.LeaderEpoch, result.EndOffset = -1, -1
			var p *topicPartition
			err := error(nil)
			if !authorized {
				err = errTopicAuthorization
			} else if t == nil {
				err = fmt.Errorf("%w: %s", errUnknownTopic, rt.Topic)
			}
			if err == nil {
				p, err = b.partitionOf(t, rp.Partition)
			}
			if err == nil {
				err = p.CheckLeader(rp.CurrentLeaderEpoch)
			}
			if err == nil {
				result.LeaderEpoch, result.EndOffset = p.EndOffsetOfEpoch(rp.LeaderEpoch)
			}
			result.ErrorCode = errorCode(err)
			answered.Partitions = append(answered.Partitions, result)
		}
		resp.Topics = append(resp.Topics, answered)
	}
	return resp
}
