package broker

import (
	"crypto/sha256"
	"fmt"
	"strconv"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
)

// Internal topics: __consumer_offsets (the group coordinator's log,
// opened by openGroups) and __transaction_state (the transaction
// coordinator's log, opened by openTransactions). Their partitions are
// storage logs owned by the coordinators, not partition values, so they are
// neither in topics.json nor in Broker.topics; this file is where the
// broker describes them to clients, as Kafka does (Kafka's
// Topic.isInternal), and where every API that names topics learns what a
// client may do with them:
//
//	API                         internal topic
//	Metadata                    listed, IsInternal set (all topics, by name, by id); never auto-created: they always exist
//	CreateTopics                TOPIC_ALREADY_EXISTS, as Kafka once they exist
//	Produce                     INVALID_TOPIC_EXCEPTION, as Kafka ("Cannot append to internal topic")
//	DeleteTopics                INVALID_TOPIC_EXCEPTION: Kafka's controller would delete it; here that would pull the coordinator's log away
//	CreatePartitions            INVALID_TOPIC_EXCEPTION: groups and transactional ids map to partitions by a count fixed at first start
//	AlterConfigs, Incremental…  INVALID_TOPIC_EXCEPTION: retention must stay off, the coordinators replay the whole log
//	DescribeConfigs             the settings the logs are opened with
//	Fetch, ListOffsets, …       UNKNOWN_TOPIC_OR_PARTITION: reading the coordinators' logs directly is not served
//
// In a cluster (Config.Replication with a TopicController) the table is
// empty: the internal topics are replicated topics of the cluster,
// created through the controller on first use (Broker.ensureInternalTopic),
// described from the roles with IsInternal set; clients still cannot
// create, delete, grow or produce to them (Broker.clusterCreateTopic,
// clusterDeleteTopic, clusterCreatePartitions, Broker.produceTopic).
//
// User topics are never internal, whatever their name: like Kafka, a user
// topic may start with "__". A name listed here cannot be created as a
// user topic (createTopic refuses it, and loadTopics refuses a topics.json
// that holds one).

// internalTopic describes one internal topic. Broker.internalTopics is
// set by loadTopics before any connection and never changes.
type internalTopic struct {
	name string
	// id is derived from the cluster id and the name, so it is the same
	// on every start without being stored (see internalTopicID).
	id         [16]byte
	partitions int32
	// config holds, as overrides, the settings the coordinator opens the
	// logs with (compacted, retention off, its own segment size);
	// DescribeConfigs shows them and the log cleaner reads them.
	config *topicConfig
	// owner names the coordinator in error messages.
	owner string
}

// newInternalTopics builds the table, sorted by name (Metadata merges it
// with the sorted user topics); clusterID must be known.
func (b *Broker) newInternalTopics() []internalTopic {
	if b.clusterGroups() {
		return nil // replicated topics of the cluster (Broker.ensureInternalTopic)
	}
	internal := func(name string, partitions int32, segmentBytes int32, owner string) internalTopic {
		return internalTopic{
			name:       name,
			id:         internalTopicID(b.clusterID, name),
			partitions: partitions,
			config: b.config.newTopicConfig(map[string]string{
				"cleanup.policy":  "compact",
				"retention.ms":    "-1",
				"retention.bytes": "-1",
				"segment.bytes":   strconv.Itoa(int(segmentBytes)),
			}),
			owner: owner,
		}
	}
	return []internalTopic{
		internal(group.OffsetsTopic, b.config.settings.OffsetsTopicPartitions, b.config.settings.OffsetsSegmentBytes, "the group coordinator"),
		internal(txn.TransactionStateTopic, b.config.settings.TransactionStatePartitions, b.config.settings.TransactionStateSegmentBytes, "the transaction coordinator"),
	}
}

// internalTopicID is the first 16 bytes of SHA-256 over the cluster id and
// the topic name. Kafka gives internal topics random ids when it creates
// them; ours exist from the start and are not stored, so the id is derived,
// stable across restarts and distinct between clusters.
func internalTopicID(clusterID, name string) [16]byte {
	sum := sha256.Sum256([]byte("exactly internal topic\x00" + clusterID + "\x00" + name))
	return [16]byte(sum[:16])
}

// isInternalTopicName reports whether name is one of the internal topics.
func isInternalTopicName(name string) bool {
	return name == group.OffsetsTopic || name == txn.TransactionStateTopic
}

// internalTopicByName returns the internal topic, or nil.
func (b *Broker) internalTopicByName(name string) *internalTopic {
	for i := range b.internalTopics {
		if b.internalTopics[i].name == name {
			return &b.internalTopics[i]
		}
	}
	return nil
}

// internalTopicByID returns the internal topic, or nil.
func (b *Broker) internalTopicByID(id [16]byte) *internalTopic {
	for i := range b.internalTopics {
		if b.internalTopics[i].id == id {
			return &b.internalTopics[i]
		}
	}
	return nil
}

// refuse is the error for a client operation (produce, delete, ...) on it.
func (it *internalTopic) refuse(operation string) error {
	return fmt.Errorf("%w: %s belongs to %s; clients cannot %s it", errInternalTopic, it.name, it.owner, operation)
}
