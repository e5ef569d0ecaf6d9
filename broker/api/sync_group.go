package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// SyncGroup v0–5. The leader's request carries the assignment; a
// follower's call parks until the leader's arrives, so it runs on its own
// goroutine. A sync parked when the broker closes answers NOT_COORDINATOR.
// v3+ carry the instance id; v5 carries and returns the protocol type and
// name, checked against the group's.
func init() {
	register(wire.APISyncGroup, 0, 5, Parks, syncGroup)
}

func syncGroup(ctx context.Context, r *Request, req *kmsg.SyncGroupRequest) kmsg.Response {
	if !r.AuthorizedGroup(kmsg.ACLOperationRead, req.Group) {
		return syncGroupResponse(req.Version, group.SyncResult{}, errcode.ErrGroupAuthorization)
	}
	sync := group.SyncRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation}
	if req.Version >= 3 {
		sync.InstanceID = req.InstanceID
	}
	if req.Version >= 5 {
		sync.ProtocolType, sync.Protocol = req.ProtocolType, req.Protocol
	}
	for _, assignment := range req.GroupAssignment {
		// The coordinator copies the assignments it keeps.
		sync.Assignments = append(sync.Assignments, group.Assignment{MemberID: assignment.MemberID, Assignment: assignment.MemberAssignment})
	}
	result, answered, err := awaitGroupReply(ctx, func(reply func(group.SyncResult, error)) {
		r.Groups.For(sync.Group).Sync(ctx, sync, reply)
	})
	if !answered {
		result, err = group.SyncResult{}, abandonedWait(ctx)
	}
	return syncGroupResponse(req.Version, result, r.Groups.DuringShutdown(err))
}

// syncGroupResponse encodes a sync's outcome at version.
func syncGroupResponse(version int16, result group.SyncResult, err error) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	resp.ErrorCode = errcode.Of(err)
	resp.MemberAssignment = result.Assignment
	if version >= 5 && err == nil {
		resp.ProtocolType = &result.ProtocolType
		resp.Protocol = &result.Protocol
	}
	return resp
}
