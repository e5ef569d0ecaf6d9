package broker

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// authorizationCase is one request that a principal without ACLs sends.
type authorizationCase struct {
	key int16
	// version pins the request version (0: the highest both sides know).
	version int16
	name    string
	request func(f *authFixture) kmsg.Request
	// refused checks the answer shows the refusal; nil means "some error
	// code in the response is one of the four authorization failures".
	refused func(f *authFixture, resp kmsg.Response) bool
	// none marks the APIs Kafka does not authorize: the answer must carry
	// no authorization failure.
	none bool
}

// authFixture is what the setup made before the authorizer was on: a
// topic t (one record), a group g with a committed offset, a
// transactional id x.
type authFixture struct {
	topicID [16]byte
}

// authorizationFailures are the four codes a refusal carries.
var authorizationFailures = []int16{
	kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code,
	kerr.TransactionalIDAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code,
}

// carriesAuthorizationFailure walks a response for an ErrorCode field
// holding one of authorizationFailures.
func carriesAuthorizationFailure(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && carriesAuthorizationFailure(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			field := v.Type().Field(i)
			if field.Name == "ErrorCode" && field.Type.Kind() == reflect.Int16 && slices.Contains(authorizationFailures, int16(v.Field(i).Int())) {
				return true
			}
			if carriesAuthorizationFailure(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if carriesAuthorizationFailure(v.Index(i)) {
				return true
			}
		}
	}
	return false
}

// isT reports whether a described topic's name is the fixture's topic t.
func isT(name *string) bool { return name != nil && *name == "t" }

// authorizationCases has at least one request per API key the broker
// registers (TestEveryAPIHasAnAuthorizationRule checks).
func authorizationCases() []authorizationCase {
	str := kmsg.StringPtr
	return []authorizationCase{
		{key: wire.APIVersions, name: "ApiVersions", none: true,
			request: func(*authFixture) kmsg.Request { return kmsg.NewPtrApiVersionsRequest() }},
		{key: wire.APIProduce, name: "Produce without Write", request: func(f *authFixture) kmsg.Request {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = 1, 5000
			topic := kmsg.NewProduceRequestTopic()
			topic.Topic, topic.TopicID = "t", f.topicID
			topic.Partitions = append(topic.Partitions, kmsg.NewProduceRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIFetch, name: "Fetch without Read", request: func(f *authFixture) kmsg.Request {
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis, req.MaxBytes = 10, 1<<20
			topic := kmsg.NewFetchRequestTopic()
			topic.Topic, topic.TopicID = "t", f.topicID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			topic.Partitions = append(topic.Partitions, rp)
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIFetch, name: "follower Fetch without ClusterAction", request: func(f *authFixture) kmsg.Request {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = 2, 10, 1<<20
			req.ReplicaState.ID = 2
			topic := kmsg.NewFetchRequestTopic()
			topic.Topic, topic.TopicID = "t", f.topicID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			topic.Partitions = append(topic.Partitions, rp)
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIListOffsets, name: "ListOffsets without Describe", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrListOffsetsRequest()
			topic := kmsg.NewListOffsetsRequestTopic()
			topic.Topic = "t"
			topic.Partitions = append(topic.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIMetadata, name: "Metadata of a named topic", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrMetadataRequest()
			topic := kmsg.NewMetadataRequestTopic()
			topic.Topic = str("t")
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIMetadata, name: "Metadata of all topics hides t",
			request: func(*authFixture) kmsg.Request { return kmsg.NewPtrMetadataRequest() },
			refused: func(_ *authFixture, resp kmsg.Response) bool {
				return !slices.ContainsFunc(resp.(*kmsg.MetadataResponse).Topics, func(topic kmsg.MetadataResponseTopic) bool { return isT(topic.Topic) })
			}},
		{key: wire.APIOffsetCommit, name: "OffsetCommit without group Read", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation = "g", -1
			topic := kmsg.NewOffsetCommitRequestTopic()
			topic.Topic = "t"
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			topic.Partitions = append(topic.Partitions, rp)
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIOffsetFetch, name: "OffsetFetch without group Describe", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrOffsetFetchRequest()
			group := kmsg.NewOffsetFetchRequestGroup()
			group.Group = "g"
			req.Groups = append(req.Groups, group)
			req.Group = "g"
			return req
		}},
		{key: wire.APIFindCoordinator, name: "FindCoordinator of a group", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey, req.CoordinatorKeys = "g", []string{"g"}
			return req
		}},
		{key: wire.APIFindCoordinator, name: "FindCoordinator of a transactional id", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 1, "x", []string{"x"}
			return req
		}},
		{key: wire.APIJoinGroup, name: "JoinGroup", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
			protocol := kmsg.NewJoinGroupRequestProtocol()
			protocol.Name = "range"
			req.Protocols = append(req.Protocols, protocol)
			return req
		}},
		{key: wire.APIHeartbeat, name: "Heartbeat", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.MemberID = "g", "m"
			return req
		}},
		{key: wire.APILeaveGroup, name: "LeaveGroup", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group, req.MemberID = "g", "m"
			req.Members = append(req.Members, kmsg.LeaveGroupRequestMember{MemberID: "m"})
			return req
		}},
		{key: wire.APISyncGroup, name: "SyncGroup", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.MemberID = "g", "m"
			return req
		}},
		{key: wire.APIDescribeGroups, name: "DescribeGroups", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups = []string{"g"}
			return req
		}},
		{key: wire.APIListGroups, name: "ListGroups hides g",
			request: func(*authFixture) kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
			refused: func(_ *authFixture, resp kmsg.Response) bool {
				return len(resp.(*kmsg.ListGroupsResponse).Groups) == 0
			}},
		{key: wire.APICreateTopics, name: "CreateTopics", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrCreateTopicsRequest()
			topic := kmsg.NewCreateTopicsRequestTopic()
			topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "new", 1, 1
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIDeleteTopics, name: "DeleteTopics", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDeleteTopicsRequest()
			topic := kmsg.NewDeleteTopicsRequestTopic()
			topic.Topic = str("t")
			req.Topics, req.TopicNames = append(req.Topics, topic), []string{"t"}
			return req
		}},
		{key: wire.APIInitProducerID, name: "InitProducerId of a transactional id", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = str("x"), 10000
			return req
		}},
		{key: wire.APIProduce, version: 12, name: "Produce v12 (by name) without Write", request: func(f *authFixture) kmsg.Request {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = 1, 5000
			topic := kmsg.NewProduceRequestTopic()
			topic.Topic = "t"
			rp := kmsg.NewProduceRequestTopicPartition()
			topic.Partitions = append(topic.Partitions, rp)
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIProduce, version: 12, name: "transactional Produce without Write on the id", request: func(f *authFixture) kmsg.Request {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis, req.TransactionID = 1, 5000, kmsg.StringPtr("x")
			topic := kmsg.NewProduceRequestTopic()
			topic.Topic = "t"
			topic.Partitions = append(topic.Partitions, kmsg.NewProduceRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			return req
		},
			refused: func(_ *authFixture, resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode == kerr.TransactionalIDAuthorizationFailed.Code
			}},
		{key: wire.APIInitProducerID, name: "InitProducerId idempotent", request: func(*authFixture) kmsg.Request {
			return kmsg.NewPtrInitProducerIDRequest()
		}},
		{key: wire.APIOffsetForLeaderEpoch, name: "OffsetForLeaderEpoch", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			topic := kmsg.NewOffsetForLeaderEpochRequestTopic()
			topic.Topic = "t"
			topic.Partitions = append(topic.Partitions, kmsg.NewOffsetForLeaderEpochRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIAddPartitionsToTxn, version: 3, name: "AddPartitionsToTxn v3 (client)", request: addPartitionsRequest},
		{key: wire.APIAddPartitionsToTxn, name: "AddPartitionsToTxn v5 (broker)", request: addPartitionsRequest},
		{key: wire.APIAddOffsetsToTxn, name: "AddOffsetsToTxn", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.Group = "x", "g"
			return req
		}},
		{key: wire.APIEndTxn, name: "EndTxn", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID = "x"
			return req
		}},
		{key: wire.APIWriteTxnMarkers, name: "WriteTxnMarkers", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrWriteTxnMarkersRequest()
			marker := kmsg.NewWriteTxnMarkersRequestMarker()
			marker.ProducerID = 1
			topic := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			topic.Topic, topic.Partitions = "t", []int32{0}
			marker.Topics = append(marker.Topics, topic)
			req.Markers = append(req.Markers, marker)
			return req
		}},
		{key: wire.APITxnOffsetCommit, name: "TxnOffsetCommit", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.TransactionalID, req.Group = "x", "g"
			topic := kmsg.NewTxnOffsetCommitRequestTopic()
			topic.Topic = "t"
			topic.Partitions = append(topic.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIDescribeACLs, name: "DescribeAcls", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return req
		}},
		{key: wire.APICreateACLs, name: "CreateAcls", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrCreateACLsRequest()
			creation := kmsg.NewCreateACLsRequestCreation()
			creation.ResourceType, creation.ResourceName, creation.Principal, creation.Host = kmsg.ACLResourceTypeTopic, "t", "User:*", "*"
			creation.Operation, creation.PermissionType = kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, creation)
			return req
		}},
		{key: wire.APIDeleteACLs, name: "DeleteAcls", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDeleteACLsRequest()
			filter := kmsg.NewDeleteACLsRequestFilter()
			filter.ResourceType, filter.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			filter.Operation, filter.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			req.Filters = append(req.Filters, filter)
			return req
		}},
		{key: wire.APIDescribeConfigs, name: "DescribeConfigs of a topic", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDescribeConfigsRequest()
			resource := kmsg.NewDescribeConfigsRequestResource()
			resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			req.Resources = append(req.Resources, resource)
			return req
		}},
		{key: wire.APIDescribeConfigs, name: "DescribeConfigs of the broker", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDescribeConfigsRequest()
			resource := kmsg.NewDescribeConfigsRequestResource()
			resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
			req.Resources = append(req.Resources, resource)
			return req
		}},
		{key: wire.APIAlterConfigs, name: "AlterConfigs", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrAlterConfigsRequest()
			resource := kmsg.NewAlterConfigsRequestResource()
			resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			req.Resources = append(req.Resources, resource)
			return req
		}},
		{key: wire.APIIncrementalAlterConfigs, name: "IncrementalAlterConfigs", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			resource := kmsg.NewIncrementalAlterConfigsRequestResource()
			resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			req.Resources = append(req.Resources, resource)
			return req
		}},
		{key: wire.APIDescribeConfigs, name: "DescribeConfigs of a group", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDescribeConfigsRequest()
			resource := kmsg.NewDescribeConfigsRequestResource()
			resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
			req.Resources = append(req.Resources, resource)
			return req
		}, refused: func(_ *authFixture, resp kmsg.Response) bool {
			r := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
			return r.ErrorCode == kerr.GroupAuthorizationFailed.Code && len(r.Configs) == 0
		}},
		{key: wire.APIAlterConfigs, name: "AlterConfigs of a group", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrAlterConfigsRequest()
			resource := kmsg.NewAlterConfigsRequestResource()
			resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
			req.Resources = append(req.Resources, resource)
			return req
		}, refused: func(_ *authFixture, resp kmsg.Response) bool {
			return resp.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode == kerr.GroupAuthorizationFailed.Code
		}},
		{key: wire.APIIncrementalAlterConfigs, name: "IncrementalAlterConfigs of a group", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			resource := kmsg.NewIncrementalAlterConfigsRequestResource()
			resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
			config := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			config.Name, config.Value = "share.delivery.count.limit", kmsg.StringPtr("3")
			resource.Configs = append(resource.Configs, config)
			req.Resources = append(req.Resources, resource)
			return req
		}, refused: func(_ *authFixture, resp kmsg.Response) bool {
			return resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode == kerr.GroupAuthorizationFailed.Code
		}},
		{key: wire.APICreatePartitions, name: "CreatePartitions", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrCreatePartitionsRequest()
			topic := kmsg.NewCreatePartitionsRequestTopic()
			topic.Topic, topic.Count = "t", 2
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIDeleteGroups, name: "DeleteGroups", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{"g"}
			return req
		}},
		{key: wire.APIOffsetDelete, name: "OffsetDelete", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.Group = "g"
			topic := kmsg.NewOffsetDeleteRequestTopic()
			topic.Topic = "t"
			topic.Partitions = append(topic.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIDescribeCluster, name: "DescribeCluster", none: true,
			request: func(*authFixture) kmsg.Request { return kmsg.NewPtrDescribeClusterRequest() }},
		{key: wire.APIDescribeProducers, name: "DescribeProducers", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDescribeProducersRequest()
			topic := kmsg.NewDescribeProducersRequestTopic()
			topic.Topic, topic.Partitions = "t", []int32{0}
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIDescribeTransactions, name: "DescribeTransactions", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{"x"}
			return req
		}},
		{key: wire.APIDescribeLogDirs, name: "DescribeLogDirs without Describe on Cluster", request: func(*authFixture) kmsg.Request {
			return kmsg.NewPtrDescribeLogDirsRequest()
		}},
		{key: wire.APIDeleteRecords, name: "DeleteRecords without Delete", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDeleteRecordsRequest()
			topic := kmsg.NewDeleteRecordsRequestTopic()
			partition := kmsg.NewDeleteRecordsRequestTopicPartition()
			partition.Offset = -1
			topic.Topic, topic.Partitions = "t", []kmsg.DeleteRecordsRequestTopicPartition{partition}
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIAlterPartitionAssignments, name: "AlterPartitionReassignments without Alter on Cluster", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			topic := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			partition := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			partition.Replicas = []int32{0}
			topic.Topic, topic.Partitions = "t", []kmsg.AlterPartitionAssignmentsRequestTopicPartition{partition}
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIListPartitionReassignments, name: "ListPartitionReassignments without Describe on Cluster", request: func(*authFixture) kmsg.Request {
			return kmsg.NewPtrListPartitionReassignmentsRequest()
		}},
		{key: wire.APIElectLeaders, name: "ElectLeaders without Alter on Cluster", request: func(*authFixture) kmsg.Request {
			return kmsg.NewPtrElectLeadersRequest()
		}},
		{key: wire.APIDescribeTopicPartitions, name: "DescribeTopicPartitions of t", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			topic := kmsg.NewDescribeTopicPartitionsRequestTopic()
			topic.Topic = "t"
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIDescribeTopicPartitions, name: "DescribeTopicPartitions of all topics hides t",
			request: func(*authFixture) kmsg.Request { return kmsg.NewPtrDescribeTopicPartitionsRequest() },
			refused: func(_ *authFixture, resp kmsg.Response) bool {
				return !slices.ContainsFunc(resp.(*kmsg.DescribeTopicPartitionsResponse).Topics, func(topic kmsg.DescribeTopicPartitionsResponseTopic) bool { return isT(topic.Topic) })
			}},
		{key: wire.APIListTransactions, name: "ListTransactions hides x",
			request: func(*authFixture) kmsg.Request { return kmsg.NewPtrListTransactionsRequest() },
			refused: func(_ *authFixture, resp kmsg.Response) bool {
				return len(resp.(*kmsg.ListTransactionsResponse).TransactionStates) == 0
			}},
		// SASL (helper B): authentication itself is not authorized; the
		// SCRAM credential APIs need Describe / Alter on the Cluster.
		{key: wire.APISASLHandshake, name: "SaslHandshake", none: true, request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrSASLHandshakeRequest()
			req.Mechanism = "PLAIN"
			return req
		}},
		{key: wire.APISASLAuthenticate, name: "SaslAuthenticate", none: true, request: func(*authFixture) kmsg.Request {
			return kmsg.NewPtrSASLAuthenticateRequest()
		}},
		// KIP-848 groups: Read on the group to heartbeat, Describe to describe.
		{key: wire.APIConsumerGroupHeartbeat, name: "ConsumerGroupHeartbeat", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "g", "m", 0, 10000
			req.SubscribedTopicNames = []string{"t"}
			return req
		}},
		{key: wire.APIConsumerGroupDescribe, name: "ConsumerGroupDescribe", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{"g"}
			return req
		}},
		// Share groups (KIP-932): Read on the group to heartbeat, fetch and
		// acknowledge; the share coordinator's APIs are ClusterAction.
		{key: wire.APIShareGroupHeartbeat, name: "ShareGroupHeartbeat", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrShareGroupHeartbeatRequest()
			req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = "g", "m", 0, []string{"t"}
			return req
		}},
		{key: wire.APIShareGroupDescribe, name: "ShareGroupDescribe", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrShareGroupDescribeRequest()
			req.GroupIDs = []string{"g"}
			return req
		}},
		{key: wire.APIShareFetch, name: "ShareFetch", request: func(f *authFixture) kmsg.Request {
			req := kmsg.NewPtrShareFetchRequest()
			req.GroupID, req.MemberID = str("g"), str("m")
			topic := kmsg.NewShareFetchRequestTopic()
			topic.TopicID = f.topicID
			topic.Partitions = append(topic.Partitions, kmsg.NewShareFetchRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIShareAcknowledge, name: "ShareAcknowledge", request: func(f *authFixture) kmsg.Request {
			req := kmsg.NewPtrShareAcknowledgeRequest()
			req.GroupID, req.MemberID, req.ShareSessionEpoch = str("g"), str("m"), 1
			return req
		}},
		{key: wire.APIInitializeShareGroupState, name: "InitializeShareGroupState", request: func(f *authFixture) kmsg.Request {
			req := kmsg.NewPtrInitializeShareGroupStateRequest()
			req.GroupID = "g"
			topic := kmsg.NewInitializeShareGroupStateRequestTopic()
			topic.TopicID = f.topicID
			topic.Partitions = append(topic.Partitions, kmsg.NewInitializeShareGroupStateRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIReadShareGroupState, name: "ReadShareGroupState", request: func(f *authFixture) kmsg.Request {
			req := kmsg.NewPtrReadShareGroupStateRequest()
			req.GroupID = "g"
			topic := kmsg.NewReadShareGroupStateRequestTopic()
			topic.TopicID = f.topicID
			topic.Partitions = append(topic.Partitions, kmsg.NewReadShareGroupStateRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIWriteShareGroupState, name: "WriteShareGroupState", request: func(f *authFixture) kmsg.Request {
			req := kmsg.NewPtrWriteShareGroupStateRequest()
			req.GroupID = "g"
			topic := kmsg.NewWriteShareGroupStateRequestTopic()
			topic.TopicID = f.topicID
			topic.Partitions = append(topic.Partitions, kmsg.NewWriteShareGroupStateRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			return req
		}},
		{key: wire.APIDescribeShareGroupOffsets, name: "DescribeShareGroupOffsets", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			group := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			group.GroupID = "g"
			req.Groups = append(req.Groups, group)
			return req
		}},
		{key: wire.APIAlterShareGroupOffsets, name: "AlterShareGroupOffsets", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
			req.GroupID = "g"
			return req
		}},
		{key: wire.APIDeleteShareGroupOffsets, name: "DeleteShareGroupOffsets", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
			req.GroupID = "g"
			return req
		}},
		{key: wire.APIDescribeUserSCRAMCredentials, name: "DescribeUserScramCredentials",
			request: func(*authFixture) kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() }},
		{key: wire.APIAlterUserSCRAMCredentials, name: "AlterUserScramCredentials", request: func(*authFixture) kmsg.Request {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			deletion := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			deletion.Name, deletion.Mechanism = "alice", 1
			req.Deletions = append(req.Deletions, deletion)
			return req
		}},
	}
}

func addPartitionsRequest(*authFixture) kmsg.Request {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID = "x"
	topic := kmsg.NewAddPartitionsToTxnRequestTopic()
	topic.Topic, topic.Partitions = "t", []int32{0}
	req.Topics = append(req.Topics, topic)
	transaction := kmsg.NewAddPartitionsToTxnRequestTransaction()
	transaction.TransactionalID = "x"
	transactionTopic := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	transactionTopic.Topic, transactionTopic.Partitions = "t", []int32{0}
	transaction.Topics = append(transaction.Topics, transactionTopic)
	req.Transactions = append(req.Transactions, transaction)
	return req
}

// TestEveryAPIHasAnAuthorizationRule: every registered API key has a rule
// in authorizationRules and a request in authorizationCases, so a new
// handler cannot be added without deciding (and testing) what it checks.
func TestEveryAPIHasAnAuthorizationRule(t *testing.T) {
	t.Parallel()
	tested := map[int16]bool{}
	for _, c := range authorizationCases() {
		tested[c.key] = true
	}
	for key := range handlers {
		if _, ok := authorizationRules[key]; !ok {
			t.Errorf("%s (API %d) is registered but has no entry in authorizationRules", wire.APIName(key), key)
		}
		if !tested[key] {
			t.Errorf("%s (API %d) is registered but has no case in authorizationCases", wire.APIName(key), key)
		}
	}
}

// TestEveryAPIRefusesWithoutACLs sends every registered API, as a
// principal that has no ACL at all, to a broker with the authorizer on:
// each is refused with Kafka's authorization error (or, for the listing
// APIs, leaves out what it may not show), except the APIs Kafka does not
// authorize. The data exists (made before the authorizer was on), so a
// refusal is not an accident of a missing topic or group.
func TestEveryAPIRefusesWithoutACLs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fixture := makeAuthFixture(t, dir)
	b := startTestBroker(t, dir, map[string]string{"authorizer.class.name": standardAuthorizer})
	reviveGroup(t, b)
	for _, c := range authorizationCases() {
		if _, registered := handlers[c.key]; !registered {
			continue // e.g. SASL's APIs before they are merged
		}
		t.Run(c.name, func(t *testing.T) {
			versions := kversion.Stable()
			if c.version != 0 {
				versions.SetMaxKeyVersion(c.key, c.version)
			}
			client := newTestClient(t, b, kgo.MaxVersions(versions))
			resp, err := client.Broker(1).Request(testContext(t, 10*time.Second), c.request(fixture))
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			failed := carriesAuthorizationFailure(reflect.ValueOf(resp))
			switch {
			case c.none && failed:
				t.Fatalf("%s is not authorized in Kafka, but the answer carries an authorization failure: %+v", c.name, resp)
			case c.none:
			case c.refused != nil && !c.refused(fixture, resp):
				t.Fatalf("%s: the answer shows what the principal may not see: %+v", c.name, resp)
			case c.refused == nil && !failed:
				t.Fatalf("%s: no authorization failure in the answer: %+v", c.name, resp)
			}
		})
	}
	if end := logEnd(t, b, "t"); end != 1 {
		t.Fatalf("topic t has log end offset %d after the refused requests, want 1", end)
	}
	if b.topicByName("new") != nil {
		t.Fatal("a refused CreateTopics created its topic")
	}
}

// makeAuthFixture starts a broker without an authorizer over dir, makes
// topic t with one record, group g with a committed offset and
// transactional id x, checks the listing APIs show them, and closes it.
func makeAuthFixture(t *testing.T, dir string) *authFixture {
	t.Helper()
	b := startTestBroker(t, dir, nil)
	client := newTestClient(t, b)
	ctx := testContext(t, 20*time.Second)
	created := createTopic(t, client, "t", 1, nil)
	if err := produceOne(t, client, "t"); err != nil {
		t.Fatal(err)
	}
	readyCoordinator(t, b, coordinatorGroup, "g")
	readyCoordinator(t, b, coordinatorTransaction, "x")
	commit := authorizationCases()
	for _, c := range commit {
		if c.key != wire.APIOffsetCommit && !(c.key == wire.APIInitProducerID && c.name == "InitProducerId of a transactional id") {
			continue
		}
		resp, err := client.Broker(1).Request(ctx, c.request(nil))
		if err != nil {
			t.Fatal(err)
		}
		if carriesAuthorizationFailure(reflect.ValueOf(resp)) {
			t.Fatalf("setup %s refused without an authorizer", c.name)
		}
	}
	groups, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, client)
	if err != nil || len(groups.Groups) != 1 {
		t.Fatalf("setup: ListGroups %+v, %v; want group g", groups, err)
	}
	txns, err := kmsg.NewPtrListTransactionsRequest().RequestWith(ctx, client)
	if err != nil || len(txns.TransactionStates) != 1 {
		t.Fatalf("setup: ListTransactions %+v, %v; want x", txns, err)
	}
	client.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return &authFixture{topicID: created.TopicID}
}

// reviveGroup makes group g live again on the restarted broker (a group
// that only has committed offsets is not listed after a restart): with a
// temporary ACL it commits an offset, then the ACL is removed.
func reviveGroup(t *testing.T, b *Broker) {
	t.Helper()
	read := grant(groupRT, literal, "g", kmsg.ACLOperationRead)
	readTopic := grant(topicRT, literal, "t", kmsg.ACLOperationRead)
	if err := b.authorizer.Create([]acl.Binding{read, readTopic}); err[0] != nil || err[1] != nil {
		t.Fatal(err)
	}
	readyCoordinator(t, b, coordinatorGroup, "g")
	client := newTestClient(t, b)
	for _, c := range authorizationCases() {
		if c.key != wire.APIOffsetCommit {
			continue
		}
		resp, err := client.Broker(1).Request(testContext(t, 10*time.Second), c.request(nil))
		if err != nil || carriesAuthorizationFailure(reflect.ValueOf(resp)) {
			t.Fatalf("reviving group g: %+v, %v", resp, err)
		}
	}
	client.Close()
	all := acl.Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	if deleted := b.authorizer.Delete([]acl.Filter{all}); deleted[0].Err != nil || len(deleted[0].Deleted) != 2 {
		t.Fatalf("removing the temporary ACLs: %+v", deleted)
	}
	listed, err := b.listGroups(group.ListFilter{})
	if err != nil || len(listed) != 1 {
		t.Fatalf("group g is not live: %v, %v", listed, err)
	}
}
