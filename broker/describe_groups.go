package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// DescribeGroups v0–6 reports groups' state, protocol and members; see
// group.Coordinator.DescribeGroups.
func init() {
	register(wire.APIDescribeGroups, 0, 6, groupHandler(inReader, handleDescribeGroups))
}

func handleDescribeGroups(ctx context.Context, c *connection, req *kmsg.DescribeGroupsRequest) kmsg.Response {
	return c.broker.groups.DescribeGroups(ctx, req)
}
