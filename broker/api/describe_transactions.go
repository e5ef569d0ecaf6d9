package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DescribeTransactions v0 (KIP-664) describes transactional ids: state,
// producer id and epoch, timeout, start time and participant partitions;
// TRANSACTIONAL_ID_NOT_FOUND for an id the coordinator does not hold.
func init() {
	register(wire.APIDescribeTransactions, 0, 0, InReader, describeTransactions)
}

func describeTransactions(_ context.Context, r *Request, req *kmsg.DescribeTransactionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		state := kmsg.NewDescribeTransactionsResponseTransactionState()
		state.TransactionalID = id
		if !r.AuthorizedTransactionalID(kmsg.ACLOperationDescribe, id) {
			state.ErrorCode = errcode.Of(errcode.ErrTransactionalIDAuthorization)
			resp.TransactionStates = append(resp.TransactionStates, state)
			continue
		}
		m, err := r.Transactions.For(id).DescribeTransaction(id)
		state.ErrorCode = errcode.Txn(err, wire.APIDescribeTransactions, req.Version)
		if err == nil {
			state.State = m.State.String()
			state.TimeoutMillis = m.TimeoutMs
			state.StartTimestamp = m.StartTime
			state.ProducerID = m.ProducerID
			state.ProducerEpoch = m.ProducerEpoch
			// The participants are sorted by topic, then partition.
			for _, tp := range m.Partitions {
				if !r.AuthorizedTopic(kmsg.ACLOperationDescribe, tp.Topic) {
					continue // Kafka lists only the topics the principal may Describe
				}
				last := len(state.Topics) - 1
				if last < 0 || state.Topics[last].Topic != tp.Topic {
					state.Topics = append(state.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: tp.Topic})
					last++
				}
				state.Topics[last].Partitions = append(state.Topics[last].Partitions, tp.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, state)
	}
	return resp
}
