package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// AddOffsetsToTxn v0–4 adds a consumer group to a producer's transaction,
// so TxnOffsetCommit may stage the group's offsets in it; the coordinator
// records the group's __consumer_offsets partition (as Kafka does) and the
// group id, and at the transaction's end completes the group's offsets
// through the group coordinator. v2+ get PRODUCER_FENCED where older
// versions get INVALID_PRODUCER_EPOCH. Runs on its own goroutine (it waits
// for the log append).
func init() {
	register(wire.APIAddOffsetsToTxn, 0, 4, Parks, addOffsetsToTxn)
}

func addOffsetsToTxn(ctx context.Context, r *Request, req *kmsg.AddOffsetsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	// Authorization: Write on the transactional id, Read on the group.
	switch {
	case !r.AuthorizedTransactionalID(kmsg.ACLOperationWrite, req.TransactionalID):
		resp.ErrorCode = errcode.Of(errcode.ErrTransactionalIDAuthorization)
		return resp
	case !r.AuthorizedGroup(kmsg.ACLOperationRead, req.Group):
		resp.ErrorCode = errcode.Of(errcode.ErrGroupAuthorization)
		return resp
	}
	producer := txn.Producer{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch}
	err := r.Transactions.For(req.TransactionalID).AddOffsets(ctx, producer, req.Group)
	resp.ErrorCode = errcode.Txn(err, wire.APIAddOffsetsToTxn, req.Version)
	return resp
}
