package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DeleteShareGroupOffsets v0 forgets a share group's state for whole
// topics, so they start again from share.auto.offset.reset; the group
// must exist and have no members (NON_EMPTY_GROUP). Group DELETE and each
// topic's READ are required, as Kafka.
// A broker another broker's FindCoordinator named before it took the
// group's partition up waits for that (up to 2 s, on its own goroutine)
// rather than answer NOT_COORDINATOR, which clients do not retry here.
func init() {
	register(wire.APIDeleteShareGroupOffsets, 0, 0, Parks, deleteShareGroupOffsets)
}

func deleteShareGroupOffsets(ctx context.Context, r *Request, req *kmsg.DeleteShareGroupOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
	resp.Version = req.Version
	if !r.AuthorizedGroup(kmsg.ACLOperationDelete, req.GroupID) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(errcode.ErrGroupAuthorization), errcode.Message(errcode.ErrGroupAuthorization)
		return resp
	}
	var ids [][16]byte
	var pending []int
	for _, rt := range req.Topics {
		topic := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		topic.Topic = rt.Topic
		metadata := r.Cluster.Topic(rt.Topic, false)
		topic.TopicID = metadata.TopicID
		switch {
		case !r.AuthorizedTopic(kmsg.ACLOperationRead, rt.Topic):
			topic.ErrorCode = errcode.Of(errcode.ErrTopicAuthorization)
		case metadata.ErrorCode != 0:
			topic.ErrorCode = metadata.ErrorCode
		default:
			ids = append(ids, metadata.TopicID)
			pending = append(pending, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, topic)
	}
	if err := r.Groups.ForReady(ctx, req.GroupID).DeleteShareOffsets(ctx, req.GroupID, ids); err != nil {
		code := errcode.Of(err)
		message := err.Error()
		resp.ErrorCode, resp.ErrorMessage = code, &message
		for _, i := range pending {
			resp.Topics[i].ErrorCode = code
		}
	}
	return resp
}
