package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// Heartbeat v0–4 keeps a member's session alive and tells it to rejoin
// (REBALANCE_IN_PROGRESS) while its group rebalances. v3+ carry the
// instance id.
func init() {
	register(wire.APIHeartbeat, 0, 4, InReader, heartbeat)
}

func heartbeat(_ context.Context, r *Request, req *kmsg.HeartbeatRequest) kmsg.Response {
	beat := group.HeartbeatRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation}
	if req.Version >= 3 {
		beat.InstanceID = req.InstanceID
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	if !r.AuthorizedGroup(kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = errcode.Of(errcode.ErrGroupAuthorization)
		return resp
	}
	resp.ErrorCode = errcode.Of(r.Groups.For(beat.Group).Heartbeat(beat))
	return resp
}
