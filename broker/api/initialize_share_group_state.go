package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// InitializeShareGroupState v0 is broker to broker: a partition leader
// that found no durable state for a share-partition creates it at the
// group's coordinator with the start offset share.auto.offset.reset gave.
// State already there answers FENCED_STATE_EPOCH (another leader, or
// AlterShareGroupOffsets, was first: the leader reads it). CLUSTER_ACTION
// on the cluster is required.
func init() {
	register(wire.APIInitializeShareGroupState, 0, 0, Parks, initializeShareGroupState)
}

func initializeShareGroupState(ctx context.Context, r *Request, req *kmsg.InitializeShareGroupStateRequest) kmsg.Response {
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	resp.Version = req.Version
	allowed := r.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	for _, rt := range req.Topics {
		topic := kmsg.NewInitializeShareGroupStateResponseTopic()
		topic.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			p.Partition = rp.Partition
			if !allowed {
				p.ErrorCode = errcode.Of(errcode.ErrClusterAuthorization)
				topic.Partitions = append(topic.Partitions, p)
				continue
			}
			state := group.ShareState{StateEpoch: rp.StateEpoch, LeaderEpoch: -1, StartOffset: rp.StartOffset}
			if err := r.Groups.For(req.GroupID).WriteShareState(ctx, req.GroupID, group.ShareKey{TopicID: rt.TopicID, Partition: rp.Partition}, state, true); err != nil {
				p.ErrorCode = errcode.Of(err)
				message := err.Error()
				p.ErrorMessage = &message
			}
			topic.Partitions = append(topic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, topic)
	}
	return resp
}
