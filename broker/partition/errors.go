package partition

import "errors"

// Sentinel errors of a partition. The broker maps each to its Kafka error
// code in its one error table (they are the broker's own sentinels, by
// other names there), so what a client sees is decided in one place.
var (
	// ErrUnknownTopicOrPartition: the partition was closed or deleted
	// (UNKNOWN_TOPIC_OR_PARTITION).
	ErrUnknownTopicOrPartition = errors.New("unknown topic or partition")
	// ErrMessageTooLarge: a client's batch is larger than
	// max.message.bytes (MESSAGE_TOO_LARGE).
	ErrMessageTooLarge = errors.New("record batch larger than max.message.bytes")
	// ErrInvalidRecord: a client's batch breaks a rule of the append path
	// (INVALID_RECORD).
	ErrInvalidRecord = errors.New("invalid record batch")
	// ErrNotEnoughReplicas: the ISR is smaller than min.insync.replicas
	// (NOT_ENOUGH_REPLICAS).
	ErrNotEnoughReplicas = errors.New("fewer in-sync replicas than min.insync.replicas")
	// ErrNotEnoughReplicasAfterAppend: an acks=all batch was appended and
	// replicated, but the ISR shrank below min.insync.replicas meanwhile
	// (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
	ErrNotEnoughReplicasAfterAppend = errors.New("appended, but the in-sync replicas fell below min.insync.replicas")
	// ErrNotLeader: this broker does not lead the partition
	// (NOT_LEADER_OR_FOLLOWER).
	ErrNotLeader = errors.New("this broker is not the partition's leader")
	// ErrRequestTimedOut: an acks=all batch was not replicated in time
	// (REQUEST_TIMED_OUT).
	ErrRequestTimedOut = errors.New("request timed out")
	// ErrFencedLeaderEpoch: a request names an older leader epoch
	// (FENCED_LEADER_EPOCH).
	ErrFencedLeaderEpoch = errors.New("leader epoch older than the current one")
	// ErrUnknownLeaderEpoch: a request names a newer leader epoch
	// (UNKNOWN_LEADER_EPOCH).
	ErrUnknownLeaderEpoch = errors.New("leader epoch newer than the current one")
	// ErrShuttingDown: a wait ended because the partition closed or its
	// caller went away (LEADER_NOT_AVAILABLE).
	ErrShuttingDown = errors.New("broker is shutting down")
	// ErrStorage: the disk failed the partition (KAFKA_STORAGE_ERROR).
	ErrStorage = errors.New("storage error")
	// ErrInvalidTxnState: a transactional batch's transaction ended while
	// it was being verified (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrDiverged: the leader's batches do not continue the local log; the
	// fetcher truncates again.
	ErrDiverged = errors.New("fetched batches do not continue the log")
	// ErrStaleFetch: a fetch answer for a role the partition no longer has.
	ErrStaleFetch = errors.New("fetch answer for an old leader epoch")
)
