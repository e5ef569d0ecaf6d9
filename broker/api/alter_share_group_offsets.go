package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// AlterShareGroupOffsets v0 sets a share group's start offsets per
// partition, forgetting their in-flight records; the group must have no
// members (NON_EMPTY_GROUP), and a group id not in use becomes an empty
// share group. Partition leaders holding the old state are fenced by its
// state epoch and reload it. Group READ and each topic's READ are
// required, as Kafka.
// A broker another broker's FindCoordinator named before it took the
// group's partition up waits for that (up to 2 s, on its own goroutine)
// rather than answer NOT_COORDINATOR, which clients do not retry here.
func init() {
	register(wire.APIAlterShareGroupOffsets, 0, 0, Parks, alterShareGroupOffsets)
}

func alterShareGroupOffsets(ctx context.Context, r *Request, req *kmsg.AlterShareGroupOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
	resp.Version = req.Version
	if !r.AuthorizedGroup(kmsg.ACLOperationRead, req.GroupID) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(errcode.ErrGroupAuthorization), errcode.Message(errcode.ErrGroupAuthorization)
		return resp
	}
	var offsets []group.ShareOffset
	var pending []*kmsg.AlterShareGroupOffsetsResponseTopicPartition
	for _, rt := range req.Topics {
		topic := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		topic.Topic = rt.Topic
		metadata := r.Cluster.Topic(rt.Topic, false)
		topic.TopicID = metadata.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			switch {
			case !r.AuthorizedTopic(kmsg.ACLOperationRead, rt.Topic):
				p.ErrorCode = errcode.Of(errcode.ErrTopicAuthorization)
			case metadata.ErrorCode != 0:
				p.ErrorCode = metadata.ErrorCode
			case rp.Partition < 0 || int(rp.Partition) >= len(metadata.Partitions):
				p.ErrorCode = errcode.Of(errcode.ErrUnknownTopic)
			case rp.StartOffset < 0:
				p.ErrorCode = errcode.Of(errcode.ErrInvalidRequest)
			default:
				offsets = append(offsets, group.ShareOffset{Key: group.ShareKey{TopicID: metadata.TopicID, Partition: rp.Partition}, StartOffset: rp.StartOffset})
			}
			topic.Partitions = append(topic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, topic)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if resp.Topics[i].Partitions[j].ErrorCode == 0 {
				pending = append(pending, &resp.Topics[i].Partitions[j])
			}
		}
	}
	if len(offsets) == 0 {
		return resp
	}
	if err := r.Groups.ForReady(ctx, req.GroupID).AlterShareOffsets(ctx, req.GroupID, offsets); err != nil {
		code := errcode.Of(err)
		message := err.Error()
		resp.ErrorCode, resp.ErrorMessage = code, &message
		for _, p := range pending {
			p.ErrorCode = code
		}
	}
	return resp
}
