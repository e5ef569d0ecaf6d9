package api

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/auth"
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
	Shares       Shares
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
	// ForReady is For, but when this broker does not serve groupID's
	// coordinator yet it waits (up to 2 s, as FindCoordinator does) for
	// it to load here: another broker's FindCoordinator may name this one
	// before this one has taken the partition up. For the admin APIs a
	// client does not retry on NOT_COORDINATOR.
	ForReady(ctx context.Context, groupID string) *group.Coordinator
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

// Shares serves share groups (KIP-932) as the leader of their partitions:
// share sessions, acquisitions and acknowledgements, whose durable state
// lives at each group's coordinator.
type Shares interface {
	// Fetch serves a ShareFetch whose group READ was authorized; allowed
	// says whether a topic may be read; a session it opens ends when
	// closed (the connection's end) does.
	Fetch(ctx context.Context, req *kmsg.ShareFetchRequest, allowed func(topic string) bool, closed <-chan struct{}) *kmsg.ShareFetchResponse
	// Acknowledge serves a ShareAcknowledge whose group READ was
	// authorized.
	Acknowledge(ctx context.Context, req *kmsg.ShareAcknowledgeRequest, allowed func(topic string) bool) *kmsg.ShareAcknowledgeResponse
	// HeartbeatSettings are a group's share.session.timeout.ms and
	// share.heartbeat.interval.ms.
	HeartbeatSettings(groupID string) (sessionTimeout, heartbeatInterval time.Duration)
	// Lag is a share-partition's lag from its stored state: records from
	// its start offset to the high watermark not acknowledged or archived;
	// -1 when the high watermark is not known here.
	Lag(topicID [16]byte, partition int32, state group.ShareState) int64
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
	// blocks the controller hands out to this broker.
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

// Topics looks topics up and answers from the partitions this broker
// leads.
type Topics interface {
	// NameByID returns the name of the topic with the given id.
	NameByID(id [16]byte) (string, bool)
	// ListOffset answers one partition of a ListOffsets request at
	// version: the offset (and timestamp, or -1) that rp.Timestamp names —
	// latest (-1: the high watermark, or the last stable offset when
	// readCommitted), earliest (-2) and earliest-local (-4, v8+), max
	// timestamp (-3, v7+), or a time (offset -1 when no batch reaches
	// it) — and the partition's current leader epoch. Only the
	// partition's leader answers, after checking rp.CurrentLeaderEpoch as
	// Fetch does; an unknown topic or partition is
	// UNKNOWN_TOPIC_OR_PARTITION, another timestamp INVALID_REQUEST.
	ListOffset(topic string, rp kmsg.ListOffsetsRequestTopicPartition, version int16, readCommitted bool) (offset, timestamp int64, leaderEpoch int32, err error)
	// EndOffsetOfEpoch is where leader epoch epoch of a partition ended
	// (OffsetForLeaderEpoch): the epoch answered for and its end offset,
	// from the leader after checking currentLeaderEpoch as Fetch does.
	EndOffsetOfEpoch(topic string, partition, currentLeaderEpoch, epoch int32) (leaderEpoch int32, endOffset int64, err error)
	// LogDir describes the broker's one log directory and every partition
	// replica in it (DescribeLogDirs).
	LogDir() LogDir
	// DeleteRecords moves the log start offset of a partition led here to
	// offset (-1: the high watermark), waits up to timeout until every ISR
	// member's log start has followed, and returns the low watermark then
	// (the smallest log start over the ISR). Errors: OFFSET_OUT_OF_RANGE
	// past the high watermark, NOT_LEADER_OR_FOLLOWER,
	// UNKNOWN_TOPIC_OR_PARTITION, POLICY_VIOLATION for a topic whose
	// cleanup.policy lacks delete, REQUEST_TIMED_OUT when the followers
	// did not follow in time.
	DeleteRecords(ctx context.Context, topic string, partition int32, offset int64, timeout time.Duration) (lowWatermark int64, err error)
}

// LogDir is a broker's log directory as DescribeLogDirs reports it.
type LogDir struct {
	// Path is the directory.
	Path string
	// TotalBytes and UsableBytes are its file system's size and free
	// space (-1: unknown).
	TotalBytes, UsableBytes int64
	// Partitions are the replicas it holds, sorted by topic and index.
	Partitions []LogDirPartition
}

// LogDirPartition is one replica in a log directory.
type LogDirPartition struct {
	Topic     string
	Partition int32
	// Size is the bytes of its segments on disk.
	Size int64
	// OffsetLag is how far its log end is behind its high watermark (0
	// for a leader or a caught-up follower).
	OffsetLag int64
}

// Cluster describes the cluster: its brokers, topics' partitions and
// leaders, and where coordinators are. Topics and brokers are described
// as the controller's roles last said, in Metadata's own types.
type Cluster interface {
	// ClusterID is the cluster's id.
	ClusterID() string
	// ControllerID is the node id clients are told is the controller.
	ControllerID() int32
	// Brokers lists the brokers clients are told of (this broker alone,
	// or a cluster's unfenced members), each at its address of the
	// listener named listener, the one the request came in on; a broker
	// without such a listener is left out.
	Brokers(listener string) []kmsg.MetadataResponseBroker
	// AllTopics describes every topic of the cluster, sorted by name.
	AllTopics() []kmsg.MetadataResponseTopic
	// Topic describes the named topic, creating it first (through the
	// controller in a cluster) when allowCreate and
	// auto.create.topics.enable allow and it does not exist; a topic that
	// cannot be described is its error only, with its name.
	Topic(name string, allowCreate bool) kmsg.MetadataResponseTopic
	// TopicByID describes the topic with the given id and returns its
	// name; found is false for an unknown id, described as
	// UNKNOWN_TOPIC_ID with the id only.
	TopicByID(id [16]byte) (mt kmsg.MetadataResponseTopic, name string, found bool)
	// AutoCreates reports whether describing name with allowCreate would
	// create it: auto.create.topics.enable is on and no such topic exists
	// here or in the cluster.
	AutoCreates(name string) bool
	// Coordinator finds the coordinator of key, of FindCoordinator's
	// keyType 0 (a group) or 1 (a transactional id): the current leader
	// of key's partition of the internal topic (created on first use), at
	// its address of the listener named listener; err (and no node) when
	// there is none.
	Coordinator(ctx context.Context, listener string, keyType int8, key string) (nodeID int32, host string, port int32, err error)
}

// Admin creates, deletes and configures topics and describes and changes
// configs. Topics are created, deleted and grown through the controller,
// and configs changed through it, so that every broker of a cluster sees
// the same; the calls run under the broker's lifetime, not the request's.
type Admin interface {
	// CreateTopic creates one topic of a CreateTopics request (or, when
	// validateOnly, only checks it) and returns its response entry:
	// partitions, replication factor, configs and id.
	CreateTopic(rt kmsg.CreateTopicsRequestTopic, validateOnly bool) (kmsg.CreateTopicsResponseTopic, error)
	// DeleteTopic deletes the topic named name, or, when name is empty,
	// the one with id, and returns its name (empty when unknown) and id.
	DeleteTopic(name string, id [16]byte) (string, [16]byte, error)
	// CreatePartitions grows one topic of a CreatePartitions request to
	// its new partition count (or, when validateOnly, only checks it).
	CreatePartitions(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) error
	// ReplaceTopicConfigs replaces the config overrides of topic name with
	// overrides, once validated (AlterConfigs); validateOnly only checks.
	ReplaceTopicConfigs(name string, overrides map[string]string, validateOnly bool) error
	// ChangeTopicConfigs applies IncrementalAlterConfigs operations, in
	// order, to the config overrides of topic name and sets the result,
	// once validated; validateOnly only checks.
	ChangeTopicConfigs(name string, changes []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error
	// DescribeTopicConfigs describes the configs of topic name whose names
	// wanted accepts, with their synonyms and documentation if asked.
	DescribeTopicConfigs(name string, wanted func(config string) bool, synonyms, documentation bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error)
	// DescribeBrokerConfigs describes the configs of the broker resource
	// name (this broker's id, or "" for the cluster default) as
	// DescribeTopicConfigs does.
	DescribeBrokerConfigs(name string, wanted func(config string) bool, synonyms, documentation bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error)
	// ReplaceGroupConfigs replaces the dynamic configs of group with
	// configs, once validated (AlterConfigs on a GROUP resource); the
	// group need not exist; validateOnly only checks.
	ReplaceGroupConfigs(group string, configs map[string]string, validateOnly bool) error
	// ChangeGroupConfigs applies IncrementalAlterConfigs operations, in
	// order, to the dynamic configs of group and sets the result, once
	// validated; validateOnly only checks.
	ChangeGroupConfigs(group string, changes []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error
	// DescribeGroupConfigs describes the configs of group (set or not)
	// as DescribeTopicConfigs does.
	DescribeGroupConfigs(group string, wanted func(config string) bool, synonyms, documentation bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error)
	// AlterReassignment starts (target non-nil) or cancels (nil) the
	// reassignment of one partition through the controller; with
	// allowReplicationFactorChange false a target of another size than
	// the partition's replica set is INVALID_REPLICATION_FACTOR.
	AlterReassignment(topic string, partition int32, target []int32, allowReplicationFactorChange bool) error
	// Reassignments lists the reassignments in progress, of every
	// partition (wanted nil) or of the named ones (topic → partitions).
	Reassignments(wanted map[string][]int32) []PartitionReassignment
	// ElectLeader elects the preferred replica of one partition (or, with
	// unclean, any live replica of a leaderless one) through the
	// controller.
	ElectLeader(topic string, partition int32, unclean bool) error
}

// PartitionReassignment is one reassignment in progress.
type PartitionReassignment struct {
	Topic     string
	Partition int32
	// Replicas is the current replica set: the target first, then the
	// replicas being removed.
	Replicas         []int32
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// ACLs lists, creates and deletes access control entries. The handlers
// call it only with an authorizer configured ([Authorizer.Enabled]; they
// answer SECURITY_DISABLED without one); without one, Create and Delete
// fail every binding and filter with errcode.ErrSecurityDisabled and
// Describe finds nothing.
type ACLs interface {
	// Create adds bindings, durably, and returns each one's error in
	// order (nil: created, or already there).
	Create(bindings []acl.Binding) []error
	// Delete removes the bindings each filter selects, durably, and
	// returns them per filter.
	Delete(filters []acl.Filter) []acl.DeleteResult
	// Describe returns the bindings filter selects.
	Describe(filter acl.Filter) []acl.Binding
}

// Credentials lists and changes SCRAM credentials, in this broker's
// credential store.
type Credentials interface {
	// Describe lists the credentials of users (of every user that has
	// some when users is empty).
	Describe(users []string) []auth.DescribeResult
	// Alter deletes and upserts credentials, validated, and writes the
	// valid changes together, durably.
	Alter(deletions []auth.Deletion, upsertions []auth.Upsertion) []auth.AlterResult
}
