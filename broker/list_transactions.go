package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// ListTransactions v0–1 (KIP-664) lists the transactional ids with their
// producer id and state, filtered by state and producer id (v1 adds the
// filter on transaction duration).
func init() {
	register(wire.APIListTransactions, 0, 1, groupHandler(inReader, handleListTransactions))
}

func handleListTransactions(ctx context.Context, c *connection, req *kmsg.ListTransactionsRequest) kmsg.Response {
	return c.broker.transactions.ListTransactions(ctx, req)
}
