package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// ListTransactions v0–1 (KIP-664) lists the transactional ids with their
// producer id and state, filtered by state and producer id (v1 adds the
// filter on transaction duration).
func init() {
	register(wire.APIListTransactions, 0, 1, InReader, listTransactions)
}

func listTransactions(_ context.Context, r *Request, req *kmsg.ListTransactionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	filter := txn.ListFilter{States: req.StateFilters, ProducerIDs: req.ProducerIDFilters}
	if req.Version >= 1 && req.DurationFilterMillis >= 0 {
		duration := req.DurationFilterMillis
		filter.MinDurationMs = &duration
	}
	if req.Version >= 2 && req.TransactionalIDPattern != nil {
		filter.Pattern = *req.TransactionalIDPattern
	}
	result, err := r.Transactions.List(filter)
	resp.ErrorCode = errcode.Txn(err, wire.APIListTransactions, req.Version)
	resp.UnknownStateFilters = result.UnknownStates
	for _, listing := range result.Transactions {
		if !r.AuthorizedTransactionalID(kmsg.ACLOperationDescribe, listing.TransactionalID) {
			continue // only the ids the principal may Describe
		}
		resp.TransactionStates = append(resp.TransactionStates, kmsg.ListTransactionsResponseTransactionState{
			TransactionalID: listing.TransactionalID, ProducerID: listing.ProducerID, TransactionState: listing.State.String(),
		})
	}
	return resp
}
