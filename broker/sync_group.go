package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// SyncGroup v0–5. A follower's call parks until the leader's assignment
// arrives, so it runs on its own goroutine; see
// group.Coordinator.SyncGroup. A sync parked when the broker closes
// answers NOT_COORDINATOR.
func init() {
	register(wire.APISyncGroup, 0, 5, groupHandler(parks, handleSyncGroup))
}

func handleSyncGroup(ctx context.Context, c *connection, req *kmsg.SyncGroupRequest) kmsg.Response {
	resp := c.broker.groups.SyncGroup(ctx, req)
	if resp.ErrorCode == kerr.RebalanceInProgress.Code && c.broker.shuttingDown() {
		resp.ErrorCode = kerr.NotCoordinator.Code
	}
	return resp
}
