package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// JoinGroup v0–9 (classic protocol; KIP-848's ConsumerGroupHeartbeat is not
// offered). The call parks until the rebalance it joins completes, so it
// runs on its own goroutine; see group.Coordinator.JoinGroup for the
// versions' behaviour. A join parked when the broker closes answers
// NOT_COORDINATOR.
func init() {
	register(wire.APIJoinGroup, 0, 9, groupHandler(parks, handleJoinGroup))
}

func handleJoinGroup(ctx context.Context, c *connection, req *kmsg.JoinGroupRequest) kmsg.Response {
	resp := c.broker.groups.JoinGroup(ctx, req)
	if resp.ErrorCode == kerr.RebalanceInProgress.Code && c.broker.shuttingDown() {
		resp.ErrorCode = kerr.NotCoordinator.Code
	}
	return resp
}
