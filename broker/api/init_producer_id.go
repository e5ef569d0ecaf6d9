package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// InitProducerId v0–5 without a transactional id gives an idempotent
// producer a new producer id at epoch 0, as Kafka does: the id comes from a
// block the metadata quorum's controller handed out to this broker
// (AllocateProducerIds), so no id is handed out twice, by two brokers or
// across restarts. The v3+ ProducerID/ProducerEpoch fields
// (KIP-360) are ignored without a transactional id; Kafka also answers a
// fresh id then, and the client restarts its sequences at 0.
//
// With a transactional id the transaction coordinator answers ([txn]):
// the first call gets a new producer id at epoch 0; a later one bumps the
// epoch, which fences the older instance, and aborts its open transaction
// first (the reply waits for the abort's markers, or answers
// CONCURRENT_TRANSACTIONS after 5 s and the client retries); an exhausted
// epoch moves to a new producer id; transaction.timeout.ms above
// transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT. The handler
// runs on its own goroutine, since it may wait. An empty, non-null
// transactional id is INVALID_REQUEST, as in Kafka.
func init() {
	register(wire.APIInitProducerID, 0, 5, Parks, initProducerID)
}

func initProducerID(ctx context.Context, r *Request, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = errcode.Of(fmt.Errorf("%w: empty transactional id", errcode.ErrInvalidRequest))
		return resp
	case req.TransactionalID != nil && !r.AuthorizedTransactionalID(kmsg.ACLOperationWrite, *req.TransactionalID):
		resp.ErrorCode = errcode.Of(errcode.ErrTransactionalIDAuthorization)
		return resp
	case req.TransactionalID == nil && !r.AuthorizedCluster(kmsg.ACLOperationIdempotentWrite) &&
		!r.Auth.AuthorizedOnAnyTopic(kmsg.ACLOperationWrite):
		resp.ErrorCode = errcode.Of(errcode.ErrClusterAuthorization)
		return resp
	case req.TransactionalID != nil:
		got, err := r.Transactions.For(*req.TransactionalID).InitProducerID(ctx, initRequest(req))
		resp.ErrorCode = errcode.Txn(err, wire.APIInitProducerID, req.Version)
		if err == nil {
			resp.ProducerID, resp.ProducerEpoch = got.ProducerID, got.Epoch
		}
		return resp
	}
	id, err := r.Transactions.NextProducerID()
	if err != nil {
		r.Logger.Error("producer id allocation failed", "error", err)
		resp.ErrorCode = errcode.Of(fmt.Errorf("%w: allocate producer id: %w", errcode.ErrStorage, err))
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}

// initRequest decodes an InitProducerId with a transactional id. The
// producer's current id and epoch (KIP-360) exist from v3, and count only
// when either is set (-1/-1 is a new instance).
func initRequest(req *kmsg.InitProducerIDRequest) txn.InitRequest {
	init := txn.InitRequest{TransactionalID: *req.TransactionalID, TimeoutMs: req.TransactionTimeoutMillis}
	if req.Version >= 3 && (req.ProducerID != -1 || req.ProducerEpoch != -1) {
		init.Current = &txn.ProducerIDEpoch{ProducerID: req.ProducerID, Epoch: req.ProducerEpoch}
	}
	return init
}
