package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// OffsetDelete v0 deletes a group's committed offsets of topics its members
// do not consume; see group.Coordinator.OffsetDelete.
func init() {
	register(wire.APIOffsetDelete, 0, 0, groupHandler(inReader, handleOffsetDelete))
}

func handleOffsetDelete(ctx context.Context, c *connection, req *kmsg.OffsetDeleteRequest) kmsg.Response {
	return c.broker.groups.OffsetDelete(ctx, req)
}
