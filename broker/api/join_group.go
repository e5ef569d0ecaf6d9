package api

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// JoinGroup v0–9 (classic protocol; consumer-protocol groups with members
// refuse it, see [consumerGroupHeartbeat]). The call parks until the
// rebalance it joins completes, so it runs on its own goroutine. A join
// parked when the broker closes answers NOT_COORDINATOR.
//
// Versions: v0 has no rebalance timeout (the session timeout is used);
// v4+ clients that join with an empty member id first get
// MEMBER_ID_REQUIRED with a generated id (KIP-394); v5+ carry
// group.instance.id (static membership, KIP-345); v7+ return the protocol
// type (null on errors) and may return a null protocol, older versions an
// empty one; v9 returns SkipAssignment (KIP-814).
func init() {
	register(wire.APIJoinGroup, 0, 9, Parks, joinGroup)
}

func joinGroup(ctx context.Context, r *Request, req *kmsg.JoinGroupRequest) kmsg.Response {
	if !r.AuthorizedGroup(kmsg.ACLOperationRead, req.Group) {
		return joinGroupResponse(req.Version, group.JoinResult{}, errcode.ErrGroupAuthorization)
	}
	result, err := joinAndWait(ctx, r.Groups, joinRequest(ctx, req))
	return joinGroupResponse(req.Version, result, err)
}

// joinRequest decodes a JoinGroup with its version's defaults.
func joinRequest(ctx context.Context, req *kmsg.JoinGroupRequest) group.JoinRequest {
	join := group.JoinRequest{
		Group:                req.Group,
		MemberID:             req.MemberID,
		ProtocolType:         req.ProtocolType,
		SessionTimeout:       time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:     time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		RequireKnownMemberID: req.Version >= 4,
		Client:               group.ClientInfoFrom(ctx),
	}
	if req.Version < 1 {
		join.RebalanceTimeout = join.SessionTimeout
	}
	if req.Version >= 5 && req.InstanceID != nil {
		instanceID := *req.InstanceID
		join.InstanceID = &instanceID
	}
	for _, protocol := range req.Protocols {
		// The coordinator copies the metadata it keeps (it aliases the frame).
		join.Protocols = append(join.Protocols, group.Protocol{Name: protocol.Name, Metadata: protocol.Metadata})
	}
	return join
}

// joinAndWait joins and waits for the outcome. If ctx ends first (the
// client went away, or the broker is closing) the join answers
// REBALANCE_IN_PROGRESS — NOT_COORDINATOR while the broker shuts down —
// and the member stays awaiting join until the rebalance completes or
// drops it.
func joinAndWait(ctx context.Context, groups Groups, req group.JoinRequest) (group.JoinResult, error) {
	var memberID string
	result, answered, err := awaitGroupReply(ctx, func(reply func(group.JoinResult, error)) {
		memberID = groups.For(req.Group).Join(ctx, req, reply)
	})
	if !answered {
		result, err = group.JoinResult{MemberID: memberID, Generation: -1}, abandonedWait(ctx)
	}
	return result, groups.DuringShutdown(err)
}

// joinGroupResponse encodes a join's outcome at version.
func joinGroupResponse(version int16, result group.JoinResult, err error) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = errcode.Of(err)
	resp.Generation = result.Generation
	resp.LeaderID = result.Leader
	resp.MemberID = result.MemberID
	resp.Protocol = result.Protocol
	if version >= 7 && err == nil {
		protocolType := result.ProtocolType
		resp.ProtocolType = &protocolType
	}
	if version < 7 && resp.Protocol == nil {
		empty := ""
		resp.Protocol = &empty
	}
	if version >= 9 {
		resp.SkipAssignment = result.SkipAssignment
	}
	for _, m := range result.Members {
		resp.Members = append(resp.Members, kmsg.JoinGroupResponseMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ProtocolMetadata: m.Metadata})
	}
	return resp
}
