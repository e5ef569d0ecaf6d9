package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// LeaveGroup v0–5 removes members and rebalances the rest. v0–v2 name one
// member and answer with one error code; v3+ name a batch, each by member
// id and/or instance id, with an error per member.
func init() {
	register(wire.APILeaveGroup, 0, 5, InReader, leaveGroup)
}

func leaveGroup(ctx context.Context, r *Request, req *kmsg.LeaveGroupRequest) kmsg.Response {
	leavers := []group.Leaver{{MemberID: req.MemberID}}
	if req.Version >= 3 {
		leavers = make([]group.Leaver, 0, len(req.Members))
		for _, m := range req.Members {
			leavers = append(leavers, group.Leaver{MemberID: m.MemberID, InstanceID: m.InstanceID})
		}
	}
	if !r.AuthorizedGroup(kmsg.ACLOperationRead, req.Group) {
		return leaveGroupResponse(req.Version, leavers, nil, errcode.ErrGroupAuthorization)
	}
	errs, err := r.Groups.For(req.Group).Leave(ctx, req.Group, leavers)
	return leaveGroupResponse(req.Version, leavers, errs, err)
}

// leaveGroupResponse encodes a leave's outcome at version.
func leaveGroupResponse(version int16, leavers []group.Leaver, errs []error, err error) *kmsg.LeaveGroupResponse {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = version
	if err != nil {
		resp.ErrorCode = errcode.Of(err)
		return resp
	}
	for i, leaver := range leavers {
		if version < 3 {
			resp.ErrorCode = errcode.Of(errs[i])
			continue
		}
		resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{
			MemberID:   leaver.MemberID,
			InstanceID: leaver.InstanceID,
			ErrorCode:  errcode.Of(errs[i]),
		})
	}
	return resp
}
