package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

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
// with the leader-epoch checks of Fetch.
func init() {
	register(wire.APIListOffsets, 1, 10, kmsgHandler(handleListOffsets))
}

// Special timestamps of ListOffsets.
const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
)

func handleListOffsets(c *connection, req *kmsg.ListOffsetsRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		listed := kmsg.NewListOffsetsResponseTopic()
		listed.Topic = rt.Topic
		t := b.topicByName(rt.Topic)
		authorized := c.authorizedTopic(kmsg.ACLOperationDescribe, rt.Topic) // authorizationRules
		for _, rp := range rt.Partitions {
			result := kmsg.NewListOffsetsResponseTopicPartition()
			result.Partition = rp.Partition
			offset, timestamp, err := int64(0), int64(0), error(errTopicAuthorization)
			if authorized {
				offset, timestamp, err = b.listOffset(t, rt.Topic, rp, req.Version, req.IsolationLevel == isolationReadCommitted)
			}
			result.ErrorCode = errorCode(err)
			result.Offset, result.Timestamp, result.LeaderEpoch = -1, -1, -1
			if err == nil {
				result.Offset, result.Timestamp = offset, timestamp
				if offset >= 0 {
					result.LeaderEpoch = b.currentLeaderEpochOf(t, rp.Partition)
				}
			}
			listed.Partitions = append(listed.Partitions, result)
		}
		resp.Topics = append(resp.Topics, listed)
	}
	return resp
}

func (b *Broker) listOffset(t *topic, name string, rp kmsg.ListOffsetsRequestTopicPartition, version int16, readCommitted bool) (offset, timestamp int64, err error) {
	if t == nil {
		return 0, 0, fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	p, err := b.partitionOf(t, rp.Partition)
	if err != nil {
		return 0, 0, err
	}
	if err := p.CheckLeader(rp.CurrentLeaderEpoch); err != nil {
		return 0, 0, err
	}
	if p.Closed() {
		return 0, 0, fmt.Errorf("%w: %s", errUnknownTopic, p.Name())
	}
	switch {
	case rp.Timestamp == listLatest && readCommitted:
		return p.LastStableOffset(), -1, nil
	case rp.Timestamp == listLatest:
		return p.HighWatermark(), -1, nil
	case rp.Timestamp == listEarliest, rp.Timestamp == listEarliestLocal && version >= 8:
		return p.Log().LogStartOffset(), -1, nil
	case rp.Timestamp == listMaxTimestamp && version >= 7:
		return p.MaxTimestampOffset()
	case rp.Timestamp >= 0:
		offset, timestamp, found := p.Log().OffsetForTimestamp(rp.Timestamp)
		if !found {
			return -1, -1, nil
		}
		return offset, timestamp, nil
	}
	return 0, 0, fmt.Errorf("%w: timestamp %d at ListOffsets v%d", errInvalidRequest, rp.Timestamp, version)
}

// currentLeaderEpochOf is the leader epoch of partition index of t (0
// when unknown).
func (b *Broker) currentLeaderEpochOf(t *topic, index int32) int32 {
	if t == nil {
		return leaderEpoch
	}
	p, err := b.partitionOf(t, index)
	if err != nil {
		return leaderEpoch
	}
	return p.CurrentLeaderEpoch()
}
