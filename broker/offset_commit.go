package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// OffsetCommit v0–10 stores committed offsets in __consumer_offsets and
// answers once they are durable under log.fsync. Members' commits are
// checked against their generation and member id (ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID); v10 names topics by id. It runs in the reader
// goroutine so a later OffsetFetch on the same connection sees the commit.
// See group.Coordinator.OffsetCommit.
func init() {
	register(wire.APIOffsetCommit, 0, 10, groupHandler(inReader, handleOffsetCommit))
}

func handleOffsetCommit(ctx context.Context, c *connection, req *kmsg.OffsetCommitRequest) kmsg.Response {
	return c.broker.groups.OffsetCommit(ctx, req)
}
