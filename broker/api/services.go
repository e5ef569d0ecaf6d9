package api

import (
	"context"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/metrics"
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
	// List lists the groups of every coordinator serving here that pass
	// filter, sorted by group id (in a cluster, the groups of the
	// partitions led here; as in Kafka, a client asks every broker).
	List(filter group.ListFilter) ([]group.GroupListing, error)
	// Delete deletes each group (empty ones only) and its offsets at its
	// coordinator; errors are indexed like groupIDs.
	Delete(ctx context.Context, groupIDs []string) []error
	// TopicName returns the name of the topic with this id as the group
	// coordinators resolve ids: a topic with a partition here.
	TopicName(id [16]byte) (string, bool)
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
