package broker

import "github.com/exactly-eos/exactly/broker/txn"

// transactionService is the broker as api.Transactions, the service package api's handlers see.
type transactionService struct{ b *Broker }

// For is [Broker.transactionsFor].
func (s transactionService) For(transactionalID string) *txn.Coordinator {
	return s.b.transactionsFor(transactionalID)
}

// Version is the finalized transaction.version.
func (s transactionService) Version() int16 { return s.b.transactionVersion }
