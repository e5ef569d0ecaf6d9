package group

import (
	"context"
	"slices"
	"time"
)

// This file holds the group's rebalance state machine. Every function here
// runs with g.mu held, on behalf of a handler or of Tick.
//
//	Empty ──join──▶ PreparingRebalance ──all joined / timer──▶ CompletingRebalance
//	  ▲                   ▲    │ (no members left)                  │ leader's SyncGroup
//	  └───────────────────┼────┘                                    ▼
//	                      └──────── join / leave / expiry ─────── Stable
//
// Dead is terminal: the group was deleted or expired and left the
// coordinator's map.

// prepareRebalance starts a rebalance: the group waits for every member to
// (re)join. The first rebalance of an empty group waits
// group.initial.rebalance.delay for more members, extended by the same
// delay while members keep arriving, up to the rebalance timeout; other
// rebalances end when all members have joined or at the rebalance timeout.
func (g *group) prepareRebalance(ctx context.Context, now time.Time) {
	if g.state == stateCompletingRebalance {
		g.resetAssignments(groupError(g.id, ErrRebalanceInProgress))
	}
	wasEmpty := g.state == stateEmpty
	g.transition(statePreparingRebalance, now)
	timeout := g.maxRebalanceTimeout()
	delay := g.coordinator.cfg.GroupInitialRebalanceDelay
	if wasEmpty && delay > 0 {
		g.initialDelay = true
		g.initialNewJoiner = false
		g.initialDeadline = now.Add(min(delay, timeout))
		g.initialRemaining = max(timeout-delay, 0)
		return
	}
	g.initialDelay = false
	g.rebalanceDeadline = now.Add(timeout)
	g.tryCompleteJoin(ctx, now)
}

// tryCompleteJoin completes the join phase early when nobody else is
// expected; the initial delay completes only by timer, as in Kafka.
func (g *group) tryCompleteJoin(ctx context.Context, now time.Time) {
	if g.state == statePreparingRebalance && !g.initialDelay && g.allMembersJoined() {
		g.completeJoin(ctx, now)
	}
}

// completeJoin ends the join phase: members that did not rejoin are
// removed, the generation advances, a protocol is selected and every
// parked JoinGroup is answered (the leader with the member list).
func (g *group) completeJoin(ctx context.Context, now time.Time) {
	for _, id := range slices.Clone(g.order) {
		if g.members[id].joinWaiter == nil {
			g.removeMember(id, memberError(g.id, id, ErrUnknownMember))
		}
	}
	g.initialDelay = false
	g.generation++
	if hook := g.coordinator.cfg.OnRebalance; hook != nil {
		hook()
	}
	if len(g.members) == 0 {
		g.protocol = ""
		g.leader = ""
		g.transition(stateEmpty, now)
		// Best effort: the empty generation is re-derived if lost; only the
		// generation number (monotonic in memory) is at stake.
		_ = g.persistMetadata(ctx, now)
		return
	}
	g.protocol = g.selectProtocol()
	if g.protocol == "" {
		// Unreachable while joins are checked with supportsProtocols; keep
		// the leader's favourite so responses stay well formed.
		g.protocol = g.members[g.leader].protocols[0].Name
	}
	g.transition(stateCompletingRebalance, now)
	for _, id := range g.order {
		m := g.members[id]
		m.joinedGeneration = g.generation
		m.lastHeartbeat = now
		g.deliverJoin(m, g.currentJoinResult(m, false), nil)
	}
}

// removeMemberAndRebalance removes a member that left or expired and
// rebalances the rest.
func (g *group) removeMemberAndRebalance(ctx context.Context, id string, err error, now time.Time) {
	g.removeMember(id, err)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.prepareRebalance(ctx, now)
	case statePreparingRebalance:
		g.tryCompleteJoin(ctx, now)
	}
}

// tick fires the group's due timers: KIP-394 pending member expiry,
// session timeouts, the initial delay and the rebalance timeout.
func (g *group) tick(ctx context.Context, now time.Time) {
	if g.state == stateDead {
		return
	}
	if g.consumer != nil {
		g.tickConsumer(ctx, now)
		return
	}
	if g.share != nil {
		g.tickShare(ctx, now)
		return
	}
	expiredPending := false
	for id, deadline := range g.pendingMembers {
		if !now.Before(deadline) {
			delete(g.pendingMembers, id)
			expiredPending = true
		}
	}
	for _, id := range slices.Clone(g.order) {
		m, ok := g.members[id]
		if !ok || m.joinWaiter != nil {
			continue // parked joins are bounded by the rebalance timeout
		}
		if !now.Before(m.lastHeartbeat.Add(m.sessionTimeout)) {
			g.removeMemberAndRebalance(ctx, id, memberError(g.id, id, ErrUnknownMember), now)
		}
	}
	if g.state != statePreparingRebalance {
		return
	}
	switch {
	case g.initialDelay && !now.Before(g.initialDeadline):
		if g.initialNewJoiner && g.initialRemaining > 0 {
			delay := min(g.coordinator.cfg.GroupInitialRebalanceDelay, g.initialRemaining)
			g.initialDeadline = now.Add(delay)
			g.initialRemaining -= delay
			g.initialNewJoiner = false
			return
		}
		g.completeJoin(ctx, now)
	case !g.initialDelay && !now.Before(g.rebalanceDeadline):
		g.completeJoin(ctx, now)
	case expiredPending:
		g.tryCompleteJoin(ctx, now)
	}
}

// persistMetadata appends the group's metadata record (generation,
// protocol, leader, members with their assignments).
func (g *group) persistMetadata(ctx context.Context, now time.Time) error {
	value := groupMetadataValue{
		ProtocolType:       g.protocolType,
		Generation:         g.generation,
		CurrentStateMillis: g.stateSince.UnixMilli(),
	}
	if g.protocol != "" {
		protocol := g.protocol
		value.Protocol = &protocol
	}
	if g.leader != "" {
		leader := g.leader
		value.Leader = &leader
	}
	for _, id := range g.order {
		m := g.members[id]
		value.Members = append(value.Members, memberMetadataValue{
			MemberID:         id,
			InstanceID:       m.instanceID,
			ClientID:         m.clientID,
			ClientHost:       m.clientHost,
			RebalanceTimeout: int32(m.rebalanceTimeout / time.Millisecond),
			SessionTimeout:   int32(m.sessionTimeout / time.Millisecond),
			Subscription:     m.protocolMetadata(g.protocol),
			Assignment:       m.assignment,
		})
	}
	record := StoreRecord{Key: encodeGroupKey(g.id), Value: encodeGroupValue(value)}
	return g.coordinator.appendRecords(ctx, g.partition, now, []StoreRecord{record})
}
