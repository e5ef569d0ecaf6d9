package txn

import "errors"

// Sentinel errors of the coordinator. Every error an entry point returns
// wraps exactly one of them with %w and some context; test with
// errors.Is. The broker maps them to Kafka error codes in one table
// (package broker/errcode, with its Txn), which also decides the
// codes that depend on the request's version (PRODUCER_FENCED). The Kafka
// error each one stands for is named in its comment.
var (
	// ErrInvalidRequest: a malformed request (empty transactional id or
	// group, a half-set KIP-360 producer id/epoch pair). INVALID_REQUEST.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrInvalidTxnState: the request is not legal in the transaction's
	// state (EndTxn commit while PrepareAbort, EndTxn with nothing open,
	// a partition not in the transaction). INVALID_TXN_STATE.
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrConcurrentTransactions: the previous transaction is still
	// completing; retry. CONCURRENT_TRANSACTIONS.
	ErrConcurrentTransactions = errors.New("concurrent transactions")
	// ErrProducerFenced: the request's epoch is not the current one: a
	// newer producer instance (or a timeout abort) bumped it.
	// PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for request versions
	// older than PRODUCER_FENCED (KIP-588) and for Produce.
	ErrProducerFenced = errors.New("producer fenced")
	// ErrInvalidProducerIDMapping: the transactional id is unknown or maps
	// to another producer id. INVALID_PRODUCER_ID_MAPPING.
	ErrInvalidProducerIDMapping = errors.New("invalid producer id mapping")
	// ErrInvalidTransactionTimeout: the timeout is not in (0, max].
	// INVALID_TRANSACTION_TIMEOUT.
	ErrInvalidTransactionTimeout = errors.New("invalid transaction timeout")
	// ErrCoordinatorNotAvailable: the transaction log could not be written
	// (or producer ids could not be allocated); retriable.
	// COORDINATOR_NOT_AVAILABLE.
	ErrCoordinatorNotAvailable = errors.New("transaction coordinator not available")
	// ErrCoordinatorClosed: the coordinator is shut down. NOT_COORDINATOR.
	ErrCoordinatorClosed = errors.New("transaction coordinator closed")
	// ErrCoordinatorLoadInProgress: the broker became the coordinator of
	// the id's partition and is still loading it.
	// COORDINATOR_LOAD_IN_PROGRESS.
	ErrCoordinatorLoadInProgress = errors.New("transaction coordinator loading")
	// ErrUnknownPartition: the broker says the partition does not exist.
	// UNKNOWN_TOPIC_OR_PARTITION.
	ErrUnknownPartition = errors.New("unknown topic or partition")
	// ErrOperationNotAttempted: the partition was not added because
	// another partition of the same request is unknown.
	// OPERATION_NOT_ATTEMPTED.
	ErrOperationNotAttempted = errors.New("operation not attempted")
	// ErrTransactionalIDNotFound: DescribeTransactions of an id the
	// coordinator does not hold. TRANSACTIONAL_ID_NOT_FOUND.
	ErrTransactionalIDNotFound = errors.New("transactional id not found")
	// ErrInvalidRegularExpression: ListTransactions' pattern does not
	// compile. INVALID_REGULAR_EXPRESSION.
	ErrInvalidRegularExpression = errors.New("invalid regular expression")
)
