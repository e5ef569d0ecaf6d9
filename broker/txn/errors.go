package txn

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The errors the coordinator's decisions produce. Responses carry them as
// Kafka error codes, mapped in one place (errorCode); VerifyPartition
// returns them wrapped with context. Test with errors.Is.
var (
	// ErrInvalidRequest: a malformed request (empty transactional id, a
	// half-set KIP-360 producer id/epoch pair). INVALID_REQUEST (42).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrInvalidTxnState: the request is not legal in the transaction's
	// state (EndTxn commit while PrepareAbort, EndTxn with nothing open,
	// a partition not in the transaction). INVALID_TXN_STATE (48).
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrConcurrentTransactions: the previous transaction is still
	// completing, or another request for the id is being written; retry.
	// CONCURRENT_TRANSACTIONS (51).
	ErrConcurrentTransactions = errors.New("concurrent transactions")
	// ErrProducerFenced: the request's epoch is not the current one: a
	// newer producer instance (or a timeout abort) bumped it.
	// PRODUCER_FENCED (90), or INVALID_PRODUCER_EPOCH (47) for request
	// versions older than PRODUCER_FENCED.
	ErrProducerFenced = errors.New("producer fenced")
	// ErrInvalidProducerIDMapping: the transactional id is unknown or maps
	// to another producer id. INVALID_PRODUCER_ID_MAPPING (49).
	ErrInvalidProducerIDMapping = errors.New("invalid producer id mapping")
	// ErrInvalidTransactionTimeout: the timeout is not in (0, max].
	// INVALID_TRANSACTION_TIMEOUT (50).
	ErrInvalidTransactionTimeout = errors.New("invalid transaction timeout")
	// ErrCoordinatorNotAvailable: the transaction log could not be written
	// (or producer ids could not be allocated); retriable.
	// COORDINATOR_NOT_AVAILABLE (15).
	ErrCoordinatorNotAvailable = errors.New("transaction coordinator not available")
	// ErrCoordinatorClosed: the coordinator is shut down. NOT_COORDINATOR (16).
	ErrCoordinatorClosed = errors.New("transaction coordinator closed")
	// ErrUnknownPartition: the broker says the partition does not exist.
	// UNKNOWN_TOPIC_OR_PARTITION (3).
	ErrUnknownPartition = errors.New("unknown topic or partition")
)

// Request versions from which each API knows PRODUCER_FENCED (KIP-588);
// older versions get INVALID_PRODUCER_EPOCH instead.
const (
	initProducerIDFencedVersion    = 4
	addPartitionsFencedVersion     = 2
	addOffsetsFencedVersion        = 2
	endTxnFencedVersion            = 2
	minimumVersionForFencedProduce = 1<<15 - 1 // produce never gets PRODUCER_FENCED (KAFKA-10687)
)

// errorCode maps an error to the Kafka code a response carries.
// fencedFromVersion is the first version of the request's API with
// PRODUCER_FENCED; older versions get INVALID_PRODUCER_EPOCH.
func errorCode(err error, version, fencedFromVersion int16) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrProducerFenced):
		if version < fencedFromVersion {
			return kerr.InvalidProducerEpoch.Code
		}
		return kerr.ProducerFenced.Code
	case errors.Is(err, ErrInvalidRequest):
		return kerr.InvalidRequest.Code
	case errors.Is(err, ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, ErrConcurrentTransactions):
		return kerr.ConcurrentTransactions.Code
	case errors.Is(err, ErrInvalidProducerIDMapping):
		return kerr.InvalidProducerIDMapping.Code
	case errors.Is(err, ErrInvalidTransactionTimeout):
		return kerr.InvalidTransactionTimeout.Code
	case errors.Is(err, ErrCoordinatorClosed):
		return kerr.NotCoordinator.Code
	case errors.Is(err, ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	}
	// Log append or producer id allocation failures, and anything
	// unexpected: a retriable coordinator error, as Kafka maps failed
	// transaction log appends.
	return kerr.CoordinatorNotAvailable.Code
}

// ProduceErrorCode maps an error from VerifyPartition to the error code
// of a Produce response partition. Produce never returns PRODUCER_FENCED
// (clients before KIP-588 do not know it, and Kafka keeps
// INVALID_PRODUCER_EPOCH on produce for all versions, KAFKA-10687).
func ProduceErrorCode(err error) int16 {
	return errorCode(err, 0, minimumVersionForFencedProduce)
}
