package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// OffsetFetch v0–10 returns committed offsets (v0, which read ZooKeeper in
// old Kafka, is answered from the same store); v8+ batch groups, v10 names
// topics by id. See group.Coordinator.OffsetFetch.
func init() {
	register(wire.APIOffsetFetch, 0, 10, groupHandler(inReader, handleOffsetFetch))
}

func handleOffsetFetch(ctx context.Context, c *connection, req *kmsg.OffsetFetchRequest) kmsg.Response {
	return c.broker.groups.OffsetFetch(ctx, req)
}
