package broker

import (
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
)

// Internal topics: __consumer_offsets (the group coordinator's log) and
// __transaction_state (the transaction coordinator's log) are replicated
// topics of the cluster, created through the controller on first use
// (Broker.ensureInternalTopic, from FindCoordinator), whose partitions the
// coordinators are sharded by. Metadata describes them from the roles
// with IsInternal set, as Kafka does (Kafka's Topic.isInternal), and
// every API that names topics refuses what a client may not do with them:
//
//	API                         internal topic
//	Metadata                    listed once created, IsInternal set; never auto-created
//	CreateTopics                TOPIC_ALREADY_EXISTS (Broker.clusterCreateTopic)
//	Produce                     INVALID_TOPIC_EXCEPTION, as Kafka ("Cannot append to internal topic"; Broker.produceTopic)
//	DeleteTopics                INVALID_TOPIC_EXCEPTION: it would pull the coordinators' logs away (clusterDeleteTopic)
//	CreatePartitions            INVALID_TOPIC_EXCEPTION: keys map to partitions by its count (clusterCreatePartitions)
//	AlterConfigs, Incremental…  INVALID_TOPIC_EXCEPTION: retention must stay off, the coordinators replay the whole log
//	DescribeConfigs             the settings the logs are created with (Broker.internalTopicOverrides)
//
// User topics are never internal, whatever their name: like Kafka, a user
// topic may start with "__"; the two names here cannot be created as user
// topics.

// isInternalTopicName reports whether name is one of the internal topics.
func isInternalTopicName(name string) bool {
	return name == group.OffsetsTopic || name == txn.TransactionStateTopic
}
