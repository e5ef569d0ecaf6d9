package group

import "time"

// This file holds the coordinator's typed inputs and outputs. They carry
// what a request means, not how a Kafka version encodes it: the broker's
// per-API files decode a request into them (applying the version's
// defaults) and encode the answer for the response's version.

// Protocol is one protocol a joining member supports, with its metadata
// (for consumers, the subscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is one JoinGroup.
type JoinRequest struct {
	Group string
	// MemberID is "" for a member joining for the first time.
	MemberID string
	// InstanceID is the group.instance.id of a static member (KIP-345), nil
	// for a dynamic member.
	InstanceID   *string
	ProtocolType string
	// Protocols are the member's supported protocols, in preference order.
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	// RequireKnownMemberID makes a dynamic member joining with an empty
	// member id get ErrMemberIDRequired with a generated id first
	// (KIP-394, JoinGroup v4+).
	RequireKnownMemberID bool
	// Client is the connection the request came on; member ids start with
	// its client id and DescribeGroups reports it.
	Client ClientInfo
}

// JoinResult is the outcome of a join. With an error only MemberID (the
// member id the join was handled under, or the generated id with
// ErrMemberIDRequired) is set, and Generation is -1.
type JoinResult struct {
	MemberID     string
	Generation   int32
	ProtocolType string
	// Protocol is the selected protocol; nil with an error.
	Protocol *string
	Leader   string
	// Members is the member list, for the leader only.
	Members []JoinedMember
	// SkipAssignment tells a static leader that rejoined without a
	// rebalance not to assign again (KIP-814).
	SkipAssignment bool
}

// JoinedMember is one member in the leader's member list.
type JoinedMember struct {
	MemberID   string
	InstanceID *string
	// Metadata is the member's metadata for the selected protocol.
	Metadata []byte
}

// JoinReply receives a join's outcome. The coordinator calls it exactly
// once: before Join returns, or later from whichever call completes the
// rebalance step (another request, Tick or Close). It runs under the
// group's lock, so it must not block or call the coordinator; handing the
// outcome to a buffered channel is the intended use.
type JoinReply func(JoinResult, error)

// SyncRequest is one SyncGroup.
type SyncRequest struct {
	Group      string
	MemberID   string
	InstanceID *string
	Generation int32
	// ProtocolType and Protocol, when set (SyncGroup v5+), must match the
	// group's.
	ProtocolType *string
	Protocol     *string
	// Assignments is the leader's assignment per member (empty for
	// followers).
	Assignments []Assignment
}

// Assignment is what the leader assigns one member.
type Assignment struct {
	MemberID   string
	Assignment []byte
}

// SyncResult is the member's assignment in the group's generation, with
// the generation's protocol type and protocol.
type SyncResult struct {
	Assignment   []byte
	ProtocolType string
	Protocol     string
}

// SyncReply receives a sync's outcome, exactly once, under the same rules
// as JoinReply.
type SyncReply func(SyncResult, error)

// HeartbeatRequest is one Heartbeat.
type HeartbeatRequest struct {
	Group      string
	MemberID   string
	InstanceID *string
	Generation int32
}

// Leaver is one member leaving, named by member id and/or (static
// members) instance id.
type Leaver struct {
	MemberID   string
	InstanceID *string
}

// CommitRequest is one OffsetCommit.
type CommitRequest struct {
	Group string
	// Generation -1 with an empty MemberID and no InstanceID is a simple
	// (admin) commit, allowed only while the group has no members.
	Generation int32
	MemberID   string
	InstanceID *string
	Topics     []CommitTopic
	// ByTopicID: topics are named by ID (resolved with Config.Topics), not
	// by Name.
	ByTopicID bool
	// LegacyVersion marks an OffsetCommit older than v9, which members of
	// consumer-protocol groups may not use (UNSUPPORTED_VERSION).
	LegacyVersion bool
}

// CommitTopic is one topic to commit offsets of.
type CommitTopic struct {
	Name       string
	ID         [16]byte
	Partitions []CommitPartition
}

// CommitPartition is one offset to commit.
type CommitPartition struct {
	Partition int32
	Offset    int64
	// LeaderEpoch is -1 when unknown.
	LeaderEpoch int32
	Metadata    *string
}

// TxnCommitRequest is one TxnOffsetCommit: offsets committed in the
// producer's transaction. The member is checked only when Generation,
// MemberID or InstanceID is set.
type TxnCommitRequest struct {
	CommitRequest
	ProducerID    int64
	ProducerEpoch int16
}

// FetchRequest is one group of an OffsetFetch.
type FetchRequest struct {
	Group string
	// Topics nil asks for every committed offset of the group.
	Topics []FetchTopic
	// ByTopicID: requested topics are named by ID, and answered topics
	// carry their ID (topics without one are left out of "every offset").
	ByTopicID bool
	// RequireStable answers ErrUnstableOffset for partitions with a
	// pending transactional commit.
	RequireStable bool
	// MemberID and MemberEpoch (OffsetFetch v9+) name the fetching member
	// of a consumer-protocol group, checked like a commit's; nil and -1
	// for a fetch outside the group (admin clients, classic groups).
	MemberID    *string
	MemberEpoch int32
}

// FetchTopic is one requested topic.
type FetchTopic struct {
	Name       string
	ID         [16]byte
	Partitions []int32
}

// FetchedTopic is one answered topic.
type FetchedTopic struct {
	Name       string
	ID         [16]byte
	Partitions []FetchedPartition
}

// FetchedPartition is one committed offset; Offset and LeaderEpoch are -1
// when nothing is committed.
type FetchedPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	Err         error
}

// DeleteOffsetsTopic names partitions whose committed offsets to delete.
type DeleteOffsetsTopic struct {
	Name       string
	Partitions []int32
}

// GroupDescription is a group as DescribeGroups reports it. Protocol and
// the members' metadata and assignments are set only while Stable.
type GroupDescription struct {
	State        string
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// MemberDescription is one member of a described group.
type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// ListFilter selects groups to list; an empty list matches everything.
// Matching is case-insensitive.
type ListFilter struct {
	States []string
	Types  []string
}

// GroupListing is one listed group.
type GroupListing struct {
	Group        string
	State        string
	ProtocolType string
	// Type is the group type (KIP-848); every group here is "classic".
	Type string
}
