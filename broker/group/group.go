package group

import (
	"bytes"
	"slices"
	"sync"
	"time"
)

// groupState is the classic-protocol group state, named as Kafka names it
// in DescribeGroups and ListGroups.
type groupState int

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

func (s groupState) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	default:
		return "Dead"
	}
}

// topicPartition names one partition of a topic.
type topicPartition struct {
	Topic     string
	Partition int32
}

// offsetEntry is one committed offset held in memory.
type offsetEntry struct {
	value offsetValue
	// appendOrder is the coordinator-wide order in which the offset was
	// appended to the store; a committed transaction's offset replaces a
	// plain commit only if it was appended later (as Kafka compares log
	// offsets).
	appendOrder int64
}

// member is one member of a group. Guarded by its group's mu.
type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	// protocols are the member's supported protocols in preference order.
	protocols []Protocol
	// assignment is what the leader assigned this member in the current
	// generation (nil until SyncGroup from the leader).
	assignment []byte
	// lastHeartbeat: the member is evicted at lastHeartbeat+sessionTimeout
	// unless it is awaiting a join (then the rebalance timeout governs).
	lastHeartbeat time.Time
	// joinWaiter is non-nil exactly while the member is "awaiting join": it
	// has sent JoinGroup in the current rebalance and the caller's reply
	// waits for the outcome. Called once (deliverJoin), then cleared.
	joinWaiter JoinReply
	// syncWaiter is non-nil while a SyncGroup of the member is parked in
	// CompletingRebalance. Called once (deliverSync), then cleared.
	syncWaiter SyncReply
	// joinedGeneration is the generation whose join the member completed.
	// Invariant: in CompletingRebalance and Stable it equals the group's
	// generation for every member.
	joinedGeneration int32
}

// protocolMetadata returns the member's metadata for protocol name.
func (m *member) protocolMetadata(name string) []byte {
	for _, protocol := range m.protocols {
		if protocol.Name == name {
			return protocol.Metadata
		}
	}
	return nil
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
	})
}

// group is one consumer group. Ownership: mu guards every field below it;
// handlers and Tick take mu for the whole of one operation, including the
// store append that persists its effect, so a group's operations are
// totally ordered. Lock order: group.mu before Coordinator.mu; never take a
// group's mu while holding Coordinator.mu.
type group struct {
	coordinator *Coordinator
	id          string
	partition   int32

	mu sync.Mutex
	// state: Dead only once the group has been removed from the
	// coordinator's map (deleted or expired); a Dead group is never reused.
	state      groupState
	stateSince time.Time
	// protocolType is empty for a group used only for offsets (simple
	// consumers); otherwise every member has this protocol type.
	protocolType string
	// protocol is the protocol selected for the current generation ("" when
	// none). Invariant: in CompletingRebalance and Stable every member
	// supports it.
	protocol string
	// generation increases by one each time a join completes; never
	// decreases (also across restarts: it is persisted).
	generation int32
	// leader is a member id, or "" when there are no members. Invariant:
	// leader != "" implies members[leader] exists.
	leader  string
	members map[string]*member
	// order is the member ids in join order: the first is the next leader
	// when the leader leaves, and protocol-vote ties go to the earliest
	// joiner's preference.
	order []string
	// staticMembers maps group.instance.id to the member id that owns it.
	staticMembers map[string]string
	// pendingMembers are KIP-394 member ids handed out with
	// MEMBER_ID_REQUIRED that have not joined yet, with their expiry.
	pendingMembers map[string]time.Time

	// rebalanceDeadline: in PreparingRebalance, when the join is completed
	// without the members that have not rejoined.
	rebalanceDeadline time.Time
	// initialDelay is true while the first rebalance of an empty group
	// waits group.initial.rebalance.delay for more members; then the join
	// completes only by timer, at initialDeadline.
	initialDelay     bool
	initialDeadline  time.Time
	initialRemaining time.Duration
	initialNewJoiner bool

	// consumer is the KIP-848 state of a consumer-protocol group, nil for
	// a classic group (see consumerGroup). Invariant: a consumer group has
	// no classic members (members, pendingMembers empty) and its classic
	// state is Empty.
	consumer *consumerGroup
	// share is the state of a share group (KIP-932), nil otherwise.
	// Invariant: a share group has no classic or consumer state.
	share *shareGroup

	offsets map[topicPartition]offsetEntry
	// pendingTxn holds offsets committed with TxnOffsetCommit per producer
	// id, applied by CompleteTxn(commit) and dropped by abort.
	pendingTxn map[int64]map[topicPartition]offsetEntry
}

func newGroup(coordinator *Coordinator, id string, now time.Time) *group {
	return &group{
		coordinator:    coordinator,
		id:             id,
		partition:      int32(PartitionFor(id, coordinator.cfg.OffsetsTopicPartitions)),
		state:          stateEmpty,
		stateSince:     now,
		members:        make(map[string]*member),
		staticMembers:  make(map[string]string),
		pendingMembers: make(map[string]time.Time),
		offsets:        make(map[topicPartition]offsetEntry),
		pendingTxn:     make(map[int64]map[topicPartition]offsetEntry),
	}
}

func (g *group) transition(state groupState, now time.Time) {
	g.state = state
	g.stateSince = now
}

// isFencedInstance reports whether a request carrying instanceID and
// memberID comes from a static member whose instance id now belongs to
// another member id (KIP-345 fencing).
func (g *group) isFencedInstance(instanceID *string, memberID string) bool {
	if instanceID == nil {
		return false
	}
	owner, ok := g.staticMembers[*instanceID]
	return ok && owner != memberID
}

// allMembersJoined reports whether every member is awaiting join and no
// KIP-394 member is still expected.
func (g *group) allMembersJoined() bool {
	if len(g.pendingMembers) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinWaiter == nil {
			return false
		}
	}
	return true
}

// maxRebalanceTimeout is the group's rebalance timeout: the largest of its
// members'.
func (g *group) maxRebalanceTimeout() time.Duration {
	var longest time.Duration
	for _, m := range g.members {
		longest = max(longest, m.rebalanceTimeout)
	}
	return longest
}

// candidateProtocols returns the protocols every member supports, in the
// preference order of the earliest joiner.
func (g *group) candidateProtocols() []string {
	if len(g.order) == 0 {
		return nil
	}
	var candidates []string
	for _, protocol := range g.members[g.order[0]].protocols {
		supported := true
		for _, m := range g.members {
			if !hasProtocol(m, protocol.Name) {
				supported = false
				break
			}
		}
		if supported {
			candidates = append(candidates, protocol.Name)
		}
	}
	return candidates
}

func hasProtocol(m *member, name string) bool {
	for _, protocol := range m.protocols {
		if protocol.Name == name {
			return true
		}
	}
	return false
}

// supportsProtocols reports whether a member with these protocols may join:
// the group is empty, or the protocol type matches and the member shares a
// protocol with every current member (else INCONSISTENT_GROUP_PROTOCOL).
func (g *group) supportsProtocols(protocolType string, protocols []Protocol) bool {
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, candidate := range g.candidateProtocols() {
		for _, protocol := range protocols {
			if protocol.Name == candidate {
				return true
			}
		}
	}
	return false
}

// selectProtocol picks the group's protocol as Kafka does: among the
// protocols all members support, each member votes for the first one in
// its own preference order; most votes wins. Ties go to the protocol the
// earliest joiner prefers.
func (g *group) selectProtocol() string {
	candidates := g.candidateProtocols()
	if len(candidates) == 0 {
		return ""
	}
	votes := make(map[string]int, len(candidates))
	for _, m := range g.members {
		for _, protocol := range m.protocols {
			if slices.Contains(candidates, protocol.Name) {
				votes[protocol.Name]++
				break
			}
		}
	}
	best := candidates[0]
	for _, candidate := range candidates[1:] {
		if votes[candidate] > votes[best] {
			best = candidate
		}
	}
	return best
}

// addMember inserts m, registers its instance id and keeps join order.
func (g *group) addMember(m *member) {
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	if m.instanceID != nil {
		g.staticMembers[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	if len(g.members) == 1 {
		g.protocolType = m.protocolType
	}
}

// removeMember deletes the member, answering its parked requests with
// err, and picks a new leader if it led.
func (g *group) removeMember(id string, err error) {
	m, ok := g.members[id]
	if !ok {
		return
	}
	g.failWaiters(m, err)
	delete(g.members, id)
	g.order = slices.DeleteFunc(g.order, func(other string) bool { return other == id })
	if m.instanceID != nil && g.staticMembers[*m.instanceID] == id {
		delete(g.staticMembers, *m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// replaceMemberID moves member oldID to newID (static member rejoin),
// keeping its place in the join order and its leadership.
func (g *group) replaceMemberID(oldID, newID string) *member {
	m := g.members[oldID]
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	for i, id := range g.order {
		if id == oldID {
			g.order[i] = newID
		}
	}
	if m.instanceID != nil {
		g.staticMembers[*m.instanceID] = newID
	}
	if g.leader == oldID {
		g.leader = newID
	}
	return m
}

// memberList is the member list the leader receives with its JoinGroup
// response: each member's metadata for the selected protocol.
func (g *group) memberList() []JoinedMember {
	list := make([]JoinedMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		list = append(list, JoinedMember{MemberID: id, InstanceID: m.instanceID, Metadata: m.protocolMetadata(g.protocol)})
	}
	return list
}

// currentJoinResult is the current generation's join result for m (a
// rejoin that needs no rebalance).
func (g *group) currentJoinResult(m *member, skipAssignment bool) JoinResult {
	protocol := g.protocol
	result := JoinResult{
		Generation:     g.generation,
		ProtocolType:   g.protocolType,
		Protocol:       &protocol,
		Leader:         g.leader,
		MemberID:       m.id,
		SkipAssignment: skipAssignment,
	}
	if m.id == g.leader {
		result.Members = g.memberList()
	}
	return result
}

// syncResult is m's answer to SyncGroup in the current generation.
func (g *group) syncResult(m *member) SyncResult {
	return SyncResult{Assignment: m.assignment, ProtocolType: g.protocolType, Protocol: g.protocol}
}

// resetAssignments clears every assignment and answers parked SyncGroups
// with err (the generation they synced for is over).
func (g *group) resetAssignments(err error) {
	for _, m := range g.members {
		m.assignment = nil
		if m.syncWaiter != nil {
			g.deliverSync(m, SyncResult{}, err)
		}
	}
}

// failWaiters answers m's parked JoinGroup and SyncGroup, if any, with err.
func (g *group) failWaiters(m *member, err error) {
	if m.joinWaiter != nil {
		g.deliverJoin(m, JoinResult{MemberID: m.id, Generation: -1}, err)
	}
	if m.syncWaiter != nil {
		g.deliverSync(m, SyncResult{}, err)
	}
}

// releaseWaiters answers every parked request of the group with err
// (Close).
func (g *group) releaseWaiters(err error) {
	for _, m := range g.members {
		g.failWaiters(m, err)
	}
}

// deliverJoin answers m's parked JoinGroup: the reply is cleared before it
// is called, so every parked join is answered exactly once.
func (g *group) deliverJoin(m *member, result JoinResult, err error) {
	reply := m.joinWaiter
	m.joinWaiter = nil
	reply(result, err)
}

// deliverSync answers m's parked SyncGroup, exactly once.
func (g *group) deliverSync(m *member, result SyncResult, err error) {
	reply := m.syncWaiter
	m.syncWaiter = nil
	reply(result, err)
}
