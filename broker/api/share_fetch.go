package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// ShareFetch v1–2 (KIP-932, KIP-1206, KIP-1222) acquires records of a
// share group's partitions led here for one member, in its share session
// (epoch 0 opens it, -1 closes it and releases the member's records, any
// other must be the session's next epoch), after applying the
// acknowledgements it carries. v2's IsRenewAck only acknowledges (renew
// extends locks) and fetches nothing. Group READ and each topic's READ are
// required. v0 (early access) is not served, as Kafka 4.1+. It parks: an
// empty answer waits up to MaxWait for an append or a release.
func init() {
	register(wire.APIShareFetch, 1, 2, Parks, shareFetch)
}

func shareFetch(ctx context.Context, r *Request, req *kmsg.ShareFetchRequest) kmsg.Response {
	groupID := ""
	if req.GroupID != nil {
		groupID = *req.GroupID
	}
	if !r.AuthorizedGroup(kmsg.ACLOperationRead, groupID) {
		resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(errcode.ErrGroupAuthorization), errcode.Message(errcode.ErrGroupAuthorization)
		return resp
	}
	return r.Shares.Fetch(ctx, req, func(topic string) bool { return r.AuthorizedTopic(kmsg.ACLOperationRead, topic) }, r.Closed)
}
