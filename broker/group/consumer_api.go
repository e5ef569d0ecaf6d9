package group

import "time"

// This file holds the typed inputs and outputs of the KIP-848 consumer
// group protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe). Topics
// are named by id, as on the wire; the broker's handlers resolve names
// where a response carries them.

// TopicPartitions is a set of partitions of one topic, named by topic id.
type TopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// Member epochs with a special meaning in ConsumerGroupHeartbeat.
const (
	// JoinEpoch (0) joins or rejoins the group.
	JoinEpoch int32 = 0
	// LeaveEpoch (-1) leaves the group for good.
	LeaveEpoch int32 = -1
	// StaticLeaveEpoch (-2) is a static member's temporary leave: the
	// member keeps its assignment until it rejoins with the same instance
	// id or its session times out.
	StaticLeaveEpoch int32 = -2
)

// ConsumerHeartbeatRequest is one ConsumerGroupHeartbeat. A nil slice or
// pointer (and RebalanceTimeoutMillis -1) means "unchanged since the last
// heartbeat", as on the wire.
type ConsumerHeartbeatRequest struct {
	Group                  string
	MemberID               string
	MemberEpoch            int32
	InstanceID             *string
	RackID                 *string
	RebalanceTimeoutMillis int32
	SubscribedTopicNames   []string
	SubscribedTopicRegex   *string
	ServerAssignor         *string
	// Owned are the partitions the member owns (nil: not sent).
	Owned []TopicPartitions
	// MemberIDRequired: v1+ clients generate their member id, so an empty
	// one is an invalid request; v0 clients get one from the coordinator.
	MemberIDRequired bool
	Client           ClientInfo
}

// ConsumerHeartbeatResult is the answer to a heartbeat. Assignment is set
// (possibly empty) when the response must carry the member's assignment:
// on a full request, or when the assignment changed.
type ConsumerHeartbeatResult struct {
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	Assignment        *[]TopicPartitions
}

// ConsumerGroupDescription is a consumer group as ConsumerGroupDescribe
// reports it.
type ConsumerGroupDescription struct {
	State           string
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerMemberDescription
}

// ConsumerMemberDescription is one member of a described consumer group.
type ConsumerMemberDescription struct {
	MemberID             string
	InstanceID           *string
	RackID               *string
	MemberEpoch          int32
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	Assignment           []TopicPartitions
	TargetAssignment     []TopicPartitions
}

// TopicCatalog tells the coordinator which topics exist, for server-side
// assignment: the partition count and id of a subscribed topic, and every
// topic name for regular expression subscriptions.
type TopicCatalog interface {
	// TopicPartitions returns the id and partition count of the named
	// topic, or false if there is none.
	TopicPartitions(name string) (id [16]byte, partitions int32, ok bool)
	// TopicNames lists every topic clients may subscribe to.
	TopicNames() []string
}
