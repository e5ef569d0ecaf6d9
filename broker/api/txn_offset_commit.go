package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// TxnOffsetCommit v0–6 commits a consumer group's offsets inside a
// transaction (KIP-98, KIP-447). The transaction coordinator is asked
// first: the producer id and epoch must be current (PRODUCER_FENCED from
// v3, INVALID_PRODUCER_EPOCH before; INVALID_PRODUCER_ID_MAPPING for an
// unknown id) and the group must be in the open transaction
// (AddOffsetsToTxn; INVALID_TXN_STATE otherwise) — under transaction.version
// 2, v5+ adds the group itself (KIP-890 part 2). Then the group
// coordinator checks the member (generation, member id, instance id:
// KIP-447 fencing for consume-transform-produce) and stages the offsets
// under the producer id in __consumer_offsets; they become visible when
// the transaction's COMMIT completes the group (the broker's
// [txn.OffsetCommitter] of each transaction coordinator shard), and are
// dropped by an ABORT. OffsetFetch with RequireStable answers
// UNSTABLE_OFFSET_COMMIT for partitions with staged offsets. Runs in the
// reader goroutine; the frame buffer is released after the response is
// encoded (metadata strings are copied, but the broker's adapter keeps the
// rule for every decoded request).
func init() {
	register(wire.APITxnOffsetCommit, 0, 6, InReader, txnOffsetCommit)
}

func txnOffsetCommit(ctx context.Context, r *Request, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	code := txnOffsetCommitRefusal(r, req)
	if code == 0 {
		code = checkTxnOffsetCommit(ctx, r, req)
	}
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, topic := range req.Topics {
			responseTopic := kmsg.NewTxnOffsetCommitResponseTopic()
			responseTopic.Topic, responseTopic.TopicID = topic.Topic, topic.TopicID
			for _, partition := range topic.Partitions {
				responsePartition := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				responsePartition.Partition, responsePartition.ErrorCode = partition.Partition, code
				responseTopic.Partitions = append(responseTopic.Partitions, responsePartition)
			}
			resp.Topics = append(resp.Topics, responseTopic)
		}
		return resp
	}
	refused, authorized := txnOffsetCommitTopicRefusals(r, req)
	var errs [][]error
	if len(authorized.Topics) > 0 || len(req.Topics) == 0 {
		errs = r.Groups.For(req.Group).CommitTxnOffsets(ctx, txnCommitRequest(authorized))
		countOffsetsCommitted(r, errs) // the partitions staged
	}
	merged := make([][]error, len(req.Topics))
	for i, topic := range req.Topics {
		if refused[i] {
			merged[i] = make([]error, len(topic.Partitions))
			for j := range merged[i] {
				merged[i][j] = errcode.ErrTopicAuthorization
			}
			continue
		}
		merged[i], errs = errs[0], errs[1:]
	}
	return txnOffsetCommitResponse(req, merged)
}

// txnOffsetCommitRefusal is Kafka's authorization of TxnOffsetCommit:
// Write on the transactional id, then Read on the group; a refusal is
// every partition's error code. 0 is authorized.
func txnOffsetCommitRefusal(r *Request, req *kmsg.TxnOffsetCommitRequest) int16 {
	switch {
	case !r.AuthorizedTransactionalID(kmsg.ACLOperationWrite, req.TransactionalID):
		return errcode.Of(errcode.ErrTransactionalIDAuthorization)
	case !r.AuthorizedGroup(kmsg.ACLOperationRead, req.Group):
		return errcode.Of(errcode.ErrGroupAuthorization)
	}
	return 0
}

// txnOffsetCommitTopicRefusals splits a TxnOffsetCommit by Read on each
// topic: refused[i] marks the request's topics that are refused (every
// partition TOPIC_AUTHORIZATION_FAILED, nothing committed), authorized is
// the request with only the others (the request itself when none is
// refused).
func txnOffsetCommitTopicRefusals(r *Request, req *kmsg.TxnOffsetCommitRequest) (refused []bool, authorized *kmsg.TxnOffsetCommitRequest) {
	refused = make([]bool, len(req.Topics))
	anyRefused := false
	for i, topic := range req.Topics {
		refused[i] = r.TopicRefused(kmsg.ACLOperationRead, topic.Topic, topic.TopicID, req.Version >= 6)
		anyRefused = anyRefused || refused[i]
	}
	if !anyRefused {
		return refused, req
	}
	copied := *req
	copied.Topics = nil
	for i, topic := range req.Topics {
		if !refused[i] {
			copied.Topics = append(copied.Topics, topic)
		}
	}
	return refused, &copied
}

// txnCommitRequest decodes a TxnOffsetCommit for the group coordinator:
// v2+ carry the leader epoch, v3+ the member (generation, member and
// instance ids, checked when present), v6 names topics by id.
func txnCommitRequest(req *kmsg.TxnOffsetCommitRequest) group.TxnCommitRequest {
	commit := group.TxnCommitRequest{
		CommitRequest: group.CommitRequest{
			Group:      req.Group,
			Generation: -1,
			ByTopicID:  req.Version >= 6,
		},
		ProducerID:    req.ProducerID,
		ProducerEpoch: req.ProducerEpoch,
	}
	if req.Version >= 3 {
		commit.Generation, commit.MemberID, commit.InstanceID = req.Generation, req.MemberID, req.InstanceID
	}
	for _, topic := range req.Topics {
		committed := group.CommitTopic{Name: topic.Topic, ID: topic.TopicID}
		for _, partition := range topic.Partitions {
			leaderEpoch := partition.LeaderEpoch
			if req.Version < 2 {
				leaderEpoch = -1
			}
			committed.Partitions = append(committed.Partitions, group.CommitPartition{
				Partition: partition.Partition, Offset: partition.Offset, LeaderEpoch: leaderEpoch, Metadata: partition.Metadata,
			})
		}
		commit.Topics = append(commit.Topics, committed)
	}
	return commit
}

// txnOffsetCommitResponse encodes the group coordinator's per-partition
// errors, indexed like req's topics and partitions.
func txnOffsetCommitResponse(req *kmsg.TxnOffsetCommitRequest, errs [][]error) *kmsg.TxnOffsetCommitResponse {
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	resp.Version = req.Version
	for i, topic := range req.Topics {
		responseTopic := kmsg.TxnOffsetCommitResponseTopic{Topic: topic.Topic, TopicID: topic.TopicID}
		for j, partition := range topic.Partitions {
			responseTopic.Partitions = append(responseTopic.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{
				Partition: partition.Partition, ErrorCode: errcode.Of(errs[i][j]),
			})
		}
		resp.Topics = append(resp.Topics, responseTopic)
	}
	return resp
}

// checkTxnOffsetCommit asks the transaction coordinator whether the
// producer may commit the group's offsets in its open transaction
// ([Transactions.CheckOffsetCommit]), adding the group under KIP-890 part 2
// (v5+ at transaction.version 2). It returns the error code for every
// partition, 0 when the commit may go on.
func checkTxnOffsetCommit(ctx context.Context, r *Request, req *kmsg.TxnOffsetCommitRequest) int16 {
	if req.Group == "" || req.TransactionalID == "" {
		return kerr.InvalidRequest.Code
	}
	producer := txn.Producer{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch}
	addGroup := req.Version >= 5 && r.Transactions.Version() >= 2
	err := r.Transactions.CheckOffsetCommit(ctx, producer, req.Group, addGroup)
	return errcode.Txn(err, wire.APITxnOffsetCommit, req.Version)
}
