package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// OffsetForLeaderEpoch v2–4 tells a client where a leader epoch ended.
// Every partition has had one epoch (0) since it was created, so epoch 0
// ends at the log end offset, and a later epoch is unknown (-1, -1).
// CurrentLeaderEpoch is checked as in Fetch (FENCED_LEADER_EPOCH /
// UNKNOWN_LEADER_EPOCH).
func init() {
	register(wire.APIOffsetForLeaderEpoch, 2, 4, kmsgHandler(handleOffsetForLeaderEpoch))
}

func handleOffsetForLeaderEpoch(c *connection, req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		answered := kmsg.NewOffsetForLeaderEpochResponseTopic()
		answered.Topic = rt.Topic
		t := b.topicByName(rt.Topic)
		for _, rp := range rt.Partitions {
			result := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			result.Partition = rp.Partition
			result.LeaderEpoch, result.EndOffset = -1, -1
			err := checkLeaderEpoch(rp.CurrentLeaderEpoch)
			var p *partition
			if err == nil && t == nil {
				err = fmt.Errorf("%w: %s", errUnknownTopic, rt.Topic)
			}
			if err == nil {
				p, err = b.partitionOf(t, rp.Partition)
			}
			if err == nil && rp.LeaderEpoch <= leaderEpoch && rp.LeaderEpoch >= 0 {
				result.LeaderEpoch, result.EndOffset = leaderEpoch, p.log.LogEndOffset()
			}
			result.ErrorCode = errorCode(err)
			answered.Partitions = append(answered.Partitions, result)
		}
		resp.Topics = append(resp.Topics, answered)
	}
	return resp
}
