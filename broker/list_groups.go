package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// ListGroups v0–5 lists every group (v4+ filtered by state, v5 by type;
// every group here is classic); see group.Coordinator.ListGroups.
func init() {
	register(wire.APIListGroups, 0, 5, groupHandler(inReader, handleListGroups))
}

func handleListGroups(ctx context.Context, c *connection, req *kmsg.ListGroupsRequest) kmsg.Response {
	return c.broker.groups.ListGroups(ctx, req)
}
