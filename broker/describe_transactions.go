package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// DescribeTransactions v0 (KIP-664) describes transactional ids: state,
// producer id and epoch, timeout, start time and participant partitions;
// TRANSACTIONAL_ID_NOT_FOUND for an id the coordinator does not hold.
func init() {
	register(wire.APIDescribeTransactions, 0, 0, groupHandler(inReader, handleDescribeTransactions))
}

func handleDescribeTransactions(ctx context.Context, c *connection, req *kmsg.DescribeTransactionsRequest) kmsg.Response {
	return c.broker.transactions.DescribeTransactions(ctx, req)
}
