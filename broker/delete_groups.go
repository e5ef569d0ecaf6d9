package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// DeleteGroups v0–3 deletes empty groups and their offsets; see
// group.Coordinator.DeleteGroups.
func init() {
	register(wire.APIDeleteGroups, 0, 3, groupHandler(inReader, handleDeleteGroups))
}

func handleDeleteGroups(ctx context.Context, c *connection, req *kmsg.DeleteGroupsRequest) kmsg.Response {
	return c.broker.groups.DeleteGroups(ctx, req)
}
