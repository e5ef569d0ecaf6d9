package group

import (
	"slices"
	"time"
)

// Share groups (KIP-932). A share group's members share partitions: the
// coordinator only tells each member which partitions to fetch from
// (ShareGroupHeartbeat); which member gets which record is decided by the
// partition's leader, which acquires records for a member per ShareFetch
// (package broker/share). There is no revocation step: a partition moves
// from one member to another at once, because records, not partitions,
// are owned.
//
// The coordinator also keeps each share-partition's durable state (its
// start offset and the delivery states of its in-flight records) for the
// partition leaders, which write it before answering a ShareFetch or
// ShareAcknowledge and read it when they take a share-partition up
// (WriteShareState, ReadShareState). Kafka keeps that state on a separate
// share coordinator over __share_group_state; here the group's own
// coordinator keeps it in __consumer_offsets, so it moves with the group
// and needs no second internal topic.

const (
	// shareGroupType is the group type (ListGroups v5) and protocol type
	// of share groups.
	shareGroupType = "share"
	// shareAssignorName is the one server assignor of share groups.
	shareAssignorName = "simple"
	// shareStateEmpty and shareStateStable are a share group's states as
	// ListGroups and ShareGroupDescribe report them.
	shareStateEmpty  = "Empty"
	shareStateStable = "Stable"
)

// shareGroup is the share state of a group.
type shareGroup struct {
	// epoch is the group epoch: bumped when a member joins or leaves, a
	// subscription changes or a subscribed topic's partitions change.
	// Persisted (share group metadata record), so it never goes back.
	epoch   int32
	members map[string]*shareMember
	// metadata is the signature of the subscribed topics the assignment
	// was computed over (see subscribedTopicMetadata).
	metadata string
	// states are the durable share-partition states, by topic id and
	// partition.
	states map[ShareKey]ShareState
	// target is the members' assignment computed at group epoch
	// targetEpoch (not persisted: a new coordinator computes it afresh).
	// Members take their part of it at their next heartbeat.
	target      map[string]partitions
	targetEpoch int32
}

// shareMember is one member of a share group.
type shareMember struct {
	id         string
	clientID   string
	clientHost string
	rackID     *string
	// subscribed is sorted.
	subscribed []string
	// epoch is the member epoch; previousEpoch is accepted too, as the
	// answer that carried a bump may have been lost.
	epoch, previousEpoch int32
	// assigned is what the member was last told to fetch from.
	assigned        partitions
	sessionTimeout  time.Duration
	sessionDeadline time.Time
}

func newShareGroup() *shareGroup {
	return &shareGroup{members: make(map[string]*shareMember), states: make(map[ShareKey]ShareState)}
}

// state is the group's state as ListGroups and ShareGroupDescribe report it.
func (sg *shareGroup) state() string {
	if len(sg.members) == 0 {
		return shareStateEmpty
	}
	return shareStateStable
}

func (sg *shareGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(sg.members))
	for id := range sg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
