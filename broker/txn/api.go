package txn

// This file holds the coordinator's typed inputs and outputs. They carry
// what a request means, not how a Kafka version encodes it: the broker's
// per-API files decode a request into them (applying the version's
// defaults) and encode the answer, and the error code of each sentinel for
// the request's version, in the broker's error table.

// Producer is the producer a transactional request comes from: its
// transactional id, with the producer id and epoch it holds.
type Producer struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
}

// ProducerIDEpoch is a producer id with an epoch.
type ProducerIDEpoch struct {
	ProducerID int64
	Epoch      int16
}

// InitRequest is one InitProducerId with a transactional id.
type InitRequest struct {
	TransactionalID string
	// TimeoutMs is the transaction timeout the producer asks for
	// (transaction.timeout.ms); it must be in (0, Config.MaxTimeout].
	TimeoutMs int32
	// Current is the producer id and epoch the producer holds, when it
	// asks to bump its own epoch (KIP-360, InitProducerId v3+ with either
	// field set); nil for a new producer instance.
	Current *ProducerIDEpoch
}

// EndRequest is one EndTxn.
type EndRequest struct {
	Producer
	// Commit commits the open transaction; false aborts it.
	Commit bool
	// TransactionVersion2 is KIP-890 part 2 (EndTxn v5+ on a broker at
	// transaction.version 2): Prepare* bumps the epoch, the result is the
	// producer id and epoch to continue with, and an abort with nothing
	// open still bumps the epoch.
	TransactionVersion2 bool
}

// ListFilter selects the transactional ids ListTransactions reports; zero
// fields filter nothing.
type ListFilter struct {
	// States are state names as State.String gives them; names that are
	// no state are answered in ListResult.UnknownStates.
	States []string
	// ProducerIDs keeps the ids whose current producer id is listed.
	ProducerIDs []int64
	// MinDurationMs, when set, keeps only open transactions running
	// longer than this many milliseconds (ListTransactions v1+).
	MinDurationMs *int64
	// Pattern, when not empty, is a regular expression the transactional
	// id must match (ListTransactions v2+).
	Pattern string
}

// ListResult is ListTransactions' answer, sorted by transactional id.
type ListResult struct {
	Transactions  []Listing
	UnknownStates []string
}

// Listing is one listed transactional id.
type Listing struct {
	TransactionalID string
	ProducerID      int64
	State           State
}
