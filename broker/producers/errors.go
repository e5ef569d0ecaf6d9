package producers

import "errors"

// The errors Check and CheckMarker return. Each is returned wrapped with
// context (producer id, epochs, sequences); test with errors.Is. The broker
// maps them to Kafka error codes in one place (package broker/errcode).
var (
	// ErrOutOfOrderSequence: the batch's first sequence is not the
	// successor of the producer's last sequence (a gap, or an old
	// sequence no longer in the 5-batch window), or a new epoch does not
	// start at sequence 0. Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER (45).
	ErrOutOfOrderSequence = errors.New("out of order sequence number")

	// ErrInvalidProducerEpoch: the batch's epoch is older than the
	// producer's current epoch on this partition (a zombie). Kafka:
	// INVALID_PRODUCER_EPOCH (47), or PRODUCER_FENCED (90) where the
	// request version has it.
	ErrInvalidProducerEpoch = errors.New("invalid producer epoch")

	// ErrUnknownProducerID: the partition holds no state for the
	// producer and the batch does not start at sequence 0. Kafka:
	// UNKNOWN_PRODUCER_ID (59); see "Rules" in the package doc for why this
	// package rejects instead of accepting as Kafka 2.5–4.4 did.
	ErrUnknownProducerID = errors.New("unknown producer id")

	// ErrInvalidBatch: the batch carries a producer id but a negative
	// epoch or sequence. Kafka: INVALID_RECORD (87).
	ErrInvalidBatch = errors.New("invalid producer fields in batch")

	// ErrCoordinatorFenced: a transaction marker carries a coordinator
	// epoch older than one already seen for this producer. Kafka:
	// TRANSACTION_COORDINATOR_FENCED (52).
	ErrCoordinatorFenced = errors.New("transaction coordinator fenced")
)
