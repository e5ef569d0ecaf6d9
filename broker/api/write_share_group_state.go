package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// WriteShareGroupState v0–1 is broker to broker: a partition leader writes
// a share-partition's durable state to the group's coordinator before it
// answers the ShareFetch or ShareAcknowledge that changed it. A write of
// an older leader epoch answers FENCED_LEADER_EPOCH, of another state
// epoch FENCED_STATE_EPOCH. CLUSTER_ACTION on the cluster is required.
func init() {
	register(wire.APIWriteShareGroupState, 0, 1, Parks, writeShareGroupState)
}

func writeShareGroupState(ctx context.Context, r *Request, req *kmsg.WriteShareGroupStateRequest) kmsg.Response {
	resp := kmsg.NewPtrWriteShareGroupStateResponse()
	resp.Version = req.Version
	allowed := r.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	for _, rt := range req.Topics {
		topic := kmsg.NewWriteShareGroupStateResponseTopic()
		topic.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			p.Partition = rp.Partition
			if !allowed {
				p.ErrorCode = errcode.Of(errcode.ErrClusterAuthorization)
				topic.Partitions = append(topic.Partitions, p)
				continue
			}
			state := group.ShareState{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: rp.StartOffset}
			for _, b := range rp.StateBatches {
				state.Batches = append(state.Batches, group.ShareStateBatch{First: b.FirstOffset, Last: b.LastOffset, DeliveryCount: b.DeliveryCount, State: b.DeliveryState})
			}
			if err := r.Groups.For(req.GroupID).WriteShareState(ctx, req.GroupID, group.ShareKey{TopicID: rt.TopicID, Partition: rp.Partition}, state, false); err != nil {
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
