package wire

import "fmt"

// Kafka API keys (the api_key of a request header), named as Kafka names
// them. The list follows Apache Kafka's message definitions through key 94.
const (
	APIProduce                               int16 = 0
	APIFetch                                 int16 = 1
	APIListOffsets                           int16 = 2
	APIMetadata                              int16 = 3
	APILeaderAndISR                          int16 = 4
	APIStopReplica                           int16 = 5
	APIUpdateMetadata                        int16 = 6
	APIControlledShutdown                    int16 = 7
	APIOffsetCommit                          int16 = 8
	APIOffsetFetch                           int16 = 9
	APIFindCoordinator                       int16 = 10
	APIJoinGroup                             int16 = 11
	APIHeartbeat                             int16 = 12
	APILeaveGroup                            int16 = 13
	APISyncGroup                             int16 = 14
	APIDescribeGroups                        int16 = 15
	APIListGroups                            int16 = 16
	APISASLHandshake                         int16 = 17
	APIVersions                              int16 = 18
	APICreateTopics                          int16 = 19
	APIDeleteTopics                          int16 = 20
	APIDeleteRecords                         int16 = 21
	APIInitProducerID                        int16 = 22
	APIOffsetForLeaderEpoch                  int16 = 23
	APIAddPartitionsToTxn                    int16 = 24
	APIAddOffsetsToTxn                       int16 = 25
	APIEndTxn                                int16 = 26
	APIWriteTxnMarkers                       int16 = 27
	APITxnOffsetCommit                       int16 = 28
	APIDescribeACLs                          int16 = 29
	APICreateACLs                            int16 = 30
	APIDeleteACLs                            int16 = 31
	APIDescribeConfigs                       int16 = 32
	APIAlterConfigs                          int16 = 33
	APIAlterReplicaLogDirs                   int16 = 34
	APIDescribeLogDirs                       int16 = 35
	APISASLAuthenticate                      int16 = 36
	APICreatePartitions                      int16 = 37
	APICreateDelegationToken                 int16 = 38
	APIRenewDelegationToken                  int16 = 39
	APIExpireDelegationToken                 int16 = 40
	APIDescribeDelegationToken               int16 = 41
	APIDeleteGroups                          int16 = 42
	APIElectLeaders                          int16 = 43
	APIIncrementalAlterConfigs               int16 = 44
	APIAlterPartitionAssignments             int16 = 45
	APIListPartitionReassignments            int16 = 46
	APIOffsetDelete                          int16 = 47
	APIDescribeClientQuotas                  int16 = 48
	APIAlterClientQuotas                     int16 = 49
	APIDescribeUserSCRAMCredentials          int16 = 50
	APIAlterUserSCRAMCredentials             int16 = 51
	APIVote                                  int16 = 52
	APIBeginQuorumEpoch                      int16 = 53
	APIEndQuorumEpoch                        int16 = 54
	APIDescribeQuorum                        int16 = 55
	APIAlterPartition                        int16 = 56
	APIUpdateFeatures                        int16 = 57
	APIEnvelope                              int16 = 58
	APIFetchSnapshot                         int16 = 59
	APIDescribeCluster                       int16 = 60
	APIDescribeProducers                     int16 = 61
	APIBrokerRegistration                    int16 = 62
	APIBrokerHeartbeat                       int16 = 63
	APIUnregisterBroker                      int16 = 64
	APIDescribeTransactions                  int16 = 65
	APIListTransactions                      int16 = 66
	APIAllocateProducerIDs                   int16 = 67
	APIConsumerGroupHeartbeat                int16 = 68
	APIConsumerGroupDescribe                 int16 = 69
	APIControllerRegistration                int16 = 70
	APIGetTelemetrySubscriptions             int16 = 71
	APIPushTelemetry                         int16 = 72
	APIAssignReplicasToDirs                  int16 = 73
	APIListConfigResources                   int16 = 74
	APIDescribeTopicPartitions               int16 = 75
	APIShareGroupHeartbeat                   int16 = 76
	APIShareGroupDescribe                    int16 = 77
	APIShareFetch                            int16 = 78
	APIShareAcknowledge                      int16 = 79
	APIAddRaftVoter                          int16 = 80
	APIRemoveRaftVoter                       int16 = 81
	APIUpdateRaftVoter                       int16 = 82
	APIInitializeShareGroupState             int16 = 83
	APIReadShareGroupState                   int16 = 84
	APIWriteShareGroupState                  int16 = 85
	APIDeleteShareGroupState                 int16 = 86
	APIReadShareGroupStateSummary            int16 = 87
	APIStreamsGroupHeartbeat                 int16 = 88
	APIStreamsGroupDescribe                  int16 = 89
	APIDescribeShareGroupOffsets             int16 = 90
	APIAlterShareGroupOffsets                int16 = 91
	APIDeleteShareGroupOffsets               int16 = 92
	APIStreamsGroupTopologyDescriptionUpdate int16 = 93
	APIUnregisterController                  int16 = 94
)

// apiNames maps an API key to Kafka's name for it.
var apiNames = [...]string{
	APIProduce:                               "Produce",
	APIFetch:                                 "Fetch",
	APIListOffsets:                           "ListOffsets",
	APIMetadata:                              "Metadata",
	APILeaderAndISR:                          "LeaderAndISR",
	APIStopReplica:                           "StopReplica",
	APIUpdateMetadata:                        "UpdateMetadata",
	APIControlledShutdown:                    "ControlledShutdown",
	APIOffsetCommit:                          "OffsetCommit",
	APIOffsetFetch:                           "OffsetFetch",
	APIFindCoordinator:                       "FindCoordinator",
	APIJoinGroup:                             "JoinGroup",
	APIHeartbeat:                             "Heartbeat",
	APILeaveGroup:                            "LeaveGroup",
	APISyncGroup:                             "SyncGroup",
	APIDescribeGroups:                        "DescribeGroups",
	APIListGroups:                            "ListGroups",
	APISASLHandshake:                         "SASLHandshake",
	APIVersions:                              "ApiVersions",
	APICreateTopics:                          "CreateTopics",
	APIDeleteTopics:                          "DeleteTopics",
	APIDeleteRecords:                         "DeleteRecords",
	APIInitProducerID:                        "InitProducerID",
	APIOffsetForLeaderEpoch:                  "OffsetForLeaderEpoch",
	APIAddPartitionsToTxn:                    "AddPartitionsToTxn",
	APIAddOffsetsToTxn:                       "AddOffsetsToTxn",
	APIEndTxn:                                "EndTxn",
	APIWriteTxnMarkers:                       "WriteTxnMarkers",
	APITxnOffsetCommit:                       "TxnOffsetCommit",
	APIDescribeACLs:                          "DescribeACLs",
	APICreateACLs:                            "CreateACLs",
	APIDeleteACLs:                            "DeleteACLs",
	APIDescribeConfigs:                       "DescribeConfigs",
	APIAlterConfigs:                          "AlterConfigs",
	APIAlterReplicaLogDirs:                   "AlterReplicaLogDirs",
	APIDescribeLogDirs:                       "DescribeLogDirs",
	APISASLAuthenticate:                      "SASLAuthenticate",
	APICreatePartitions:                      "CreatePartitions",
	APICreateDelegationToken:                 "CreateDelegationToken",
	APIRenewDelegationToken:                  "RenewDelegationToken",
	APIExpireDelegationToken:                 "ExpireDelegationToken",
	APIDescribeDelegationToken:               "DescribeDelegationToken",
	APIDeleteGroups:                          "DeleteGroups",
	APIElectLeaders:                          "ElectLeaders",
	APIIncrementalAlterConfigs:               "IncrementalAlterConfigs",
	APIAlterPartitionAssignments:             "AlterPartitionAssignments",
	APIListPartitionReassignments:            "ListPartitionReassignments",
	APIOffsetDelete:                          "OffsetDelete",
	APIDescribeClientQuotas:                  "DescribeClientQuotas",
	APIAlterClientQuotas:                     "AlterClientQuotas",
	APIDescribeUserSCRAMCredentials:          "DescribeUserSCRAMCredentials",
	APIAlterUserSCRAMCredentials:             "AlterUserSCRAMCredentials",
	APIVote:                                  "Vote",
	APIBeginQuorumEpoch:                      "BeginQuorumEpoch",
	APIEndQuorumEpoch:                        "EndQuorumEpoch",
	APIDescribeQuorum:                        "DescribeQuorum",
	APIAlterPartition:                        "AlterPartition",
	APIUpdateFeatures:                        "UpdateFeatures",
	APIEnvelope:                              "Envelope",
	APIFetchSnapshot:                         "FetchSnapshot",
	APIDescribeCluster:                       "DescribeCluster",
	APIDescribeProducers:                     "DescribeProducers",
	APIBrokerRegistration:                    "BrokerRegistration",
	APIBrokerHeartbeat:                       "BrokerHeartbeat",
	APIUnregisterBroker:                      "UnregisterBroker",
	APIDescribeTransactions:                  "DescribeTransactions",
	APIListTransactions:                      "ListTransactions",
	APIAllocateProducerIDs:                   "AllocateProducerIDs",
	APIConsumerGroupHeartbeat:                "ConsumerGroupHeartbeat",
	APIConsumerGroupDescribe:                 "ConsumerGroupDescribe",
	APIControllerRegistration:                "ControllerRegistration",
	APIGetTelemetrySubscriptions:             "GetTelemetrySubscriptions",
	APIPushTelemetry:                         "PushTelemetry",
	APIAssignReplicasToDirs:                  "AssignReplicasToDirs",
	APIListConfigResources:                   "ListConfigResources",
	APIDescribeTopicPartitions:               "DescribeTopicPartitions",
	APIShareGroupHeartbeat:                   "ShareGroupHeartbeat",
	APIShareGroupDescribe:                    "ShareGroupDescribe",
	APIShareFetch:                            "ShareFetch",
	APIShareAcknowledge:                      "ShareAcknowledge",
	APIAddRaftVoter:                          "AddRaftVoter",
	APIRemoveRaftVoter:                       "RemoveRaftVoter",
	APIUpdateRaftVoter:                       "UpdateRaftVoter",
	APIInitializeShareGroupState:             "InitializeShareGroupState",
	APIReadShareGroupState:                   "ReadShareGroupState",
	APIWriteShareGroupState:                  "WriteShareGroupState",
	APIDeleteShareGroupState:                 "DeleteShareGroupState",
	APIReadShareGroupStateSummary:            "ReadShareGroupStateSummary",
	APIStreamsGroupHeartbeat:                 "StreamsGroupHeartbeat",
	APIStreamsGroupDescribe:                  "StreamsGroupDescribe",
	APIDescribeShareGroupOffsets:             "DescribeShareGroupOffsets",
	APIAlterShareGroupOffsets:                "AlterShareGroupOffsets",
	APIDeleteShareGroupOffsets:               "DeleteShareGroupOffsets",
	APIStreamsGroupTopologyDescriptionUpdate: "StreamsGroupTopologyDescriptionUpdate",
	APIUnregisterController:                  "UnregisterController",
}

// APIName returns Kafka's name for an API key, or "Unknown(key)".
func APIName(key int16) string {
	if key >= 0 && int(key) < len(apiNames) && apiNames[key] != "" {
		return apiNames[key]
	}
	return fmt.Sprintf("Unknown(%d)", key)
}

// VersionRange is the range of versions of one API that a broker serves, as
// advertised in an ApiVersions response.
type VersionRange struct {
	Key, Min, Max int16
}

// VersionTable collects the version ranges the broker's handlers register.
// ApiVersions is derived from it. It is filled at start-up (one goroutine)
// and read-only afterwards, so concurrent readers need no lock.
type VersionTable struct {
	// ranges is indexed by API key; present[k] says whether key k is set.
	ranges  []VersionRange
	present []bool
}

// Add registers (or replaces) the range of an API key. It panics on a
// negative key or min > max: registrations are static programming facts.
func (t *VersionTable) Add(key, min, max int16) {
	if key < 0 || min < 0 || min > max {
		panic(fmt.Sprintf("wire: invalid version range for %s: key %d, %d..%d", APIName(key), key, min, max))
	}
	for int(key) >= len(t.ranges) {
		t.ranges = append(t.ranges, VersionRange{})
		t.present = append(t.present, false)
	}
	t.ranges[key] = VersionRange{Key: key, Min: min, Max: max}
	t.present[key] = true
}

// Lookup returns the range registered for key.
func (t *VersionTable) Lookup(key int16) (VersionRange, bool) {
	if key < 0 || int(key) >= len(t.ranges) || !t.present[key] {
		return VersionRange{}, false
	}
	return t.ranges[key], true
}

// Supports reports whether version of API key is within the registered range.
func (t *VersionTable) Supports(key, version int16) bool {
	r, ok := t.Lookup(key)
	return ok && version >= r.Min && version <= r.Max
}

// Ranges returns every registered range, sorted by key, in a new slice.
func (t *VersionTable) Ranges() []VersionRange {
	out := make([]VersionRange, 0, len(t.ranges))
	// ranges is indexed by key, so walking it in order yields sorted output.
	for key, ok := range t.present {
		if ok {
			out = append(out, t.ranges[key])
		}
	}
	return out
}
