package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// Heartbeat v0–4 keeps a member's session alive and tells it to rejoin
// (REBALANCE_IN_PROGRESS) while its group rebalances. v3+ carry the
// instance id.
func init() {
	register(wire.APIHeartbeat, 0, 4, groupHandler(inReader, handleHeartbeat))
}

func handleHeartbeat(ctx context.Context, c *connection, req *kmsg.HeartbeatRequest) kmsg.Response {
	heartbeat := group.HeartbeatRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation}
	if req.Version >= 3 {
		heartbeat.InstanceID = req.InstanceID
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	if !c.authorizedGroup(kmsg.ACLOperationRead, req.Group) { // authorizationRules
		resp.ErrorCode = errorCode(errGroupAuthorization)
		return resp
	}
	resp.ErrorCode = errorCode(c.broker.groupsFor(heartbeat.Group).Heartbeat(heartbeat))
	return resp
}
