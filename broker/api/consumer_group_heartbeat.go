package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// ConsumerGroupHeartbeat v0–1 is the KIP-848 consumer group protocol:
// members join (epoch 0), heartbeat with their member epoch, and leave
// (-1; -2 for a static member's temporary leave); the coordinator assigns
// partitions with a server-side assignor (uniform or range) and hands them
// out only once their previous owner revoked them. v1 clients generate
// their member id (an empty one is INVALID_REQUEST) and may subscribe by
// regular expression. Errors carry a message. Runs in the reader
// goroutine: the call never waits for other members.
func init() {
	register(wire.APIConsumerGroupHeartbeat, 0, 1, InReader, consumerGroupHeartbeat)
}

func consumerGroupHeartbeat(ctx context.Context, r *Request, req *kmsg.ConsumerGroupHeartbeatRequest) kmsg.Response {
	if !r.AuthorizedGroup(kmsg.ACLOperationRead, req.Group) {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.Version = req.Version
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(errcode.ErrGroupAuthorization), errcode.Message(errcode.ErrGroupAuthorization)
		resp.MemberEpoch = -1
		return resp
	}
	heartbeat := group.ConsumerHeartbeatRequest{
		Group:                  req.Group,
		MemberID:               req.MemberID,
		MemberEpoch:            req.MemberEpoch,
		InstanceID:             req.InstanceID,
		RackID:                 req.RackID,
		RebalanceTimeoutMillis: req.RebalanceTimeoutMillis,
		SubscribedTopicNames:   req.SubscribedTopicNames,
		ServerAssignor:         req.ServerAssignor,
		MemberIDRequired:       req.Version >= 1,
		Client:                 group.ClientInfoFrom(ctx),
	}
	if req.Version >= 1 {
		heartbeat.SubscribedTopicRegex = req.SubscribedTopicRegex
	}
	if req.Topics != nil {
		heartbeat.Owned = make([]group.TopicPartitions, 0, len(req.Topics))
		for _, topic := range req.Topics {
			heartbeat.Owned = append(heartbeat.Owned, group.TopicPartitions{TopicID: topic.TopicID, Partitions: topic.Partitions})
		}
	}
	result, err := r.Groups.For(req.Group).ConsumerHeartbeat(ctx, heartbeat)
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.HeartbeatIntervalMillis = int32(result.HeartbeatInterval.Milliseconds())
	if err != nil {
		resp.ErrorCode = errcode.Of(err)
		message := err.Error()
		resp.ErrorMessage = &message
		resp.MemberEpoch = -1
		return resp
	}
	memberID := result.MemberID
	resp.MemberID = &memberID
	resp.MemberEpoch = result.MemberEpoch
	if result.Assignment != nil {
		assignment := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, topic := range *result.Assignment {
			assigned := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			assigned.TopicID, assigned.Partitions = topic.TopicID, topic.Partitions
			assignment.Topics = append(assignment.Topics, assigned)
		}
		resp.Assignment = &assignment
	}
	return resp
}
