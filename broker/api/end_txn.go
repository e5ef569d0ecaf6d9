package api

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// EndTxn v0–5 commits or aborts a producer's transaction: the coordinator
// writes PrepareCommit or PrepareAbort (the decision is final once
// durable), then markers go to every participant partition through the
// WriteTxnMarkers path and the groups' offsets are completed, then
// CompleteCommit or CompleteAbort is written. The answer comes once the
// transaction completed (or after 5 s with the decision durable). A fenced
// producer gets PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2) in every
// state. v5 under transaction.version 2 is KIP-890 part 2: the epoch is
// bumped at every end and the response carries the producer id and epoch
// to continue with; with transaction.version below 2 the broker does not
// advertise the feature and v5 behaves as v4. Runs on its own goroutine.
func init() {
	register(wire.APIEndTxn, 0, 5, Parks, endTxn)
}

func endTxn(ctx context.Context, r *Request, req *kmsg.EndTxnRequest) kmsg.Response {
	if m := r.Metrics; m != nil {
		start := time.Now()
		defer func() { m.EndTxn(time.Since(start)) }()
	}
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !r.AuthorizedTransactionalID(kmsg.ACLOperationWrite, req.TransactionalID) {
		resp.ErrorCode = errcode.Of(errcode.ErrTransactionalIDAuthorization)
		return resp
	}
	end := txn.EndRequest{
		Producer: txn.Producer{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch},
		Commit:   req.Commit,
		// KIP-890 part 2 needs both the request version and the broker's
		// transaction.version.
		TransactionVersion2: req.Version >= 5 && r.Transactions.Version() >= 2,
	}
	next, err := r.Transactions.For(req.TransactionalID).EndTxn(ctx, end)
	resp.ErrorCode = errcode.Txn(err, wire.APIEndTxn, req.Version)
	if err == nil && end.TransactionVersion2 {
		resp.ProducerID, resp.ProducerEpoch = next.ProducerID, next.Epoch
	}
	return resp
}
