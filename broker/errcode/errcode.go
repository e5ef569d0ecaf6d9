// Package errcode maps the broker's Go errors to Kafka error codes, in one
// table. Kafka errors are data in responses: handlers (the connection's
// own and those of package [github.com/exactly-eos/exactly/broker/api])
// produce Go errors — the sentinels below, or those of partition, storage,
// wire, producers, acl, auth and the group and transaction coordinators —
// and [Of] maps them to codes. Codes that depend on the request's version
// are decided here too ([Produce], [Txn]).
package errcode

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/auth"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/share"
	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// Sentinel errors of the broker's handlers; each maps to one Kafka error.
// Those a partition returns are package partition's sentinels under the
// broker's names (the same values), so the table below maps them too.
var (
	ErrUnknownTopic        = partition.ErrUnknownTopicOrPartition
	ErrUnknownTopicID      = errors.New("unknown topic id")
	ErrInvalidTopic        = errors.New("invalid topic name")
	ErrInternalTopic       = errors.New("internal topic")
	ErrTopicExists         = errors.New("topic already exists")
	ErrInvalidPartitions   = errors.New("invalid number of partitions")
	ErrInvalidReplication  = errors.New("invalid replication factor")
	ErrInvalidAssignment   = errors.New("invalid replica assignment")
	ErrInvalidConfig       = errors.New("invalid config")
	ErrMessageTooLarge     = partition.ErrMessageTooLarge
	ErrInvalidRecord       = partition.ErrInvalidRecord
	ErrInvalidRequiredAcks = errors.New("acks must be -1, 0 or 1")
	ErrNotEnoughReplicas   = partition.ErrNotEnoughReplicas
	// ErrNotEnoughReplicasAfterAppend: an acks=all batch was appended and
	// replicated, but the ISR shrank below min.insync.replicas meanwhile.
	ErrNotEnoughReplicasAfterAppend = partition.ErrNotEnoughReplicasAfterAppend
	ErrNotLeader                    = partition.ErrNotLeader
	ErrRequestTimedOut              = partition.ErrRequestTimedOut
	ErrOffsetOutOfRange             = errors.New("offset out of range")
	ErrFencedLeaderEpoch            = partition.ErrFencedLeaderEpoch
	ErrUnknownLeaderEpoch           = partition.ErrUnknownLeaderEpoch
	ErrInvalidRequest               = errors.New("invalid request")
	ErrShuttingDown                 = partition.ErrShuttingDown
	ErrStorage                      = partition.ErrStorage
	ErrInvalidTxnState              = partition.ErrInvalidTxnState
	ErrNoCoordinator                = errors.New("coordinator not available")
	// ErrPolicyViolation: a request a topic's settings forbid (records
	// deleted from a compacted topic).
	ErrPolicyViolation = errors.New("policy violation")
	// ErrUnknownCoordinatorType: a FindCoordinator key type that is
	// neither a group (0) nor a transactional id (1).
	ErrUnknownCoordinatorType = errors.New("unknown coordinator key type")
)

// Authorization refusals, one per resource type: the resource type decides
// the code.
var (
	ErrTopicAuthorization           = errors.New("not authorized to access the topic")
	ErrGroupAuthorization           = errors.New("not authorized to access the group")
	ErrTransactionalIDAuthorization = errors.New("not authorized to use the transactional id")
	ErrClusterAuthorization         = errors.New("not authorized for the cluster operation")
	ErrSecurityDisabled             = errors.New("no authorizer is configured on the broker (authorizer.class.name)")
)

// Of maps an error to the Kafka error code a response carries; nil
// is 0 (NONE). Unrecognised errors are UNKNOWN_SERVER_ERROR.
func Of(err error) int16 {
	if err == nil {
		return 0
	}
	for _, m := range codes {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	// A TopicController (ReplicationConfig.Topics) names the Kafka error
	// itself.
	var kafkaErr *kerr.Error
	if errors.As(err, &kafkaErr) {
		return kafkaErr.Code
	}
	return kerr.UnknownServerError.Code
}

// codes is the one table, searched in order with errors.Is.
var codes = []struct {
	err  error
	code *kerr.Error
}{
	{ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{ErrUnknownTopicID, kerr.UnknownTopicID},
	{ErrInvalidTopic, kerr.InvalidTopicException},
	// Kafka refuses client writes to internal topics with
	// INVALID_TOPIC_EXCEPTION; the table above internalTopic lists what
	// else is refused.
	{ErrInternalTopic, kerr.InvalidTopicException},
	{ErrTopicExists, kerr.TopicAlreadyExists},
	{ErrInvalidPartitions, kerr.InvalidPartitions},
	{ErrInvalidReplication, kerr.InvalidReplicationFactor},
	{ErrInvalidAssignment, kerr.InvalidReplicaAssignment},
	{ErrInvalidConfig, kerr.InvalidConfig},
	{ErrMessageTooLarge, kerr.MessageTooLarge},
	{ErrInvalidRecord, kerr.InvalidRecord},
	{ErrInvalidRequiredAcks, kerr.InvalidRequiredAcks},
	{ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
	{ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{ErrNotLeader, kerr.NotLeaderForPartition},
	{ErrRequestTimedOut, kerr.RequestTimedOut},
	{ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{ErrPolicyViolation, kerr.PolicyViolation},
	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{ErrInvalidRequest, kerr.InvalidRequest},
	{ErrShuttingDown, kerr.LeaderNotAvailable},
	{ErrStorage, kerr.KafkaStorageError},
	{ErrInvalidTxnState, kerr.InvalidTxnState},
	{ErrNoCoordinator, kerr.CoordinatorNotAvailable},
	{ErrUnknownCoordinatorType, kerr.InvalidRequest},
	// Authorization (the broker's authorizationRules).
	{ErrTopicAuthorization, kerr.TopicAuthorizationFailed},
	{ErrGroupAuthorization, kerr.GroupAuthorizationFailed},
	{ErrTransactionalIDAuthorization, kerr.TransactionalIDAuthorizationFailed},
	{ErrClusterAuthorization, kerr.ClusterAuthorizationFailed},
	{ErrSecurityDisabled, kerr.SecurityDisabled},
	{acl.ErrInvalid, kerr.InvalidRequest},
	// Idempotent producers (producers' doc has the table). A fenced
	// (older-epoch) batch is INVALID_PRODUCER_EPOCH in every Produce
	// version: Kafka 2.7 (KIP-588) moved PRODUCER_FENCED (90) to the
	// coordinator APIs and answers Produce with INVALID_PRODUCER_EPOCH,
	// which clients treat as abortable rather than fatal.
	{producers.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{producers.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{producers.ErrUnknownProducerID, kerr.UnknownProducerID},
	{producers.ErrInvalidBatch, kerr.InvalidRecord},
	{producers.ErrCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	// A batch that fails structural or CRC checks is CORRUPT_MESSAGE.
	{wire.ErrBatchCRC, kerr.CorruptMessage},
	// Produce v3+ must carry magic 2; Kafka calls anything else INVALID_RECORD.
	{wire.ErrBatchMagic, kerr.InvalidRecord},
	{wire.ErrBatchTruncated, kerr.CorruptMessage},
	{wire.ErrBatchLength, kerr.CorruptMessage},

	// Group coordinator (broker/group): its sentinels, each the Kafka
	// error clients have always seen for it.
	{group.ErrInvalidGroupID, kerr.InvalidGroupID},
	{group.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
	{group.ErrInvalidRebalanceTimeout, kerr.InvalidRequest},
	{group.ErrInconsistentProtocol, kerr.InconsistentGroupProtocol},
	{group.ErrNotCoordinator, kerr.NotCoordinator},
	{group.ErrCoordinatorLoadInProgress, kerr.CoordinatorLoadInProgress},
	{group.ErrUnknownMember, kerr.UnknownMemberID},
	{group.ErrMemberIDRequired, kerr.MemberIDRequired},
	{group.ErrFencedInstance, kerr.FencedInstanceID},
	{group.ErrRebalanceInProgress, kerr.RebalanceInProgress},
	{group.ErrIllegalGeneration, kerr.IllegalGeneration},
	// A failed __consumer_offsets append is retriable for the client.
	{group.ErrCoordinatorUnavailable, kerr.CoordinatorNotAvailable},
	{group.ErrGroupNotFound, kerr.GroupIDNotFound},
	{group.ErrNonEmptyGroup, kerr.NonEmptyGroup},
	{group.ErrSubscribedTopic, kerr.GroupSubscribedToTopic},
	{group.ErrUnknownTopicID, kerr.UnknownTopicID},
	{group.ErrMetadataTooLarge, kerr.OffsetMetadataTooLarge},
	{group.ErrUnstableOffset, kerr.UnstableOffsetCommit},
	{group.ErrInvalidRequest, kerr.InvalidRequest},
	{group.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},
	{group.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{group.ErrFencedStateEpoch, kerr.FencedStateEpoch},
	{share.ErrInvalidRecordState, kerr.InvalidRecordState},
	{share.ErrInvalidRequest, kerr.InvalidRequest},
	{group.ErrStaleMemberEpoch, kerr.StaleMemberEpoch},
	{group.ErrUnreleasedInstance, kerr.UnreleasedInstanceID},
	{group.ErrUnsupportedAssignor, kerr.UnsupportedAssignor},
	{group.ErrInvalidRegex, kerr.InvalidRegularExpression},
	{group.ErrUnsupportedVersion, kerr.UnsupportedVersion},

	// Transaction coordinator (broker/txn). A fenced producer is
	// INVALID_PRODUCER_EPOCH here, the code Produce and the versions
	// before KIP-588 get; [Txn] answers PRODUCER_FENCED from the
	// versions in producerFencedSince.
	{txn.ErrProducerFenced, kerr.InvalidProducerEpoch},
	{txn.ErrInvalidRequest, kerr.InvalidRequest},
	{txn.ErrInvalidTxnState, kerr.InvalidTxnState},
	{txn.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
	{txn.ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
	{txn.ErrInvalidTransactionTimeout, kerr.InvalidTransactionTimeout},
	// A failed __transaction_state append or producer id allocation is
	// retriable for the client.
	{txn.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{txn.ErrCoordinatorClosed, kerr.NotCoordinator},
	{txn.ErrCoordinatorLoadInProgress, kerr.CoordinatorLoadInProgress},
	{txn.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{txn.ErrOperationNotAttempted, kerr.OperationNotAttempted},
	{txn.ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound},
	{txn.ErrInvalidRegularExpression, kerr.InvalidRegularExpression},

	// SCRAM credentials (broker/auth), as Kafka's controller answers
	// AlterUserScramCredentials and DescribeUserScramCredentials.
	{auth.ErrUnacceptableCredential, kerr.UnacceptableCredential},
	{auth.ErrUnsupportedMechanism, kerr.UnsupportedSaslMechanism},
	{auth.ErrNotFound, kerr.ResourceNotFound},
	{auth.ErrDuplicate, kerr.DuplicateResource},
	{auth.ErrStorage, kerr.KafkaStorageError},
}

// producerFencedSince is, per API, the first request version that knows
// PRODUCER_FENCED (KIP-588, Kafka 2.7); older versions get
// INVALID_PRODUCER_EPOCH for a fenced producer. Produce is not listed: it
// answers INVALID_PRODUCER_EPOCH in every version (KAFKA-10687), which
// clients treat as abortable rather than fatal.
var producerFencedSince = map[int16]int16{
	wire.APIInitProducerID:     4,
	wire.APIAddPartitionsToTxn: 2,
	wire.APIAddOffsetsToTxn:    2,
	wire.APIEndTxn:             2,
	wire.APITxnOffsetCommit:    3,
}

// Txn is [Of] for a response of a transactional API (key
// api) of the given request version: a fenced producer is PRODUCER_FENCED
// from producerFencedSince on, and an error the table does not know is
// COORDINATOR_NOT_AVAILABLE (retriable), as Kafka maps a failed
// transaction log append.
func Txn(err error, api, version int16) int16 {
	code := Of(err)
	switch {
	case code == kerr.UnknownServerError.Code:
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, txn.ErrProducerFenced):
		if since, ok := producerFencedSince[api]; ok && version >= since {
			return kerr.ProducerFenced.Code
		}
	}
	return code
}

// Produce is [Of] for a Produce partition of the given
// request version. UNKNOWN_PRODUCER_ID exists from Produce v5 (Kafka 1.0);
// older versions get OUT_OF_ORDER_SEQUENCE_NUMBER, as Kafka 0.11 answered.
// Clients treat both alike (franz-go's sink.handleReqRespBatch resets the
// producer id or bumps the epoch when the log start moved past its last
// acknowledged offset).
func Produce(err error, version int16) int16 {
	code := Of(err)
	if code == kerr.UnknownProducerID.Code && version < 5 {
		return kerr.OutOfOrderSequenceNumber.Code
	}
	return code
}

// Message is the optional error message a response may carry.
func Message(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
