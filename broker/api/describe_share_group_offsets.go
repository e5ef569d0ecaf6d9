package api

import (
	"bytes"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// DescribeShareGroupOffsets v0–1 reports share groups' start offsets
// (SPSO) per partition, and with v1 their lag (records from the start
// offset to the high watermark not yet acknowledged or archived; -1 when
// the partition's high watermark is not known here). Topics nil lists
// every partition with state. A requested partition without state answers
// start offset -1. Group DESCRIBE and each topic's DESCRIBE are required.
// A broker another broker's FindCoordinator named before it took the
// group's partition up waits for that (up to 2 s, on its own goroutine)
// rather than answer NOT_COORDINATOR, which clients do not retry here.
func init() {
	register(wire.APIDescribeShareGroupOffsets, 0, 1, Parks, describeShareGroupOffsets)
}

func describeShareGroupOffsets(ctx context.Context, r *Request, req *kmsg.DescribeShareGroupOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	resp.Version = req.Version
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		fail := func(err error) {
			g.ErrorCode = errcode.Of(err)
			message := err.Error()
			g.ErrorMessage = &message
		}
		if !r.AuthorizedGroup(kmsg.ACLOperationDescribe, rg.GroupID) {
			fail(errcode.ErrGroupAuthorization)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		states, err := r.Groups.ForReady(ctx, rg.GroupID).ShareStates(rg.GroupID)
		if err != nil {
			fail(err)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if rg.Topics == nil {
			g.Topics = allShareOffsets(r, states)
		}
		for _, rt := range rg.Topics {
			topic := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			topic.Topic = rt.Topic
			metadata := r.Cluster.Topic(rt.Topic, false)
			topic.TopicID = metadata.TopicID
			for _, partition := range rt.Partitions {
				p := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				p.Partition, p.StartOffset, p.LeaderEpoch, p.Lag = partition, -1, -1, -1
				switch {
				case !r.AuthorizedTopic(kmsg.ACLOperationDescribe, rt.Topic):
					p.ErrorCode = errcode.Of(errcode.ErrTopicAuthorization)
				case metadata.ErrorCode != 0:
					p.ErrorCode = metadata.ErrorCode
				default:
					if state, ok := states[group.ShareKey{TopicID: metadata.TopicID, Partition: partition}]; ok {
						p.StartOffset, p.LeaderEpoch, p.Lag = state.StartOffset, state.LeaderEpoch, r.Shares.Lag(metadata.TopicID, partition, state)
					}
				}
				topic.Partitions = append(topic.Partitions, p)
			}
			g.Topics = append(g.Topics, topic)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

// allShareOffsets lists every share-partition with state, by topic id and
// partition, leaving out topics the principal may not describe.
func allShareOffsets(r *Request, states map[group.ShareKey]group.ShareState) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	keys := make([]group.ShareKey, 0, len(states))
	for key := range states {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b group.ShareKey) int {
		if c := bytes.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	var out []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for _, key := range keys {
		name, ok := r.Groups.TopicName(key.TopicID)
		if !ok || !r.AuthorizedTopic(kmsg.ACLOperationDescribe, name) {
			continue
		}
		if len(out) == 0 || out[len(out)-1].TopicID != key.TopicID {
			topic := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			topic.Topic, topic.TopicID = name, key.TopicID
			out = append(out, topic)
		}
		state := states[key]
		p := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		p.Partition, p.StartOffset, p.LeaderEpoch, p.Lag = key.Partition, state.StartOffset, state.LeaderEpoch, r.Shares.Lag(key.TopicID, key.Partition, state)
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, p)
	}
	return out
}
