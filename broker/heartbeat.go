package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// Heartbeat v0–4 keeps a member's session alive and tells it to rejoin
// (REBALANCE_IN_PROGRESS) while its group rebalances; see
// group.Coordinator.Heartbeat.
func init() {
	register(wire.APIHeartbeat, 0, 4, groupHandler(inReader, handleHeartbeat))
}

func handleHeartbeat(ctx context.Context, c *connection, req *kmsg.HeartbeatRequest) kmsg.Response {
	return c.broker.groups.Heartbeat(ctx, req)
}
