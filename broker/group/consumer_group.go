package group

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"
)

// This file holds the state of a KIP-848 consumer group. A group is one
// of two types: classic (JoinGroup/SyncGroup, the state of group itself) or
// consumer (ConsumerGroupHeartbeat): group.consumer is non-nil exactly for
// the latter. A group's type is fixed while it has members; an empty
// classic group becomes a consumer group on its first
// ConsumerGroupHeartbeat, and an empty consumer group becomes classic on
// its first JoinGroup, as in Kafka. Everything here is guarded by the
// owning group's mu.
//
// Epochs: the group epoch advances whenever the target assignment must be
// recomputed (a member joins, leaves or expires, a subscription changes,
// or a subscribed topic appears or grows); the target assignment is then
// computed at once, so the assignment epoch always equals the group epoch
// after a heartbeat. Each member converges to its target by the steps of
// consumerGroup.reconcile, and its member epoch reaches the assignment
// epoch when it has no partition left to revoke.
//
// Invariant (checked by checkConsumerOwnership in tests): a partition is
// held — in assigned or pendingRevocation — by at most one member. A
// partition enters a member's assigned set only while no other member
// holds it, so a partition moves to a new owner only after its previous
// owner acknowledged the revocation in a heartbeat (it stopped reporting
// it) or was removed (left, fenced, expired).

// Consumer group states, as ConsumerGroupDescribe and ListGroups name them.
const (
	consumerStateEmpty       = "Empty"
	consumerStateReconciling = "Reconciling"
	consumerStateStable      = "Stable"
)

// consumerGroupType is the group type of consumer-protocol groups.
const consumerGroupType = "consumer"

// Server assignors (Kafka's names); uniform is the default.
const (
	uniformAssignor = "uniform"
	rangeAssignor   = "range"
)

// memberState is a member's reconciliation state (Kafka's MemberState,
// with its int8 codes, persisted in the current assignment record).
type memberState int8

const (
	// memberStable: the member has its whole current assignment.
	memberStable memberState = 0
	// memberUnrevokedPartitions: the member must revoke
	// pendingRevocation before it gets anything new.
	memberUnrevokedPartitions memberState = 1
	// memberUnreleasedPartitions: part of the target is still held by
	// other members; the member waits for them.
	memberUnreleasedPartitions memberState = 2
)

// partitions is a set of partitions by topic id; each slice is sorted and
// free of duplicates, and no slice is empty.
type partitions map[[16]byte][]int32

func (p partitions) clone() partitions {
	out := make(partitions, len(p))
	for id, list := range p {
		out[id] = slices.Clone(list)
	}
	return out
}

func (p partitions) has(id [16]byte, partition int32) bool {
	_, found := slices.BinarySearch(p[id], partition)
	return found
}

func (p partitions) add(id [16]byte, partition int32) {
	list := p[id]
	if i, found := slices.BinarySearch(list, partition); !found {
		p[id] = slices.Insert(list, i, partition)
	}
}

func (p partitions) count() int {
	n := 0
	for _, list := range p {
		n += len(list)
	}
	return n
}

func (p partitions) equal(other partitions) bool {
	return maps.EqualFunc(p, other, slices.Equal)
}

// list returns the set sorted by topic id, for responses and records.
func (p partitions) list() []TopicPartitions {
	ids := slices.SortedFunc(maps.Keys(p), func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	out := make([]TopicPartitions, 0, len(ids))
	for _, id := range ids {
		out = append(out, TopicPartitions{TopicID: id, Partitions: slices.Clone(p[id])})
	}
	return out
}

// partitionsFrom builds a set from a request's or record's topic list,
// dropping duplicates.
func partitionsFrom(topics []TopicPartitions) partitions {
	out := make(partitions, len(topics))
	for _, topic := range topics {
		for _, partition := range topic.Partitions {
			out.add(topic.TopicID, partition)
		}
	}
	return out
}

// consumerMember is one member of a consumer group.
type consumerMember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string
	// subscribedTopics is sorted; regex is the source of the subscribed
	// regular expression ("" for none), compiled in pattern (full match).
	subscribedTopics []string
	regex            string
	pattern          *regexp.Regexp
	serverAssignor   string
	rebalanceTimeout time.Duration

	// memberEpoch is the epoch the member must heartbeat with;
	// previousEpoch is accepted too while the response that carried the
	// bump may have been lost. StaticLeaveEpoch while a static member is
	// away.
	memberEpoch   int32
	previousEpoch int32
	state         memberState
	// assigned are the partitions the member was told it owns;
	// pendingRevocation the ones it was told to give up and has not yet
	// acknowledged. Disjoint.
	assigned          partitions
	pendingRevocation partitions
	// target is the member's share of the target assignment.
	target partitions

	// sessionDeadline: the member is removed when it passes without a
	// heartbeat. revocationDeadline (zero: none): the member is removed if
	// it still has not revoked pendingRevocation by then.
	sessionDeadline    time.Time
	revocationDeadline time.Time
}

// subscribes reports whether the member subscribes to the named topic.
func (m *consumerMember) subscribes(topic string) bool {
	if _, found := slices.BinarySearch(m.subscribedTopics, topic); found {
		return true
	}
	return m.pattern != nil && m.pattern.MatchString(topic)
}

// consumerGroup is the consumer-protocol state of a group.
type consumerGroup struct {
	// groupEpoch and assignmentEpoch: see the file comment. Both survive
	// restarts (persisted).
	groupEpoch      int32
	assignmentEpoch int32
	members         map[string]*consumerMember
	// staticMembers maps an instance id to the member id holding it.
	staticMembers map[string]string
	// metadata is the signature of the subscribed topics (names, ids and
	// partition counts) the target assignment was computed over; a change
	// bumps the group epoch. Empty after a restart: the first heartbeat
	// recomputes the target.
	metadata string
	// unflushed are records whose append failed: the in-memory state is
	// ahead of the log, so the next append writes them first (later
	// records of the same key override them on replay).
	unflushed []StoreRecord
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: make(map[string]*consumerMember), staticMembers: make(map[string]string)}
}

// state is the group's state as ConsumerGroupDescribe reports it.
func (cg *consumerGroup) state() string {
	if len(cg.members) == 0 {
		return consumerStateEmpty
	}
	for _, m := range cg.members {
		if m.memberEpoch == StaticLeaveEpoch {
			continue
		}
		if m.state != memberStable || m.memberEpoch != cg.assignmentEpoch {
			return consumerStateReconciling
		}
	}
	return consumerStateStable
}

// assignorName is the server assignor the group uses: the one its members
// name (the most common one; ties go to the alphabetically first), or
// uniform.
func (cg *consumerGroup) assignorName() string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best := uniformAssignor
	bestVotes := 0
	for _, name := range slices.Sorted(maps.Keys(votes)) {
		if votes[name] > bestVotes {
			best, bestVotes = name, votes[name]
		}
	}
	return best
}

// holder returns the member (other than except) holding the partition in
// assigned or pendingRevocation, or "".
func (cg *consumerGroup) holder(id [16]byte, partition int32, except string) string {
	for memberID, m := range cg.members {
		if memberID != except && (m.assigned.has(id, partition) || m.pendingRevocation.has(id, partition)) {
			return memberID
		}
	}
	return ""
}

// sortedMemberIDs returns the member ids in order.
func (cg *consumerGroup) sortedMemberIDs() []string {
	return slices.Sorted(maps.Keys(cg.members))
}

// classicGroupFor readies g for a classic JoinGroup: a consumer group with
// members refuses it (INCONSISTENT_GROUP_PROTOCOL: classic members cannot
// join a consumer-protocol group here), an empty one becomes classic (its
// records are deleted, its offsets kept).
func (g *group) classicGroupFor(ctx context.Context) error {
	if g.share != nil {
		return fmt.Errorf("group %q is a share group: %w", g.id, ErrInconsistentProtocol)
	}
	cg := g.consumer
	if cg == nil {
		return nil
	}
	if len(cg.members) > 0 {
		return fmt.Errorf("group %q is a consumer-protocol group with members: %w", g.id, ErrInconsistentProtocol)
	}
	records := append(slices.Clone(cg.unflushed), consumerGroupTombstones(g.id)...)
	if err := g.coordinator.appendRecords(ctx, g.partition, g.coordinator.cfg.Now(), records); err != nil {
		return storeError(g.id, err)
	}
	g.consumer = nil
	return nil
}

// hasConsumerMembers reports whether g is a consumer group with members.
func (g *group) hasConsumerMembers() bool {
	return g.consumer != nil && len(g.consumer.members) > 0
}
