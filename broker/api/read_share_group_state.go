package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// ReadShareGroupState v0 is broker to broker: a partition leader reads a
// share-partition's durable state from the group's coordinator, which
// keeps it in __consumer_offsets (Kafka's share coordinator API, served
// here by the group coordinator). A partition without state answers start
// offset -1. CLUSTER_ACTION on the cluster is required.
func init() {
	register(wire.APIReadShareGroupState, 0, 0, InReader, readShareGroupState)
}

func readShareGroupState(_ context.Context, r *Request, req *kmsg.ReadShareGroupStateRequest) kmsg.Response {
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	resp.Version = req.Version
	allowed := r.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	for _, rt := range req.Topics {
		topic := kmsg.NewReadShareGroupStateResponseTopic()
		topic.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewReadShareGroupStateResponseTopicPartition()
			p.Partition, p.StartOffset = rp.Partition, -1
			if !allowed {
				p.ErrorCode = errcode.Of(errcode.ErrClusterAuthorization)
				topic.Partitions = append(topic.Partitions, p)
				continue
			}
			state, found, err := r.Groups.For(req.GroupID).ReadShareState(req.GroupID, group.ShareKey{TopicID: rt.TopicID, Partition: rp.Partition})
			switch {
			case err != nil:
				p.ErrorCode = errcode.Of(err)
				message := err.Error()
				p.ErrorMessage = &message
			case found:
				p.StateEpoch, p.StartOffset = state.StateEpoch, state.StartOffset
				for _, b := range state.Batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.DeliveryCount
					p.StateBatches = append(p.StateBatches, sb)
				}
			default:
				p.StateEpoch = state.StateEpoch
			}
			topic.Partitions = append(topic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, topic)
	}
	return resp
}
