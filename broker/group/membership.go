package group

import (
	"context"
	"time"
)

// Sync handles one SyncGroup. The leader's request carries the assignment;
// every member's request is parked until the leader's arrives. reply gets
// the outcome exactly once: at once, or from the request, Tick or Close
// that ends the wait (see JoinReply).
func (c *Coordinator) Sync(ctx context.Context, req SyncRequest, reply SyncReply) {
	fail := func(err error) { reply(SyncResult{}, err) }
	if req.Group == "" {
		fail(ErrInvalidGroupID)
		return
	}
	g := c.lockGroup(req.Group, false)
	if g == nil {
		if c.isClosed() {
			fail(groupError(req.Group, c.refusal()))
			return
		}
		fail(memberError(req.Group, req.MemberID, ErrUnknownMember))
		return
	}
	defer g.unlock()
	m, ok := g.members[req.MemberID]
	switch {
	case g.isFencedInstance(req.InstanceID, req.MemberID):
		fail(memberError(g.id, req.MemberID, ErrFencedInstance))
		return
	case !ok:
		fail(memberError(g.id, req.MemberID, ErrUnknownMember))
		return
	case req.Generation != g.generation:
		fail(memberError(g.id, req.MemberID, ErrIllegalGeneration))
		return
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		fail(groupError(g.id, ErrInconsistentProtocol))
		return
	}
	now := c.cfg.Now()
	switch g.state {
	case statePreparingRebalance:
		fail(groupError(g.id, ErrRebalanceInProgress))
		return
	case stateStable:
		m.lastHeartbeat = now
		reply(g.syncResult(m), nil)
		return
	case stateCompletingRebalance:
	default:
		fail(memberError(g.id, req.MemberID, ErrUnknownMember))
		return
	}
	m.lastHeartbeat = now
	if m.syncWaiter != nil {
		g.deliverSync(m, SyncResult{}, memberError(g.id, m.id, ErrRebalanceInProgress))
	}
	m.syncWaiter = reply
	if req.MemberID == g.leader {
		g.completeSync(ctx, req.Assignments, now)
	}
}

// completeSync installs the leader's assignment, persists the generation
// and answers every parked SyncGroup. On a store failure the generation is
// abandoned: parked syncs get the error and the group rebalances.
func (g *group) completeSync(ctx context.Context, assignments []Assignment, now time.Time) {
	for _, m := range g.members {
		m.assignment = []byte{}
	}
	for _, assignment := range assignments {
		if m, ok := g.members[assignment.MemberID]; ok {
			m.assignment = cloneBytes(assignment.Assignment)
		}
	}
	if err := g.persistMetadata(ctx, now); err != nil {
		g.resetAssignments(storeError(g.id, err))
		g.prepareRebalance(ctx, now)
		return
	}
	g.transition(stateStable, now)
	for _, m := range g.members {
		if m.syncWaiter != nil {
			g.deliverSync(m, g.syncResult(m), nil)
		}
	}
}

// Heartbeat keeps a member alive; while the group rebalances it answers
// ErrRebalanceInProgress (the member must rejoin).
func (c *Coordinator) Heartbeat(req HeartbeatRequest) error {
	if req.Group == "" {
		return ErrInvalidGroupID
	}
	g := c.lockGroup(req.Group, false)
	if g == nil {
		if c.isClosed() {
			return groupError(req.Group, c.refusal())
		}
		return memberError(req.Group, req.MemberID, ErrUnknownMember)
	}
	defer g.unlock()
	m, ok := g.members[req.MemberID]
	switch {
	case g.isFencedInstance(req.InstanceID, req.MemberID):
		return memberError(g.id, req.MemberID, ErrFencedInstance)
	case !ok || g.state == stateEmpty:
		return memberError(g.id, req.MemberID, ErrUnknownMember)
	case req.Generation != g.generation:
		return memberError(g.id, req.MemberID, ErrIllegalGeneration)
	}
	m.lastHeartbeat = c.cfg.Now()
	if g.state == statePreparingRebalance {
		return groupError(g.id, ErrRebalanceInProgress)
	}
	return nil
}

// Leave removes members, each named by member id and/or (static members)
// instance id, and rebalances the rest. It returns an error for the group
// as a whole, or one per leaver (nil for those that left).
func (c *Coordinator) Leave(ctx context.Context, groupID string, leavers []Leaver) ([]error, error) {
	if groupID == "" {
		return nil, ErrInvalidGroupID
	}
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return nil, groupError(groupID, c.refusal())
		}
		return nil, groupError(groupID, ErrUnknownMember)
	}
	defer g.unlock()
	now := c.cfg.Now()
	if g.consumer != nil {
		return g.consumerAdminLeave(ctx, leavers, now)
	}
	errs := make([]error, len(leavers))
	for i, leaver := range leavers {
		errs[i] = g.leave(ctx, leaver, now)
	}
	return errs, nil
}

// consumerAdminLeave is LeaveGroup sent to a consumer-protocol group: as
// in Kafka, it removes static members named by instance id (the admin's
// removal, kafka-consumer-groups --delete-members: a static member's own
// leave is temporary and keeps its partitions until its session ends); a
// member named by member id alone does not speak LeaveGroup here
// (UNKNOWN_MEMBER_ID, as Kafka answers a member not on the classic
// protocol).
func (g *group) consumerAdminLeave(ctx context.Context, leavers []Leaver, now time.Time) ([]error, error) {
	cg := g.consumer
	w := &consumerWrites{group: g.id}
	errs := make([]error, len(leavers))
	for i, leaver := range leavers {
		if leaver.InstanceID == nil {
			errs[i] = memberError(g.id, leaver.MemberID, ErrUnknownMember)
			continue
		}
		id, ok := cg.staticMembers[*leaver.InstanceID]
		switch {
		case !ok || cg.members[id] == nil:
			errs[i] = memberError(g.id, leaver.MemberID, ErrUnknownMember)
		case leaver.MemberID != "" && leaver.MemberID != id:
			errs[i] = memberError(g.id, leaver.MemberID, ErrFencedInstance)
		default:
			g.removeConsumerMember(cg.members[id], w)
		}
	}
	if err := g.flushConsumer(ctx, cg, w, now); err != nil {
		return nil, err
	}
	return errs, nil
}

// leave removes one member, found by member id or (static members, with
// an empty member id) by instance id.
func (g *group) leave(ctx context.Context, leaver Leaver, now time.Time) error {
	memberID := leaver.MemberID
	if leaver.InstanceID != nil {
		owner, ok := g.staticMembers[*leaver.InstanceID]
		switch {
		case !ok:
			return memberError(g.id, memberID, ErrUnknownMember)
		case memberID != "" && owner != memberID:
			return memberError(g.id, memberID, ErrFencedInstance)
		}
		memberID = owner
	}
	if _, pending := g.pendingMembers[memberID]; pending {
		delete(g.pendingMembers, memberID)
		g.tryCompleteJoin(ctx, now)
		return nil
	}
	if _, ok := g.members[memberID]; !ok {
		return memberError(g.id, memberID, ErrUnknownMember)
	}
	g.removeMemberAndRebalance(ctx, memberID, memberError(g.id, memberID, ErrUnknownMember), now)
	return nil
}
