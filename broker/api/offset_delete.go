package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// OffsetDelete v0 deletes a group's committed offsets. Offsets of topics
// the group's consumers still subscribe to answer GROUP_SUBSCRIBED_TO_TOPIC;
// a non-consumer group with members answers NON_EMPTY_GROUP, an unknown
// group GROUP_ID_NOT_FOUND (both for the whole request).
func init() {
	register(wire.APIOffsetDelete, 0, 0, InReader, offsetDelete)
}

func offsetDelete(ctx context.Context, r *Request, req *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	// Authorization (the broker's authorizationRules): Delete on the
	// group; Read on each topic, whose partitions are otherwise refused and
	// kept.
	if !r.AuthorizedGroup(kmsg.ACLOperationDelete, req.Group) {
		resp.ErrorCode = errcode.Of(errcode.ErrGroupAuthorization)
		return resp
	}
	topics := make([]group.DeleteOffsetsTopic, 0, len(req.Topics))
	var deletedIndex []int
	for i, topic := range req.Topics {
		if !r.AuthorizedTopic(kmsg.ACLOperationRead, topic.Topic) {
			continue
		}
		deletedIndex = append(deletedIndex, i)
		deleted := group.DeleteOffsetsTopic{Name: topic.Topic}
		for _, partition := range topic.Partitions {
			deleted.Partitions = append(deleted.Partitions, partition.Partition)
		}
		topics = append(topics, deleted)
	}
	deletedErrs, err := r.Groups.For(req.Group).DeleteOffsets(ctx, req.Group, topics)
	if err != nil {
		resp.ErrorCode = errcode.Of(err)
		return resp
	}
	errs := make([][]error, len(req.Topics))
	attempted := make([]bool, len(req.Topics))
	for k, i := range deletedIndex {
		errs[i], attempted[i] = deletedErrs[k], true
	}
	for i, topic := range req.Topics {
		responseTopic := kmsg.OffsetDeleteResponseTopic{Topic: topic.Topic}
		for j, partition := range topic.Partitions {
			err := error(errcode.ErrTopicAuthorization)
			if attempted[i] {
				err = errs[i][j]
			}
			responseTopic.Partitions = append(responseTopic.Partitions, kmsg.OffsetDeleteResponseTopicPartition{
				Partition: partition.Partition, ErrorCode: errcode.Of(err),
			})
		}
		resp.Topics = append(resp.Topics, responseTopic)
	}
	return resp
}
