package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// ShareAcknowledge v1–2 (KIP-932, KIP-1222) acknowledges records a member
// acquired with ShareFetch — accept, release, reject, gap, and with v2's
// IsRenewAck renew (extend the lock) — within its share session (epoch -1
// also closes the session, releasing what is left). Each acknowledged
// record must be acquired by this member (else INVALID_RECORD_STATE for
// the partition). Answered after the outcome is durable at the group's
// coordinator. Group READ and each topic's READ are required.
func init() {
	register(wire.APIShareAcknowledge, 1, 2, Parks, shareAcknowledge)
}

func shareAcknowledge(ctx context.Context, r *Request, req *kmsg.ShareAcknowledgeRequest) kmsg.Response {
	groupID := ""
	if req.GroupID != nil {
		groupID = *req.GroupID
	}
	if !r.AuthorizedGroup(kmsg.ACLOperationRead, groupID) {
		resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(errcode.ErrGroupAuthorization), errcode.Message(errcode.ErrGroupAuthorization)
		return resp
	}
	return r.Shares.Acknowledge(ctx, req, func(topic string) bool { return r.AuthorizedTopic(kmsg.ACLOperationRead, topic) })
}
