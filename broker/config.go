package broker

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/internal/suggest"
)

// This file is the one table of settings the broker understands: broker
// settings (server.properties keys, by Kafka's names) and topic settings
// (CreateTopics / AlterConfigs keys). Each entry carries its default, its
// documentation, its type as DescribeConfigs reports it and its validation.
// Unknown keys are rejected everywhere.

// settingKind is the type of a setting, numbered as Kafka's ConfigType in
// DescribeConfigs v3+ responses.
type settingKind int8

const (
	kindBoolean settingKind = 1
	kindString  settingKind = 2
	kindInt     settingKind = 3
	kindShort   settingKind = 4
	kindLong    settingKind = 5
	kindDouble  settingKind = 6
	kindList    settingKind = 7
	// kindPassword is a secret: DescribeConfigs reports it as sensitive,
	// without its value.
	kindPassword settingKind = 9
)

// setting describes one configuration key.
type setting struct {
	name string
	// defaultValue is the value when nothing sets it; null marks settings
	// whose default is "unset" (Kafka's null), for which another key decides.
	defaultValue string
	null         bool
	kind         settingKind
	doc          string
	// validate checks a value beyond its kind; nil means the kind is enough.
	validate func(string) error
}

// brokerSettings are the server.properties keys the broker accepts.
var brokerSettings = []setting{
	{name: "auto.create.topics.enable", defaultValue: "true", kind: kindBoolean,
		doc: "Create a topic when a client produces to it or asks Metadata for it (with allow_auto_topic_creation)."},
	{name: "num.partitions", defaultValue: "1", kind: kindInt, validate: atLeast(1),
		doc: "Partitions of an auto-created topic, and of CreateTopics with num_partitions -1."},
	{name: "default.replication.factor", defaultValue: "1", kind: kindShort, validate: exactly(1),
		doc: "Replication factor of auto-created topics; a single broker serves only 1."},
	{name: "min.insync.replicas", defaultValue: "1", kind: kindInt, validate: atLeast(1),
		doc: "Replicas that must have a batch before an acks=all produce succeeds; above 1, acks=all gets NOT_ENOUGH_REPLICAS on a single broker."},
	{name: "replica.lag.time.max.ms", defaultValue: "30000", kind: kindLong, validate: atLeast(1),
		doc: "With replication on: a follower that has not caught up with the leader's log end for this long leaves the ISR."},
	{name: "follower.replication.throttled.rate", defaultValue: "9223372036854775807", kind: kindLong, validate: atLeast(1),
		doc: "In a cluster: the bytes per second this broker fetches, over all partitions, for the partitions a reassignment is adding it to (the copy of AlterPartitionReassignments); replicas already in a partition's replica set are not throttled. The default is no limit. A static setting here (in Kafka a dynamic broker config)."},
	{name: "auto.leader.rebalance.enable", defaultValue: "true", kind: kindBoolean,
		doc: "In a cluster: the active controller moves each partition's leadership back to its preferred replica (the first of its replicas) when that replica is in sync and a broker leads too few of the partitions it prefers (leader.imbalance.per.broker.percentage), checked every leader.imbalance.check.interval.seconds."},
	{name: "leader.imbalance.check.interval.seconds", defaultValue: "300", kind: kindLong, validate: atLeast(1),
		doc: "How often the active controller checks for partitions not led by their preferred replica (auto.leader.rebalance.enable)."},
	{name: "leader.imbalance.per.broker.percentage", defaultValue: "10", kind: kindInt, validate: atLeast(0),
		doc: "The share of the partitions a broker prefers to lead that it may not lead before the controller elects their preferred leaders (auto.leader.rebalance.enable)."},
	{name: "replica.high.watermark.checkpoint.interval.ms", defaultValue: "5000", kind: kindLong, validate: atLeast(1),
		doc: "With replication on: how often each partition's high watermark is written to its directory (and at shutdown), so a restarted broker serves what was committed before without waiting for its followers."},
	{name: "log.segment.bytes", defaultValue: "1073741824", kind: kindInt, validate: atLeast(14),
		doc: "Size at which a partition's active segment is rolled."},
	{name: "log.roll.hours", defaultValue: "168", kind: kindInt, validate: atLeast(1),
		doc: "Age at which the active segment is rolled, used when log.roll.ms is unset."},
	{name: "log.roll.ms", null: true, kind: kindLong, validate: atLeast(1),
		doc: "Age in milliseconds at which the active segment is rolled; overrides log.roll.hours."},
	{name: "log.retention.hours", defaultValue: "168", kind: kindInt, validate: atLeast(-1),
		doc: "Age of a closed segment after which it is deleted, used when log.retention.ms and log.retention.minutes are unset."},
	{name: "log.retention.minutes", null: true, kind: kindInt, validate: atLeast(-1),
		doc: "Retention age in minutes; overrides log.retention.hours."},
	{name: "log.retention.ms", null: true, kind: kindLong, validate: atLeast(-1),
		doc: "Retention age in milliseconds; overrides the other two; -1 keeps segments forever."},
	{name: "log.retention.bytes", defaultValue: "-1", kind: kindLong, validate: atLeast(-1),
		doc: "Size a partition's log may reach before its oldest segments are deleted; -1 is unlimited."},
	{name: "log.retention.check.interval.ms", defaultValue: "300000", kind: kindLong, validate: atLeast(1),
		doc: "How often retention (log.retention.*) is applied to every partition."},
	{name: "log.index.interval.bytes", defaultValue: "4096", kind: kindInt, validate: atLeast(0),
		doc: "Bytes between two offset-index entries of a segment."},
	{name: "log.cleanup.policy", defaultValue: "delete", kind: kindList, validate: cleanupPolicy,
		doc: "Cleanup policy of topics: delete (retention removes old segments), compact (the log cleaner keeps the latest record of each key) or compact,delete (both)."},
	{name: "log.cleaner.enable", defaultValue: "true", kind: kindBoolean,
		doc: "Run the log cleaner, which compacts the partitions whose cleanup.policy includes compact (and the internal topics)."},
	{name: "log.cleaner.threads", defaultValue: "1", kind: kindInt, validate: atLeast(1),
		doc: "Goroutines cleaning logs; each cleans one partition at a time, the dirtiest first."},
	{name: "log.cleaner.io.max.bytes.per.second", defaultValue: "1.7976931348623157E308", kind: kindDouble, validate: positiveDouble,
		doc: "Bytes per second the cleaner may read plus write, over all its goroutines (each gets an equal share); the default is unbounded."},
	{name: "log.cleaner.backoff.ms", defaultValue: "15000", kind: kindLong, validate: atLeast(1),
		doc: "How long a cleaner goroutine sleeps when no log is due for cleaning."},
	{name: "log.cleaner.min.cleanable.ratio", defaultValue: "0.5", kind: kindDouble, validate: ratio,
		doc: "Broker default of min.cleanable.dirty.ratio."},
	{name: "log.cleaner.min.compaction.lag.ms", defaultValue: "0", kind: kindLong, validate: atLeast(0),
		doc: "Broker default of min.compaction.lag.ms."},
	{name: "log.cleaner.max.compaction.lag.ms", defaultValue: "9223372036854775807", kind: kindLong, validate: atLeast(1),
		doc: "Broker default of max.compaction.lag.ms."},
	{name: "log.cleaner.delete.retention.ms", defaultValue: "86400000", kind: kindLong, validate: atLeast(0),
		doc: "Broker default of delete.retention.ms."},
	{name: "log.message.timestamp.type", defaultValue: "CreateTime", kind: kindString, validate: timestampType,
		doc: "CreateTime keeps producers' timestamps; LogAppendTime stamps each batch with the broker's clock."},
	{name: "message.max.bytes", defaultValue: "1048588", kind: kindInt, validate: atLeast(0),
		doc: "Largest record batch the broker accepts (MESSAGE_TOO_LARGE above it)."},
	{name: "socket.request.max.bytes", defaultValue: "104857600", kind: kindInt, validate: atLeast(1),
		doc: "Largest request frame; a larger length prefix closes the connection."},
	{name: "max.connections", defaultValue: "2147483647", kind: kindInt, validate: atLeast(0),
		doc: "Most client connections open at once; a connection accepted beyond it is closed at once (logged, counted in exactly_connections_refused_total). The default is Kafka's, effectively unlimited."},
	{name: "max.connections.per.ip", defaultValue: "2147483647", kind: kindInt, validate: atLeast(0),
		doc: "Most client connections open at once from one IP address, unless max.connections.per.ip.overrides names it; beyond it a connection is closed at once. The default is Kafka's, effectively unlimited."},
	{name: "max.connections.per.ip.overrides", defaultValue: "", kind: kindString, validate: connectionOverrides,
		doc: "Per-address exceptions to max.connections.per.ip, Kafka's format: a comma-separated list of host:count (an IP address, or a host name resolved once at start), e.g. 127.0.0.1:200,[::1]:5."},
	{name: "queued.max.request.bytes", defaultValue: "-1", kind: kindLong, validate: unlimitedOrPositive,
		doc: "Request bytes read but not yet served, summed over all connections; while it is reached, connections stop reading (backpressure) and a request larger than it closes its connection. -1 is unlimited (Kafka's default)."},
	{name: "max.inflight.request.bytes.per.connection", defaultValue: "-1", kind: kindLong, validate: unlimitedOrPositive,
		doc: "Our extension: queued.max.request.bytes for one connection; while it is reached that connection stops reading, and a request larger than it closes the connection. -1 is unlimited."},
	{name: "listeners", null: true, kind: kindString, validate: validateEndpoints,
		doc: "The listeners, NAME://host:port,..., e.g. PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093; port 0 is any free port, an empty host every interface. Unset: one PLAINTEXT listener on the --listen address; set, it wins over it."},
	{name: "inter.broker.listener.name", null: true, kind: kindString,
		doc: "In a cluster, the listener the other brokers fetch from and send transaction requests to, registered with the quorum beside every other listener; it must be a PLAINTEXT listener. Unset: the listener named PLAINTEXT, else the first PLAINTEXT one."},
	{name: "listener.security.protocol.map", defaultValue: defaultProtocolMap, kind: kindString, validate: validateProtocolMap,
		doc: "Each listener name's security protocol, NAME:PROTOCOL,... with PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; a map that is set replaces the default whole."},
	{name: "advertised.listeners", null: true, kind: kindString, validate: validateEndpoints,
		doc: "The address each listener tells its clients to connect to (Metadata, FindCoordinator, DescribeCluster), NAME://host:port,...; a listener not named advertises its own address."},
	{name: "ssl.keystore.type", defaultValue: "PEM", kind: kindString, validate: keystoreType,
		doc: "Format of the keystore of SSL and SASL_SSL listeners: only PEM (Kafka's default JKS and PKCS12 are not supported). Every ssl.* setting may be given for one listener as listener.name.<lower-case name>.ssl.*."},
	{name: "ssl.keystore.location", null: true, kind: kindString,
		doc: "PEM file with the private key (unencrypted) and the certificate chain of TLS listeners."},
	{name: "ssl.keystore.certificate.chain", null: true, kind: kindPassword,
		doc: "The certificate chain in PEM, inline, instead of ssl.keystore.location (with ssl.keystore.key)."},
	{name: "ssl.keystore.key", null: true, kind: kindPassword,
		doc: "The private key in PEM (unencrypted), inline, instead of ssl.keystore.location (with ssl.keystore.certificate.chain)."},
	{name: "ssl.truststore.type", defaultValue: "PEM", kind: kindString, validate: keystoreType,
		doc: "Format of the truststore: only PEM."},
	{name: "ssl.truststore.location", null: true, kind: kindString,
		doc: "PEM file of the CA certificates client certificates must chain to (ssl.client.auth requested or required)."},
	{name: "ssl.truststore.certificates", null: true, kind: kindPassword,
		doc: "The truststore's CA certificates in PEM, inline, instead of ssl.truststore.location."},
	{name: "ssl.client.auth", defaultValue: "none", kind: kindString, validate: clientAuth,
		doc: "Client certificates on SSL and SASL_SSL listeners: none, requested (verified if given) or required; a verified certificate on an SSL listener makes the principal User:<subject DN>, e.g. User:CN=alice."},
	{name: "sasl.enabled.mechanisms", defaultValue: "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", kind: kindList, validate: saslMechanismList,
		doc: "SASL mechanisms offered on SASL_PLAINTEXT and SASL_SSL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. Kafka's default is GSSAPI, which is not implemented (nor is OAUTHBEARER). PLAIN checks the password against the user's stored SCRAM credential."},
	{name: "connections.max.reauth.ms", defaultValue: "0", kind: kindLong, validate: atLeast(0),
		doc: "KIP-368: how long a SASL session lasts. SaslAuthenticate v1+ tells the client (session_lifetime_ms); once it has passed, the connection may only re-authenticate (SaslHandshake and SaslAuthenticate, as the same user) and any other request closes it. 0: sessions never expire."},
	{name: "sasl.server.max.receive.size", defaultValue: "524288", kind: kindInt, validate: atLeast(1),
		doc: "Largest request frame a SASL listener reads from a connection that has not authenticated (or is re-authenticating); a larger one closes the connection."},
	{name: "authorizer.class.name", defaultValue: "", kind: kindString, validate: authorizerClassName,
		doc: "Turns the ACL authorizer on when set: Kafka's org.apache.kafka.metadata.authorizer.StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer) is accepted and served by the broker's own authorizer (ACLs in acls.json in the data directory, managed with CreateAcls, DescribeAcls, DeleteAcls). Empty: no authorizer, every request is allowed."},
	{name: "super.users", defaultValue: "", kind: kindString, validate: superUsers,
		doc: "Principals allowed everything whatever the ACLs, semicolon-separated, e.g. User:admin;User:broker."},
	{name: "allow.everyone.if.no.acl.found", defaultValue: "false", kind: kindBoolean,
		doc: "With an authorizer: allow a request on a resource no ACL matches (for any principal); false denies it."},
	{name: "group.min.session.timeout.ms", defaultValue: "6000", kind: kindInt, validate: atLeast(1),
		doc: "Smallest session timeout a group member may ask for (INVALID_SESSION_TIMEOUT below it)."},
	{name: "group.max.session.timeout.ms", defaultValue: "1800000", kind: kindInt, validate: atLeast(1),
		doc: "Largest session timeout a group member may ask for (INVALID_SESSION_TIMEOUT above it)."},
	{name: "group.initial.rebalance.delay.ms", defaultValue: "3000", kind: kindInt, validate: atLeast(0),
		doc: "How long the first rebalance of an empty group waits for more members to join."},
	{name: "group.consumer.session.timeout.ms", defaultValue: "45000", kind: kindInt, validate: atLeast(1),
		doc: "Consumer-protocol groups (KIP-848): a member that sends no ConsumerGroupHeartbeat for this long is removed and its partitions reassigned."},
	{name: "group.consumer.heartbeat.interval.ms", defaultValue: "5000", kind: kindInt, validate: atLeast(1),
		doc: "Consumer-protocol groups (KIP-848): the heartbeat interval members are told to use."},
	{name: "group.consumer.min.session.timeout.ms", defaultValue: "45000", kind: kindInt, validate: atLeast(1),
		doc: "Smallest consumer.session.timeout.ms a group config may set (INVALID_CONFIG below it)."},
	{name: "group.consumer.max.session.timeout.ms", defaultValue: "60000", kind: kindInt, validate: atLeast(1),
		doc: "Largest consumer.session.timeout.ms a group config may set (INVALID_CONFIG above it)."},
	{name: "group.consumer.min.heartbeat.interval.ms", defaultValue: "5000", kind: kindInt, validate: atLeast(1),
		doc: "Smallest consumer.heartbeat.interval.ms a group config may set."},
	{name: "group.consumer.max.heartbeat.interval.ms", defaultValue: "15000", kind: kindInt, validate: atLeast(1),
		doc: "Largest consumer.heartbeat.interval.ms a group config may set."},
	{name: "group.share.session.timeout.ms", defaultValue: "45000", kind: kindInt, validate: atLeast(1),
		doc: "Share groups (KIP-932): a member that sends no ShareGroupHeartbeat for this long is removed; the default of the group config share.session.timeout.ms."},
	{name: "group.share.min.session.timeout.ms", defaultValue: "45000", kind: kindInt, validate: atLeast(1),
		doc: "Smallest share.session.timeout.ms a group config may set."},
	{name: "group.share.max.session.timeout.ms", defaultValue: "60000", kind: kindInt, validate: atLeast(1),
		doc: "Largest share.session.timeout.ms a group config may set."},
	{name: "group.share.heartbeat.interval.ms", defaultValue: "5000", kind: kindInt, validate: atLeast(1),
		doc: "Share groups (KIP-932): the heartbeat interval members are told to use; the default of the group config share.heartbeat.interval.ms."},
	{name: "group.share.min.heartbeat.interval.ms", defaultValue: "5000", kind: kindInt, validate: atLeast(1),
		doc: "Smallest share.heartbeat.interval.ms a group config may set."},
	{name: "group.share.max.heartbeat.interval.ms", defaultValue: "15000", kind: kindInt, validate: atLeast(1),
		doc: "Largest share.heartbeat.interval.ms a group config may set."},
	{name: "group.share.record.lock.duration.ms", defaultValue: "30000", kind: kindInt, validate: between(1000, 3600000),
		doc: "Share groups (KIP-932): how long a consumer holds the records it acquired before they can be delivered again; the default of the group config share.record.lock.duration.ms."},
	{name: "group.share.min.record.lock.duration.ms", defaultValue: "15000", kind: kindInt, validate: between(1000, 3600000),
		doc: "Smallest share.record.lock.duration.ms a group config may set."},
	{name: "group.share.max.record.lock.duration.ms", defaultValue: "60000", kind: kindInt, validate: between(1000, 3600000),
		doc: "Largest share.record.lock.duration.ms a group config may set."},
	{name: "group.share.delivery.count.limit", defaultValue: "5", kind: kindInt, validate: between(2, 10),
		doc: "Share groups (KIP-932): how many times a record is delivered before it is archived; the default of the group config share.delivery.count.limit."},
	{name: "group.share.min.delivery.count.limit", defaultValue: "2", kind: kindInt, validate: between(2, 10),
		doc: "Smallest share.delivery.count.limit a group config may set."},
	{name: "group.share.max.delivery.count.limit", defaultValue: "10", kind: kindInt, validate: between(2, 10),
		doc: "Largest share.delivery.count.limit a group config may set."},
	{name: "group.share.partition.max.record.locks", defaultValue: "2000", kind: kindInt, validate: between(100, 10000),
		doc: "Share groups (KIP-932): at most this many records of one share-partition are acquired at once; a ShareFetch acquires no more until some are acknowledged or released."},
	{name: "offsets.topic.segment.bytes", defaultValue: "104857600", kind: kindInt, validate: atLeast(14),
		doc: "Segment size of __consumer_offsets, small enough that the log cleaner (it never cleans the active segment) can compact it."},
	{name: "transaction.state.log.segment.bytes", defaultValue: "104857600", kind: kindInt, validate: atLeast(14),
		doc: "Segment size of __transaction_state, small enough that the log cleaner can compact it."},
	{name: "offsets.retention.minutes", defaultValue: "10080", kind: kindInt, validate: atLeast(1),
		doc: "How long a group's committed offsets are kept after the group becomes empty."},
	{name: "offsets.retention.check.interval.ms", defaultValue: "600000", kind: kindLong, validate: atLeast(1),
		doc: "How often expired committed offsets are removed."},
	{name: "offsets.topic.num.partitions", defaultValue: "50", kind: kindInt, validate: atLeast(1),
		doc: "Partitions of __consumer_offsets; groups map to them by a hash of the group id, so it is fixed when the data directory is first used."},
	{name: "producer.id.expiration.ms", defaultValue: "86400000", kind: kindInt, validate: atLeast(1),
		doc: "How long a partition keeps an idle idempotent producer's state (its epoch and last 5 batches) after its last write."},
	{name: "producer.id.expiration.check.interval.ms", defaultValue: "600000", kind: kindInt, validate: atLeast(1),
		doc: "How often partitions look for producers idle for producer.id.expiration.ms."},
	{name: "transaction.max.timeout.ms", defaultValue: "900000", kind: kindInt, validate: atLeast(1),
		doc: "Largest transaction.timeout.ms a transactional producer may ask for at InitProducerId (INVALID_TRANSACTION_TIMEOUT above it)."},
	{name: "transactional.id.expiration.ms", defaultValue: "604800000", kind: kindInt, validate: atLeast(1),
		doc: "How long a transactional id with no transaction open and no update is kept before the coordinator forgets it."},
	{name: "transaction.state.log.num.partitions", defaultValue: "50", kind: kindInt, validate: atLeast(1),
		doc: "Partitions of __transaction_state; transactional ids map to them by a hash of the id, so it is fixed when the data directory is first used."},
	{name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", defaultValue: "10000", kind: kindInt, validate: atLeast(1),
		doc: "How often the transaction coordinator aborts transactions open longer than their timeout (and, here, also expires idle transactional ids)."},
	{name: "transaction.remove.expired.transaction.cleanup.interval.ms", defaultValue: "3600000", kind: kindInt, validate: atLeast(1),
		doc: "Accepted for compatibility; idle transactional ids are expired on the abort-cleanup tick (transaction.abort.timed.out.transaction.cleanup.interval.ms)."},
	{name: "transaction.version", defaultValue: "2", kind: kindShort, validate: transactionVersion,
		doc: "Our extension (Kafka finalizes it as a cluster feature): 2 enables KIP-890 part 2 (epoch bump at every EndTxn v5, partitions added implicitly by Produce v12+ and TxnOffsetCommit v5+) and advertises the finalized feature transaction.version=2 in ApiVersions; 0 or 1 keep the classic protocol (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn v4) and advertise level 0 or 1."},
	{name: "log.fsync", defaultValue: "never", kind: kindString, validate: fsyncPolicy,
		doc: "Our extension (Kafka uses log.flush.interval.*): never (page cache, like Kafka's default), interval:<duration> (group commit) or always (fsync before acks=all is answered)."},
	{name: "metrics.request.histograms", defaultValue: "default", kind: kindString, validate: requestHistograms,
		doc: "Our extension: which per-API request-time series of /metrics have buckets (quantiles); the others have only _sum, _count and the +Inf bucket (rates and means). default: exactly_request_total_seconds of the APIs that carry a workload (Produce, Fetch, the transaction and consumer group APIs); all: every API and stage; none: no series of them."},
}

// topicSetting is a topic-level key and the broker keys it falls back to,
// in Kafka's synonym order (most specific first).
type topicSetting struct {
	setting
	brokerSynonyms []string
}

// topicSettings are the keys CreateTopics and AlterConfigs accept. Their
// defaults come from the broker settings named in brokerSynonyms.
var topicSettings = []topicSetting{
	{setting{name: "retention.ms", kind: kindLong, validate: atLeast(-1),
		doc: "Age of a closed segment after which it is deleted; -1 keeps it forever."},
		[]string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}},
	{setting{name: "retention.bytes", kind: kindLong, validate: atLeast(-1),
		doc: "Size a partition may reach before its oldest segments are deleted; -1 is unlimited."},
		[]string{"log.retention.bytes"}},
	{setting{name: "segment.bytes", kind: kindInt, validate: atLeast(14),
		doc: "Size at which the active segment is rolled."},
		[]string{"log.segment.bytes"}},
	{setting{name: "segment.ms", kind: kindLong, validate: atLeast(1),
		doc: "Age at which the active segment is rolled."},
		[]string{"log.roll.ms", "log.roll.hours"}},
	{setting{name: "max.message.bytes", kind: kindInt, validate: atLeast(0),
		doc: "Largest record batch accepted (MESSAGE_TOO_LARGE above it)."},
		[]string{"message.max.bytes"}},
	{setting{name: "cleanup.policy", kind: kindList, validate: cleanupPolicy,
		doc: "delete: retention removes old segments; compact: the log cleaner keeps the latest record of each key (offsets unchanged, gaps left); compact,delete: both."},
		[]string{"log.cleanup.policy"}},
	{setting{name: "min.cleanable.dirty.ratio", kind: kindDouble, validate: ratio,
		doc: "A compacted log is cleaned once its dirty (not yet cleaned) bytes are at least this share of its cleanable bytes."},
		[]string{"log.cleaner.min.cleanable.ratio"}},
	{setting{name: "min.compaction.lag.ms", kind: kindLong, validate: atLeast(0),
		doc: "A record stays uncompacted for at least this long after it is written."},
		[]string{"log.cleaner.min.compaction.lag.ms"}},
	{setting{name: "max.compaction.lag.ms", kind: kindLong, validate: atLeast(1),
		doc: "A log whose oldest dirty record is this old is cleaned whatever its dirty ratio."},
		[]string{"log.cleaner.max.compaction.lag.ms"}},
	{setting{name: "delete.retention.ms", kind: kindLong, validate: atLeast(0),
		doc: "How long a tombstone (a record with a null value), and a transaction marker with nothing left of its transaction, survive cleaning."},
		[]string{"log.cleaner.delete.retention.ms"}},
	{setting{name: "min.insync.replicas", kind: kindInt, validate: atLeast(1),
		doc: "Replicas that must have a batch before acks=all succeeds."},
		[]string{"min.insync.replicas"}},
	{setting{name: "message.timestamp.type", kind: kindString, validate: timestampType,
		doc: "CreateTime or LogAppendTime."},
		[]string{"log.message.timestamp.type"}},
}

func findBrokerSetting(name string) (setting, bool) {
	for _, s := range brokerSettings {
		if s.name == name {
			return s, true
		}
	}
	return findListenerSetting(name)
}

func findTopicSetting(name string) (topicSetting, bool) {
	for _, s := range topicSettings {
		if s.name == name {
			return s, true
		}
	}
	return topicSetting{}, false
}

// check validates value against the setting's kind and validation.
func (s setting) check(value string) error {
	switch s.kind {
	case kindBoolean:
		if value != "true" && value != "false" {
			return fmt.Errorf("%s: %q is not true or false", s.name, value)
		}
	case kindDouble:
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return fmt.Errorf("%s: %q is not a number", s.name, value)
		}
	case kindInt, kindShort, kindLong:
		bits := map[settingKind]int{kindInt: 32, kindShort: 16, kindLong: 64}[s.kind]
		if _, err := strconv.ParseInt(value, 10, bits); err != nil {
			return fmt.Errorf("%s: %q is not a %d-bit integer", s.name, value, bits)
		}
	}
	if s.validate != nil {
		if err := s.validate(value); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

func atLeast(minimum int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < minimum {
			return fmt.Errorf("%d is below the minimum %d", n, minimum)
		}
		return nil
	}
}

func between(minimum, maximum int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < minimum || n > maximum {
			return fmt.Errorf("%d is outside [%d, %d]", n, minimum, maximum)
		}
		return nil
	}
}

// authorizerClassNames are the authorizer.class.name values accepted:
// Kafka's ACL authorizers (KRaft's and ZooKeeper's), both served by
// broker/acl with Kafka's semantics.
var authorizerClassNames = []string{
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"kafka.security.authorizer.AclAuthorizer",
}

func authorizerClassName(v string) error {
	if v == "" || slices.Contains(authorizerClassNames, v) {
		return nil
	}
	return fmt.Errorf("%q is not supported (want empty for none, or one of %s)", v, strings.Join(authorizerClassNames, ", "))
}

// parseSuperUsers splits super.users: semicolon-separated Type:name
// principals; blanks around entries are ignored.
func parseSuperUsers(v string) ([]string, error) {
	var out []string
	for _, entry := range strings.Split(v, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if kind, name, ok := strings.Cut(entry, ":"); !ok || kind == "" || name == "" {
			return nil, fmt.Errorf("%q is not a principal of the form Type:name (e.g. User:admin)", entry)
		}
		out = append(out, entry)
	}
	return out, nil
}

func superUsers(v string) error {
	_, err := parseSuperUsers(v)
	return err
}

// unlimitedOrPositive accepts -1 (unlimited) or a positive integer.
func unlimitedOrPositive(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer", v)
	}
	if n != -1 && n < 1 {
		return fmt.Errorf("%d: want -1 (unlimited) or a positive count", n)
	}
	return nil
}

// connectionOverrides validates max.connections.per.ip.overrides.
func connectionOverrides(v string) error {
	_, err := parseConnectionOverrides(v)
	return err
}

func exactly(want int64) func(string) error {
	return func(v string) error {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n != want {
			return fmt.Errorf("%q: only %d is supported", v, want)
		}
		return nil
	}
}

// transactionVersion accepts the transaction.version levels: 0, 1, 2.
func transactionVersion(v string) error {
	level, err := strconv.ParseInt(v, 10, 16)
	if err != nil || level < 0 || level > 2 {
		return fmt.Errorf("must be 0, 1 or 2, got %q", v)
	}
	return nil
}

// cleanupPolicy accepts a list of delete and compact (each at most once).
func cleanupPolicy(v string) error {
	_, _, err := parseCleanupPolicy(v)
	return err
}

// parseCleanupPolicy reads a cleanup.policy list: delete, compact, or both
// in either order.
func parseCleanupPolicy(v string) (compact, deletes bool, err error) {
	for _, item := range strings.Split(v, ",") {
		switch strings.TrimSpace(item) {
		case "compact":
			if compact {
				return false, false, fmt.Errorf("%q: compact listed twice", v)
			}
			compact = true
		case "delete":
			if deletes {
				return false, false, fmt.Errorf("%q: delete listed twice", v)
			}
			deletes = true
		default:
			return false, false, fmt.Errorf("%q: want delete, compact or compact,delete", v)
		}
	}
	return compact, deletes, nil
}

// ratio accepts a number in [0, 1].
func ratio(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
		return fmt.Errorf("%q is not a number between 0 and 1", v)
	}
	return nil
}

// positiveDouble accepts a number above 0.
func positiveDouble(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f <= 0 {
		return fmt.Errorf("%q is not a number above 0", v)
	}
	return nil
}

func timestampType(v string) error {
	if v != "CreateTime" && v != "LogAppendTime" {
		return fmt.Errorf("%q is not CreateTime or LogAppendTime", v)
	}
	return nil
}

func fsyncPolicy(v string) error {
	_, err := storage.ParseFsyncPolicy(v)
	return err
}

func addProperty(out map[string]string, key, value string) error {
	s, ok := findBrokerSetting(key)
	if !ok {
		return &UnknownSettingError{Key: key, Closest: suggest.Closest(key, BrokerSettingNames())}
	}
	if err := s.check(value); err != nil {
		return fmt.Errorf("broker setting %w", err)
	}
	out[key] = value
	return nil
}

// BrokerSettingNames returns the keys of the broker settings table,
// sorted (listener.name.<name>.ssl.* forms aside).
func BrokerSettingNames() []string {
	names := make([]string, 0, len(brokerSettings))
	for _, s := range brokerSettings {
		names = append(names, s.name)
	}
	slices.Sort(names)
	return names
}

// brokerConfig is the validated, immutable broker configuration.
type brokerConfig struct {
	// set holds the keys given explicitly (static broker config), as
	// DescribeConfigs reports them.
	set map[string]string
	// settings are the broker-wide settings as typed values (parseSettings).
	settings settings
}

// newBrokerConfig validates properties against the table and parses the
// broker-wide settings; an error names the offending setting.
func newBrokerConfig(properties map[string]string) (brokerConfig, error) {
	cfg := brokerConfig{set: make(map[string]string, len(properties))}
	for key, value := range properties {
		if err := addProperty(cfg.set, key, value); err != nil {
			return brokerConfig{}, err
		}
	}
	parsed, err := parseSettings(cfg)
	if err != nil {
		return brokerConfig{}, err
	}
	cfg.settings = parsed
	return cfg, nil
}

// lookup returns a broker setting's value and whether it was set
// explicitly; null-default settings that are unset return ("", false).
func (c brokerConfig) lookup(name string) (string, bool) {
	if v, ok := c.set[name]; ok {
		return v, true
	}
	s, ok := findBrokerSetting(name)
	if !ok {
		panic("broker: lookup of unknown setting " + name)
	}
	return s.defaultValue, false
}

// topicDefault is the value a topic setting takes when the topic does not
// override it, and the broker key it came from ("" when it is the default).
func (c brokerConfig) topicDefault(ts topicSetting) (value, fromKey string) {
	switch ts.name {
	case "retention.ms":
		if v, ok := c.set["log.retention.ms"]; ok {
			return v, "log.retention.ms"
		}
		if v, ok := c.set["log.retention.minutes"]; ok {
			return scaleMillis(v, time.Minute), "log.retention.minutes"
		}
		v, ok := c.set["log.retention.hours"]
		if !ok {
			return scaleMillis("168", time.Hour), ""
		}
		return scaleMillis(v, time.Hour), "log.retention.hours"
	case "segment.ms":
		if v, ok := c.set["log.roll.ms"]; ok {
			return v, "log.roll.ms"
		}
		v, ok := c.set["log.roll.hours"]
		if !ok {
			return scaleMillis("168", time.Hour), ""
		}
		return scaleMillis(v, time.Hour), "log.roll.hours"
	}
	key := ts.brokerSynonyms[0]
	v, explicit := c.lookup(key)
	if explicit {
		return v, key
	}
	return v, ""
}

// scaleMillis turns a count of unit into milliseconds; negative counts
// (-1, unlimited) stay as they are.
func scaleMillis(v string, unit time.Duration) string {
	n, _ := strconv.ParseInt(v, 10, 64)
	if n < 0 {
		return v
	}
	return strconv.FormatInt(n*unit.Milliseconds(), 10)
}

// topicConfig is a topic's effective configuration: an immutable snapshot,
// replaced as a whole when the topic's configs are altered.
type topicConfig struct {
	// overrides are the topic's own (dynamic topic) configs.
	overrides map[string]string

	retentionMillis  int64
	retentionBytes   int64
	segmentBytes     int64
	segmentMillis    int64
	maxMessageBytes  int64
	minInsyncReplica int64
	logAppendTime    bool

	// The log cleaner's settings (read by logCleaner): cleanup.policy as two
	// flags, min.cleanable.dirty.ratio, min.compaction.lag.ms,
	// max.compaction.lag.ms, delete.retention.ms.
	compact            bool
	deleteRetained     bool
	minCleanableRatio  float64
	minCompactionLag   time.Duration
	maxCompactionLag   time.Duration
	tombstoneRetention time.Duration
}

// validateTopicConfigs checks topic-level overrides against the table.
func validateTopicConfigs(overrides map[string]string) error {
	for key, value := range overrides {
		ts, ok := findTopicSetting(key)
		if !ok {
			return fmt.Errorf("unknown topic config %q", key)
		}
		if err := ts.check(value); err != nil {
			return err
		}
	}
	return nil
}

// newTopicConfig combines validated overrides with the broker defaults.
func (c brokerConfig) newTopicConfig(overrides map[string]string) *topicConfig {
	value := func(name string) string {
		if v, ok := overrides[name]; ok {
			return v
		}
		ts, _ := findTopicSetting(name)
		v, _ := c.topicDefault(ts)
		return v
	}
	number := func(name string) int64 {
		n, _ := strconv.ParseInt(value(name), 10, 64)
		return n
	}
	copied := make(map[string]string, len(overrides))
	for k, v := range overrides {
		copied[k] = v
	}
	compact, deletes, _ := parseCleanupPolicy(value("cleanup.policy"))
	minRatio, _ := strconv.ParseFloat(value("min.cleanable.dirty.ratio"), 64)
	return &topicConfig{
		compact:            compact,
		deleteRetained:     deletes,
		minCleanableRatio:  minRatio,
		minCompactionLag:   millis(number("min.compaction.lag.ms")),
		maxCompactionLag:   millis(number("max.compaction.lag.ms")),
		tombstoneRetention: millis(number("delete.retention.ms")),
		overrides:          copied,
		retentionMillis:    number("retention.ms"),
		retentionBytes:     number("retention.bytes"),
		segmentBytes:       number("segment.bytes"),
		segmentMillis:      number("segment.ms"),
		maxMessageBytes:    number("max.message.bytes"),
		minInsyncReplica:   number("min.insync.replicas"),
		logAppendTime:      value("message.timestamp.type") == "LogAppendTime",
	}
}

// millis is a count of milliseconds as a duration, saturating instead of
// overflowing (max.compaction.lag.ms defaults to Long.MAX_VALUE).
func millis(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(n) * time.Millisecond
}

// storageOptions are the storage.Log options for a partition of a topic
// with configuration tc. Without delete in cleanup.policy retention is
// off (Kafka: a compact-only topic keeps every segment, cleaned).
func (c brokerConfig) storageOptions(tc *topicConfig) storage.Options {
	retentionAge := time.Duration(-1)
	if tc.retentionMillis >= 0 {
		retentionAge = time.Duration(tc.retentionMillis) * time.Millisecond
	}
	retentionBytes := tc.retentionBytes
	if !tc.deleteRetained {
		retentionAge, retentionBytes = -1, -1
	}
	// A compacted topic rolls its active segment once it is older than
	// max.compaction.lag.ms too, as Kafka does (KIP-354): the cleaner
	// never touches the active segment, so without the roll a record
	// could stay uncleaned longer than the lag the topic promises.
	segmentAge := millis(tc.segmentMillis)
	if tc.compact && tc.maxCompactionLag < segmentAge {
		segmentAge = tc.maxCompactionLag
	}
	return storage.Options{
		SegmentBytes:       tc.segmentBytes,
		SegmentAge:         segmentAge,
		RetentionBytes:     retentionBytes,
		RetentionAge:       retentionAge,
		IndexIntervalBytes: c.settings.IndexIntervalBytes,
		Fsync:              c.settings.Fsync,
	}
}
