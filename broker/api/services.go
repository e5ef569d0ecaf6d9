package api

import (
	"context"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/txn"
)

// Services are the parts of the broker a handler may use, each a narrow
// interface the broker implements. The broker builds one Services at
// start; every field is set (Metrics may be nil: no metrics configured).
type Services struct {
	Groups       Groups
	Transactions Transactions
	Topics       Topics
	Cluster      Cluster
	Admin        Admin
	ACLs         ACLs
	Credentials  Credentials
	// Metrics counts what handlers see; nil when metrics are off.
	Metrics *metrics.Broker
}

// Groups finds the group coordinators: each group lives on the shard of its
// __consumer_offsets partition, on the broker that leads it.
type Groups interface {
	// For returns the coordinator serving groupID here, or one that
	// refuses every call with NOT_COORDINATOR or
	// COORDINATOR_LOAD_IN_PROGRESS.
	For(groupID string) *group.Coordinator
	// DuringShutdown turns a REBALANCE_IN_PROGRESS answer into
	// NOT_COORDINATOR while the broker shuts down, so clients look for the
	// coordinator again instead of rejoining here.
	DuringShutdown(err error) error
}

// Transactions finds the transaction coordinators: each transactional id
// lives on the shard of its __transaction_state partition.
type Transactions interface {
	// For returns the coordinator serving transactionalID here, or one
	// that refuses every call (NOT_COORDINATOR,
	// COORDINATOR_LOAD_IN_PROGRESS).
	For(transactionalID string) *txn.Coordinator
	// Version is the finalized transaction.version (2 is KIP-890 part 2).
	Version() int16
	// NextProducerID allocates a new producer id for an idempotent
	// producer (InitProducerId without a transactional id) from the
	// block reserved durably in the data directory.
	NextProducerID() (int64, error)
	// List lists the transactions of every coordinator serving here (in
	// a cluster, those of the __transaction_state partitions led here),
	// by transactional id.
	List(filter txn.ListFilter) (txn.ListResult, error)
	// CheckOffsetCommit asks the transaction coordinator of producer
	// (here or on another broker) whether it may commit groupID's
	// offsets in its open transaction: the group's __consumer_offsets
	// partition must be in it (AddOffsetsToTxn). With addGroup (KIP-890
	// part 2) a group not in the transaction yet is added instead.
	CheckOffsetCommit(ctx context.Context, producer txn.Producer, groupID string, addGroup bool) error
	// Producers lists the producers whose state partition of topic keeps
	// here, by producer id; the topic's or partition's absence is an
	// error (UNKNOWN_TOPIC_OR_PARTITION).
	Producers(topic string, partition int32) ([]producers.ProducerInfo, error)
	// WriteMarkers writes a transaction marker (COMMIT when commit, else
	// ABORT) of producerID at producerEpoch, from a coordinator at
	// coordinatorEpoch, to each of partitions led here and waits for each
	// to be durable (and, replicated, in the ISR). errs[i] is the result
	// of partitions[i]: nil once it has the marker, or when the marker
	// was stale. ctx ends the waits when the requester goes away; a
	// broker shutting down lets them finish.
	WriteMarkers(ctx context.Context, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, partitions []txn.TopicPartition) (errs []error)
}

// Topics looks topics up.
type Topics interface {
	// NameByID returns the name of the topic with the given id.
	NameByID(id [16]byte) (string, bool)
}

// Cluster describes the cluster: its brokers, topics' partitions and
// leaders, and where coordinators are.
type Cluster interface{}

// Admin creates, deletes and configures topics and describes and changes
// configs.
type Admin interface{}

// ACLs lists, creates and deletes access control entries.
type ACLs interface{}

// Credentials lists and changes SCRAM credentials.
type Credentials interface{}
