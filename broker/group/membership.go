package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup (key 14), versions 0–5. The leader's request carries the
// assignment; every member's request blocks until the leader's arrives
// (or ctx ends). v3+ carry the instance id; v5 carries and returns the
// protocol type and name, checked against the group's.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = req.Version
	outcome, waiter, protocolType, protocol := c.sync(ctx, req)
	if waiter != nil {
		select {
		case outcome = <-waiter:
		case <-ctx.Done():
			outcome = syncOutcome{errorCode: kerr.RebalanceInProgress.Code}
		case <-c.closing:
			outcome = syncOutcome{errorCode: kerr.NotCoordinator.Code}
		}
	}
	resp.ErrorCode = outcome.errorCode
	resp.MemberAssignment = outcome.assignment
	if req.Version >= 5 && outcome.errorCode == 0 {
		resp.ProtocolType = &protocolType
		resp.Protocol = &protocol
	}
	return resp
}

func (c *Coordinator) sync(ctx context.Context, req *kmsg.SyncGroupRequest) (syncOutcome, chan syncOutcome, string, string) {
	fail := func(err *kerr.Error) (syncOutcome, chan syncOutcome, string, string) {
		return syncOutcome{errorCode: err.Code}, nil, "", ""
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID)
	}
	g := c.lockGroup(req.Group, false)
	if g == nil {
		if c.isClosed() {
			return fail(kerr.NotCoordinator)
		}
		return fail(kerr.UnknownMemberID)
	}
	defer g.mu.Unlock()
	instanceID := req.InstanceID
	if req.Version < 3 {
		instanceID = nil
	}
	m, ok := g.members[req.MemberID]
	switch {
	case g.isFencedInstance(instanceID, req.MemberID):
		return fail(kerr.FencedInstanceID)
	case !ok:
		return fail(kerr.UnknownMemberID)
	case req.Generation != g.generation:
		return fail(kerr.IllegalGeneration)
	case req.Version >= 5 && req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Version >= 5 && req.Protocol != nil && *req.Protocol != g.protocol:
		return fail(kerr.InconsistentGroupProtocol)
	}
	now := c.cfg.Now()
	switch g.state {
	case statePreparingRebalance:
		return fail(kerr.RebalanceInProgress)
	case stateStable:
		m.lastHeartbeat = now
		return syncOutcome{assignment: m.assignment}, nil, g.protocolType, g.protocol
	case stateCompletingRebalance:
	default:
		return fail(kerr.UnknownMemberID)
	}
	m.lastHeartbeat = now
	if m.syncWaiter != nil {
		g.deliverSync(m, syncOutcome{errorCode: kerr.RebalanceInProgress.Code})
	}
	g.newSyncWaiter(m)
	waiter := m.syncWaiter
	if req.MemberID == g.leader {
		g.completeSync(ctx, req.GroupAssignment, now)
	}
	return syncOutcome{}, waiter, g.protocolType, g.protocol
}

// completeSync installs the leader's assignment, persists the generation
// and answers every parked SyncGroup. On a store failure the generation is
// abandoned: parked syncs get the error and the group rebalances.
func (g *group) completeSync(ctx context.Context, assignments []kmsg.SyncGroupRequestGroupAssignment, now time.Time) {
	for _, m := range g.members {
		m.assignment = []byte{}
	}
	for _, assignment := range assignments {
		if m, ok := g.members[assignment.MemberID]; ok {
			m.assignment = cloneBytes(assignment.MemberAssignment)
		}
	}
	if err := g.persistMetadata(ctx, now); err != nil {
		g.resetAssignments(kerr.CoordinatorNotAvailable.Code)
		g.prepareRebalance(ctx, now)
		return
	}
	g.transition(stateStable, now)
	for _, m := range g.members {
		if m.syncWaiter != nil {
			g.deliverSync(m, syncOutcome{assignment: m.assignment})
		}
	}
}

// Heartbeat (key 12), versions 0–4. It keeps a member alive and tells it
// to rejoin (REBALANCE_IN_PROGRESS) while the group rebalances. v3+ carry
// the instance id.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	resp.ErrorCode = c.heartbeat(req)
	return resp
}

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.lockGroup(req.Group, false)
	if g == nil {
		if c.isClosed() {
			return kerr.NotCoordinator.Code
		}
		return kerr.UnknownMemberID.Code
	}
	defer g.mu.Unlock()
	instanceID := req.InstanceID
	if req.Version < 3 {
		instanceID = nil
	}
	m, ok := g.members[req.MemberID]
	switch {
	case g.isFencedInstance(instanceID, req.MemberID):
		return kerr.FencedInstanceID.Code
	case !ok || g.state == stateEmpty:
		return kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	m.lastHeartbeat = c.cfg.Now()
	if g.state == statePreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// LeaveGroup (key 13), versions 0–5. v0–v2 name one member; v3+ name a
// batch of members, each by member id and/or instance id, with an error
// per member. Leaving rebalances the remaining members.
func (c *Coordinator) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	leavers := req.Members
	if req.Version < 3 {
		leavers = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	g := c.lockGroup(req.Group, false)
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		if c.isClosed() {
			resp.ErrorCode = kerr.NotCoordinator.Code
		}
		return resp
	}
	defer g.mu.Unlock()
	now := c.cfg.Now()
	for _, leaver := range leavers {
		code := g.leave(ctx, leaver, now)
		if req.Version < 3 {
			resp.ErrorCode = code
			continue
		}
		resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{
			MemberID:   leaver.MemberID,
			InstanceID: leaver.InstanceID,
			ErrorCode:  code,
		})
	}
	return resp
}

// leave removes one member, found by member id or (static members, with
// an empty member id) by instance id.
func (g *group) leave(ctx context.Context, leaver kmsg.LeaveGroupRequestMember, now time.Time) int16 {
	memberID := leaver.MemberID
	if leaver.InstanceID != nil {
		owner, ok := g.staticMembers[*leaver.InstanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case memberID != "" && owner != memberID:
			return kerr.FencedInstanceID.Code
		}
		memberID = owner
	}
	if _, pending := g.pendingMembers[memberID]; pending {
		delete(g.pendingMembers, memberID)
		g.tryCompleteJoin(ctx, now)
		return 0
	}
	if _, ok := g.members[memberID]; !ok {
		return kerr.UnknownMemberID.Code
	}
	g.removeMemberAndRebalance(ctx, memberID, kerr.UnknownMemberID.Code, now)
	return 0
}
