package group

import (
	"context"
	"time"
)

// Join handles one JoinGroup (the JoinGroup handler in package broker/api has the versions'
// behaviour). reply gets the outcome exactly once: at once for a join that
// is answered without waiting (an error, KIP-394's ErrMemberIDRequired, a
// rejoin needing no rebalance), else when the rebalance the join takes
// part in completes — from the request, Tick or Close that completes it.
// Join returns the member id the join is handled under (generated for a
// new member), for an answer the caller gives itself if it stops waiting.
func (c *Coordinator) Join(ctx context.Context, req JoinRequest, reply JoinReply) string {
	fail := func(err error) string {
		reply(JoinResult{MemberID: req.MemberID, Generation: -1}, err)
		return req.MemberID
	}
	switch {
	case req.Group == "":
		return fail(ErrInvalidGroupID)
	case c.isClosed(): // the coordinator check comes before the settings' (a refusing one has none)
		return fail(groupError(req.Group, c.refusal()))
	case req.SessionTimeout < c.cfg.GroupMinSessionTimeout || req.SessionTimeout > c.cfg.GroupMaxSessionTimeout:
		return fail(groupError(req.Group, ErrInvalidSessionTimeout))
	case req.RebalanceTimeout < 0:
		return fail(groupError(req.Group, ErrInvalidRebalanceTimeout))
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		return fail(groupError(req.Group, ErrInconsistentProtocol))
	}
	g := c.lockGroup(req.Group, req.MemberID == "")
	if g == nil {
		if c.isClosed() {
			return fail(groupError(req.Group, c.refusal()))
		}
		return fail(memberError(req.Group, req.MemberID, ErrUnknownMember))
	}
	defer g.unlock()
	if err := g.classicGroupFor(ctx); err != nil {
		return fail(err)
	}
	now := c.cfg.Now()
	if g.state != stateEmpty && !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		return fail(groupError(req.Group, ErrInconsistentProtocol))
	}
	if req.MemberID == "" {
		return g.joinUnknownMember(ctx, req, now, reply)
	}
	return g.joinKnownMember(ctx, req, now, reply)
}

// failJoin answers a join at once with err wrapping sentinel.
func (g *group) failJoin(reply JoinReply, memberID string, sentinel error) string {
	reply(JoinResult{MemberID: memberID, Generation: -1}, memberError(g.id, memberID, sentinel))
	return memberID
}

// joinUnknownMember handles a join with an empty member id.
func (g *group) joinUnknownMember(ctx context.Context, req JoinRequest, now time.Time, reply JoinReply) string {
	memberID := newMemberID(req.Client.ClientID)
	if req.InstanceID != nil {
		if oldID, ok := g.staticMembers[*req.InstanceID]; ok {
			return g.replaceStaticMember(ctx, req, oldID, memberID, now, reply)
		}
		return g.addMemberAndRebalance(ctx, req, memberID, now, reply)
	}
	if req.RequireKnownMemberID {
		// KIP-394: hand out the id; the member counts as expected (the
		// rebalance waits for it) until it rejoins or its session ends.
		g.pendingMembers[memberID] = now.Add(req.SessionTimeout)
		return g.failJoin(reply, memberID, ErrMemberIDRequired)
	}
	return g.addMemberAndRebalance(ctx, req, memberID, now, reply)
}

// joinKnownMember handles a join that names its member id.
func (g *group) joinKnownMember(ctx context.Context, req JoinRequest, now time.Time, reply JoinReply) string {
	memberID := req.MemberID
	if _, pending := g.pendingMembers[memberID]; pending {
		delete(g.pendingMembers, memberID)
		return g.addMemberAndRebalance(ctx, req, memberID, now, reply)
	}
	if g.isFencedInstance(req.InstanceID, memberID) {
		return g.failJoin(reply, memberID, ErrFencedInstance)
	}
	m, ok := g.members[memberID]
	if !ok || g.state == stateEmpty {
		return g.failJoin(reply, memberID, ErrUnknownMember)
	}
	switch g.state {
	case statePreparingRebalance:
		return g.updateMemberAndRebalance(ctx, m, req, now, reply)
	case stateCompletingRebalance:
		if sameProtocols(m.protocols, req.Protocols) {
			// A retried join of this generation: answer it again.
			m.lastHeartbeat = now
			reply(g.currentJoinResult(m, false), nil)
			return m.id
		}
		return g.updateMemberAndRebalance(ctx, m, req, now, reply)
	default: // Stable
		if m.id == g.leader || !sameProtocols(m.protocols, req.Protocols) {
			return g.updateMemberAndRebalance(ctx, m, req, now, reply)
		}
		m.lastHeartbeat = now
		reply(g.currentJoinResult(m, false), nil)
		return m.id
	}
}

// addMemberAndRebalance adds a new member, parked until the join completes.
func (g *group) addMemberAndRebalance(ctx context.Context, req JoinRequest, memberID string, now time.Time, reply JoinReply) string {
	m := &member{
		id:               memberID,
		instanceID:       req.InstanceID,
		clientID:         req.Client.ClientID,
		clientHost:       req.Client.Host,
		sessionTimeout:   req.SessionTimeout,
		rebalanceTimeout: req.RebalanceTimeout,
		protocolType:     req.ProtocolType,
		protocols:        cloneProtocols(req.Protocols),
		lastHeartbeat:    now,
		joinWaiter:       reply,
	}
	g.addMember(m)
	if g.state == statePreparingRebalance && g.initialDelay {
		g.initialNewJoiner = true
	}
	g.rebalanceOrComplete(ctx, now)
	return memberID
}

// updateMemberAndRebalance records a known member's rejoin (possibly with
// new protocols) and parks it until the join completes.
func (g *group) updateMemberAndRebalance(ctx context.Context, m *member, req JoinRequest, now time.Time, reply JoinReply) string {
	m.protocols = cloneProtocols(req.Protocols)
	m.sessionTimeout = req.SessionTimeout
	m.rebalanceTimeout = req.RebalanceTimeout
	m.lastHeartbeat = now
	if m.joinWaiter != nil {
		// The member joined again while its earlier join is parked (e.g. the
		// client timed out and retried): the earlier request is superseded.
		g.deliverJoin(m, JoinResult{MemberID: m.id, Generation: -1}, memberError(g.id, m.id, ErrRebalanceInProgress))
	}
	m.joinWaiter = reply
	id := m.id
	g.rebalanceOrComplete(ctx, now)
	return id
}

// rebalanceOrComplete starts a rebalance, or, when one is in progress,
// completes it if this join was the last one expected.
func (g *group) rebalanceOrComplete(ctx context.Context, now time.Time) {
	if g.state == statePreparingRebalance {
		g.tryCompleteJoin(ctx, now)
		return
	}
	g.prepareRebalance(ctx, now)
}

// replaceStaticMember handles a static member rejoining with an empty
// member id: the instance keeps its place under a new member id and the
// old id is fenced. In a Stable group with unchanged protocols nothing is
// rebalanced: the member gets the current generation back (the leader with
// the member list and SkipAssignment, KIP-814).
func (g *group) replaceStaticMember(ctx context.Context, req JoinRequest, oldID, newID string, now time.Time, reply JoinReply) string {
	old := g.members[oldID]
	g.failWaiters(old, memberError(g.id, oldID, ErrFencedInstance))
	unchanged := sameProtocols(old.protocols, req.Protocols)
	m := g.replaceMemberID(oldID, newID)
	m.clientID, m.clientHost = req.Client.ClientID, req.Client.Host
	m.lastHeartbeat = now
	if g.state == stateStable && unchanged {
		m.sessionTimeout = req.SessionTimeout
		m.rebalanceTimeout = req.RebalanceTimeout
		if err := g.persistMetadata(ctx, now); err != nil {
			// Undo: the old id stays valid and the client retries.
			g.replaceMemberID(newID, oldID)
			reply(JoinResult{Generation: -1}, storeError(g.id, err))
			return ""
		}
		reply(g.currentJoinResult(m, m.id == g.leader), nil)
		return m.id
	}
	return g.updateMemberAndRebalance(ctx, m, req, now, reply)
}

func cloneProtocols(protocols []Protocol) []Protocol {
	out := make([]Protocol, len(protocols))
	for i, protocol := range protocols {
		out[i] = Protocol{Name: protocol.Name, Metadata: cloneBytes(protocol.Metadata)}
	}
	return out
}
