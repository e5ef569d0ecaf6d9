package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// ShareGroupHeartbeat v1 is the share group protocol (KIP-932): members
// join (epoch 0, with their client-generated member id and subscription),
// heartbeat at their member epoch, and leave (-1); the coordinator assigns
// each subscribed topic's partitions over the members subscribing to it,
// several members sharing a partition when there are more members than
// partitions. The group's share.session.timeout.ms and
// share.heartbeat.interval.ms apply. v0 (KIP-932's early access) is not
// served, as Kafka 4.1+. Group READ is required.
func init() {
	register(wire.APIShareGroupHeartbeat, 1, 1, InReader, shareGroupHeartbeat)
}

func shareGroupHeartbeat(ctx context.Context, r *Request, req *kmsg.ShareGroupHeartbeatRequest) kmsg.Response {
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = req.Version
	if !r.AuthorizedGroup(kmsg.ACLOperationRead, req.GroupID) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(errcode.ErrGroupAuthorization), errcode.Message(errcode.ErrGroupAuthorization)
		return resp
	}
	session, interval := r.Shares.HeartbeatSettings(req.GroupID)
	heartbeat := group.ShareHeartbeatRequest{
		Group: req.GroupID, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, RackID: req.RackID,
		SubscribedTopicNames: req.SubscribedTopicNames, Client: group.ClientInfoFrom(ctx),
		SessionTimeout: session, HeartbeatInterval: interval,
	}
	result, err := r.Groups.For(req.GroupID).ShareHeartbeat(ctx, heartbeat)
	resp.HeartbeatIntervalMillis = int32(result.HeartbeatInterval.Milliseconds())
	if err != nil {
		resp.ErrorCode = errcode.Of(err)
		message := err.Error()
		resp.ErrorMessage = &message
		return resp
	}
	memberID := result.MemberID
	resp.MemberID = &memberID
	resp.MemberEpoch = result.MemberEpoch
	if result.Assignment != nil {
		assignment := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, topic := range *result.Assignment {
			assigned := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			assigned.TopicID, assigned.Partitions = topic.TopicID, topic.Partitions
			assignment.TopicPartitions = append(assignment.TopicPartitions, assigned)
		}
		resp.Assignment = &assignment
	}
	return resp
}
