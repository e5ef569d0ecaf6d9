package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// AddPartitionsToTxn v0–5 adds partitions to a producer's transaction
// (the first add opens it); the coordinator (broker/txn) writes the new
// state to __transaction_state before answering. v0–3 are the clients'
// form (one transactional id); v4+ the brokers' batched form (KIP-890),
// where each transaction is either VerifyOnly (is every partition in the
// open transaction?) or an add. A fenced producer gets PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v2), a partition that does not exist
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED. The
// handler runs on its own goroutine: it waits for the log append.
func init() {
	register(wire.APIAddPartitionsToTxn, 0, 5, groupHandler(parks, handleAddPartitionsToTxn))
}

func handleAddPartitionsToTxn(ctx context.Context, c *connection, req *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	return c.broker.transactions.AddPartitionsToTxn(ctx, req)
}
