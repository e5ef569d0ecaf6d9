package broker

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/wire"
)

// This file connects the handlers to the authorizer (broker/acl). Every
// handler asks c.authorized for the operations Kafka's KafkaApis asks its
// authorizer for, on the same resources, and answers a refusal with the
// error Kafka uses for that resource type (TOPIC_, GROUP_,
// TRANSACTIONAL_ID_ or CLUSTER_AUTHORIZATION_FAILED). authorizationRules
// below lists, per API key, what is checked; a test holds every
// registered handler to having a rule and to refusing without the ACLs.
//
// With authorizer.class.name empty there is no authorizer: every check
// passes and the broker behaves as it did before ACLs existed.

// aclsFile is the ACL store in the data directory, [acl.Options.Path]
// (broker/acl documents its format at its storeFile type).
const aclsFile = "acls.json"

// authorizerSettings are the authorizer's broker settings.
type authorizerSettings struct {
	// ClassName is authorizer.class.name; empty turns the authorizer off.
	ClassName string
	// SuperUsers is super.users, split.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACLFound bool
}

// openAuthorizer opens the ACL store when an authorizer is configured;
// nil (no authorizer) otherwise.
func openAuthorizer(dataDir string, s authorizerSettings) (*acl.Authorizer, error) {
	if s.ClassName == "" {
		return nil, nil
	}
	a, err := acl.Open(acl.Options{
		SuperUsers:                s.SuperUsers,
		AllowEveryoneIfNoACLFound: s.AllowEveryoneIfNoACLFound,
		Path:                      filepath.Join(dataDir, aclsFile),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: authorizer: %w", err)
	}
	return a, nil
}

// Authorized reports whether the connection's principal, from its host,
// may perform op on the resource rt named name. Always true without an
// authorizer. (The connection is the api.Authorizer of its requests.)
func (c *connection) Authorized(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	a := c.broker.authorizer
	if a == nil {
		return true
	}
	return a.Authorize(c.principal(), c.clientHost(), op, rt, name)
}

// authorizedCluster, authorizedTopic, authorizedTransactionalID and
// mayCreateTopic are the api.Request checks of the same names, for the
// handlers that stay on the connection (Produce, Fetch).
func (c *connection) authorizedCluster(op kmsg.ACLOperation) bool {
	return c.apiRequest().AuthorizedCluster(op)
}

func (c *connection) authorizedTopic(op kmsg.ACLOperation, name string) bool {
	return c.apiRequest().AuthorizedTopic(op, name)
}

func (c *connection) authorizedTransactionalID(op kmsg.ACLOperation, id string) bool {
	return c.apiRequest().AuthorizedTransactionalID(op, id)
}

func (c *connection) mayCreateTopic(name string) bool { return c.apiRequest().MayCreateTopic(name) }

// clientHost is the client's IP address as ACL hosts name it.
func (c *connection) clientHost() string {
	if c.addr.IsValid() {
		return c.addr.Unmap().String()
	}
	if c.netConn == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(c.netConn.RemoteAddr().String())
	if err != nil {
		return ""
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		return addr.Unmap().String()
	}
	return host
}

// authorizationRules says, per API key, what its handler checks (as
// Kafka's KafkaApis does). It is documentation that a test enforces:
// every registered API must have an entry here, and every entry other
// than the unauthenticated ones is exercised by a request that must be
// refused (or filtered) without ACLs. An API added without a rule fails
// that test.
var authorizationRules = map[int16]string{
	wire.APIVersions:                     "none (clients discover versions before authenticating)",
	wire.APISASLHandshake:                "none (authentication itself)",
	wire.APISASLAuthenticate:             "none (authentication itself)",
	wire.APIProduce:                      "Write on TransactionalId if transactional (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED); Write on each topic (TOPIC_AUTHORIZATION_FAILED); auto-creation needs Create on Cluster or topic",
	wire.APIFetch:                        "follower fetch: ClusterAction on Cluster (else every partition TOPIC_AUTHORIZATION_FAILED); consumer: Read on each topic",
	wire.APIListOffsets:                  "Describe on each topic",
	wire.APIMetadata:                     "Describe on each topic: all-topics requests omit the others, named ones get TOPIC_AUTHORIZATION_FAILED; auto-creation needs Create on Cluster or topic",
	wire.APIOffsetCommit:                 "Read on the group (GROUP_AUTHORIZATION_FAILED), Read on each topic",
	wire.APIOffsetFetch:                  "Describe on the group (GROUP_AUTHORIZATION_FAILED), Describe on each topic (named: TOPIC_AUTHORIZATION_FAILED; all: omitted)",
	wire.APIFindCoordinator:              "Describe on the group or TransactionalId (GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED)",
	wire.APIJoinGroup:                    "Read on the group",
	wire.APIHeartbeat:                    "Read on the group",
	wire.APILeaveGroup:                   "Read on the group",
	wire.APISyncGroup:                    "Read on the group",
	wire.APIDescribeGroups:               "Describe on each group",
	wire.APIListGroups:                   "Describe on Cluster, or else only the groups with Describe",
	wire.APICreateTopics:                 "Create on Cluster, or else Create on each topic",
	wire.APIDeleteTopics:                 "Delete on each topic (topic ids: Describe too)",
	wire.APIInitProducerID:               "Write on the TransactionalId; without one, IdempotentWrite on Cluster or Write on any topic (CLUSTER_AUTHORIZATION_FAILED)",
	wire.APIOffsetForLeaderEpoch:         "ClusterAction on Cluster, or else Describe on each topic",
	wire.APIAddPartitionsToTxn:           "v0-3: Write on the TransactionalId, Write on each topic (others OPERATION_NOT_ATTEMPTED); v4+: ClusterAction on Cluster",
	wire.APIAddOffsetsToTxn:              "Write on the TransactionalId, Read on the group",
	wire.APIEndTxn:                       "Write on the TransactionalId",
	wire.APIWriteTxnMarkers:              "Alter or ClusterAction on Cluster",
	wire.APITxnOffsetCommit:              "Write on the TransactionalId, Read on the group, Read on each topic",
	wire.APIDescribeACLs:                 "Describe on Cluster",
	wire.APICreateACLs:                   "Alter on Cluster",
	wire.APIDeleteACLs:                   "Alter on Cluster",
	wire.APIDescribeConfigs:              "DescribeConfigs on Cluster (broker resources), on the topic or on the group",
	wire.APIAlterConfigs:                 "AlterConfigs on Cluster (broker resources), on the topic or on the group",
	wire.APIIncrementalAlterConfigs:      "AlterConfigs on Cluster (broker resources), on the topic or on the group",
	wire.APICreatePartitions:             "Alter on each topic",
	wire.APIDeleteGroups:                 "Delete on each group",
	wire.APIOffsetDelete:                 "Delete on the group, Read on each topic",
	wire.APIConsumerGroupHeartbeat:       "Read on the group (GROUP_AUTHORIZATION_FAILED)",
	wire.APIConsumerGroupDescribe:        "Describe on each group",
	wire.APIShareGroupHeartbeat:          "Read on the group (GROUP_AUTHORIZATION_FAILED)",
	wire.APIShareGroupDescribe:           "Describe on each group",
	wire.APIShareFetch:                   "Read on the group (GROUP_AUTHORIZATION_FAILED), Read on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions)",
	wire.APIShareAcknowledge:             "Read on the group (GROUP_AUTHORIZATION_FAILED), Read on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions)",
	wire.APIInitializeShareGroupState:    "ClusterAction on Cluster",
	wire.APIReadShareGroupState:          "ClusterAction on Cluster",
	wire.APIWriteShareGroupState:         "ClusterAction on Cluster",
	wire.APIDescribeShareGroupOffsets:    "Describe on the group, Describe on each topic",
	wire.APIAlterShareGroupOffsets:       "Read on the group, Read on each topic",
	wire.APIDeleteShareGroupOffsets:      "Delete on the group, Read on each topic",
	wire.APIDescribeUserSCRAMCredentials: "Describe on Cluster",
	wire.APIAlterUserSCRAMCredentials:    "Alter on Cluster",
	wire.APIDescribeCluster:              "none refused; cluster authorized operations only with Describe on Cluster (as Kafka)",
	wire.APIDescribeProducers:            "Read on each topic",
	wire.APIDescribeTransactions:         "Describe on each TransactionalId",
	wire.APIListTransactions:             "only the TransactionalIds with Describe",
	wire.APIDescribeLogDirs:              "Describe on Cluster (v3+ CLUSTER_AUTHORIZATION_FAILED, earlier versions an empty list)",
	wire.APIDeleteRecords:                "Delete on each topic",
	wire.APIAlterPartitionAssignments:    "Alter on Cluster",
	wire.APIListPartitionReassignments:   "Describe on Cluster",
	wire.APIElectLeaders:                 "Alter on Cluster",
	wire.APIDescribeTopicPartitions:      "Describe on each topic: all-topics requests omit the others, named ones get TOPIC_AUTHORIZATION_FAILED",
}

// AuthorizedOnAnyTopic reports whether op is allowed on at least one topic
// (Kafka's authorizeByResourceType, which InitProducerId without a
// transactional id accepts in place of IdempotentWrite on the Cluster).
func (c *connection) AuthorizedOnAnyTopic(op kmsg.ACLOperation) bool {
	a := c.broker.authorizer
	if a == nil {
		return true
	}
	return a.AuthorizeByResourceType(c.principal(), c.clientHost(), op, kmsg.ACLResourceTypeTopic)
}

// Enabled reports whether an authorizer is configured.
func (c *connection) Enabled() bool { return c.broker.authorizer != nil }

// Principal is [connection.principal], for package api.
func (c *connection) Principal() string { return c.principal() }
