package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// AddPartitionsToTxn v0–5 adds partitions to a producer's transaction
// (the first add opens it); the coordinator ([txn.Coordinator]) writes
// the new state to __transaction_state before answering. v0–3 are the clients'
// form (one transactional id); v4+ the brokers' batched form (KIP-890),
// where each transaction is either VerifyOnly (is every partition in the
// open transaction?) or an add. A fenced producer gets PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v2), a partition that does not exist
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED. The
// handler runs on its own goroutine: it waits for the log append.
func init() {
	register(wire.APIAddPartitionsToTxn, 0, 5, Parks, addPartitionsToTxn)
}

func addPartitionsToTxn(ctx context.Context, r *Request, req *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		var partitions []txn.TopicPartition
		for _, topic := range req.Topics {
			for _, partition := range topic.Partitions {
				partitions = append(partitions, txn.TopicPartition{Topic: topic.Topic, Partition: partition})
			}
		}
		codes, refused := addPartitionsRefusal(r, req.TransactionalID, partitions)
		if !refused {
			producer := txn.Producer{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch}
			coordinator := r.Transactions.For(req.TransactionalID)
			codes = addPartitionsCodes(coordinator.AddPartitions(ctx, producer, partitions), req.Version)
		}
		for _, topic := range txnCodesByTopic(partitions, codes) {
			responseTopic := kmsg.AddPartitionsToTxnResponseTopic{Topic: topic.topic}
			for _, partition := range topic.partitions {
				responseTopic.Partitions = append(responseTopic.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{
					Partition: partition.partition, ErrorCode: partition.code,
				})
			}
			resp.Topics = append(resp.Topics, responseTopic)
		}
		return resp
	}
	// v4+ comes from brokers: ClusterAction on the Cluster.
	if !r.AuthorizedCluster(kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = errcode.Of(errcode.ErrClusterAuthorization)
		return resp
	}
	for _, transaction := range req.Transactions {
		var partitions []txn.TopicPartition
		for _, topic := range transaction.Topics {
			for _, partition := range topic.Partitions {
				partitions = append(partitions, txn.TopicPartition{Topic: topic.Topic, Partition: partition})
			}
		}
		producer := txn.Producer{TransactionalID: transaction.TransactionalID, ProducerID: transaction.ProducerID, Epoch: transaction.ProducerEpoch}
		coordinator := r.Transactions.For(transaction.TransactionalID)
		var errs []error
		if transaction.VerifyOnly {
			errs = coordinator.VerifyPartitions(producer, partitions)
		} else {
			errs = coordinator.AddPartitions(ctx, producer, partitions)
		}
		result := kmsg.AddPartitionsToTxnResponseTransaction{TransactionalID: transaction.TransactionalID}
		for _, topic := range txnCodesByTopic(partitions, addPartitionsCodes(errs, req.Version)) {
			resultTopic := kmsg.AddPartitionsToTxnResponseTransactionTopic{Topic: topic.topic}
			for _, partition := range topic.partitions {
				resultTopic.Partitions = append(resultTopic.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{
					Partition: partition.partition, ErrorCode: partition.code,
				})
			}
			result.Topics = append(result.Topics, resultTopic)
		}
		resp.Transactions = append(resp.Transactions, result)
	}
	return resp
}

// addPartitionsRefusal is Kafka's authorization of a v0–3 request:
// without Write on the transactional id every partition is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a topic without Write is
// TOPIC_AUTHORIZATION_FAILED and the other partitions are
// OPERATION_NOT_ATTEMPTED. refused is false (codes nil) when all is
// authorized.
func addPartitionsRefusal(r *Request, transactionalID string, partitions []txn.TopicPartition) (codes []int16, refused bool) {
	codes = make([]int16, len(partitions))
	if !r.AuthorizedTransactionalID(kmsg.ACLOperationWrite, transactionalID) {
		for i := range codes {
			codes[i] = errcode.Of(errcode.ErrTransactionalIDAuthorization)
		}
		return codes, true
	}
	for i, tp := range partitions {
		if !r.AuthorizedTopic(kmsg.ACLOperationWrite, tp.Topic) {
			codes[i], refused = errcode.Of(errcode.ErrTopicAuthorization), true
		}
	}
	if !refused {
		return nil, false
	}
	for i := range codes {
		if codes[i] == 0 {
			codes[i] = kerr.OperationNotAttempted.Code
		}
	}
	return codes, true
}

// addPartitionsCodes maps the coordinator's per-partition errors.
func addPartitionsCodes(errs []error, version int16) []int16 {
	codes := make([]int16, len(errs))
	for i, err := range errs {
		codes[i] = errcode.Txn(err, wire.APIAddPartitionsToTxn, version)
	}
	return codes
}

// txnTopicCodes is one topic's partitions with their error codes.
type txnTopicCodes struct {
	topic      string
	partitions []txnPartitionCode
}

// txnPartitionCode is one partition's error code.
type txnPartitionCode struct {
	partition int32
	code      int16
}

// txnCodesByTopic groups per-partition codes by topic, topics in the order
// they first appear and partitions in request order.
func txnCodesByTopic(partitions []txn.TopicPartition, codes []int16) []txnTopicCodes {
	var topics []txnTopicCodes
	index := make(map[string]int)
	for i, tp := range partitions {
		at, ok := index[tp.Topic]
		if !ok {
			at = len(topics)
			index[tp.Topic] = at
			topics = append(topics, txnTopicCodes{topic: tp.Topic})
		}
		topics[at].partitions = append(topics[at].partitions, txnPartitionCode{partition: tp.Partition, code: codes[i]})
	}
	return topics
}
