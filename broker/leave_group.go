package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// LeaveGroup v0–5 removes members (v3+: a batch, each by member or
// instance id) and rebalances the rest; see group.Coordinator.LeaveGroup.
func init() {
	register(wire.APILeaveGroup, 0, 5, groupHandler(inReader, handleLeaveGroup))
}

func handleLeaveGroup(ctx context.Context, c *connection, req *kmsg.LeaveGroupRequest) kmsg.Response {
	return c.broker.groups.LeaveGroup(ctx, req)
}
