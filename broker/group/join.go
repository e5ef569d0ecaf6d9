package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup (key 11), versions 0–9. It blocks until the rebalance the join
// takes part in completes, ctx ends, or the coordinator closes.
//
// v0 has no rebalance timeout (the session timeout is used); v4+ clients
// that join with an empty member id first get MEMBER_ID_REQUIRED with a
// generated id (KIP-394); v5+ carry group.instance.id (static membership,
// KIP-345); v7+ return the protocol type; v9 returns SkipAssignment.
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	outcome, waiter := c.join(ctx, req)
	if waiter != nil {
		select {
		case outcome = <-waiter:
		case <-ctx.Done():
			outcome = joinOutcome{errorCode: kerr.RebalanceInProgress.Code, generation: -1, memberID: outcome.memberID}
		case <-c.closing:
			outcome = joinOutcome{errorCode: kerr.NotCoordinator.Code, generation: -1, memberID: outcome.memberID}
		}
	}
	return joinResponse(req.Version, outcome)
}

func joinResponse(version int16, outcome joinOutcome) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = outcome.errorCode
	resp.Generation = outcome.generation
	resp.LeaderID = outcome.leader
	resp.MemberID = outcome.memberID
	resp.Protocol = outcome.protocol
	if version >= 7 && outcome.errorCode == 0 {
		protocolType := outcome.protocolType
		resp.ProtocolType = &protocolType
	}
	if version < 7 && resp.Protocol == nil {
		empty := ""
		resp.Protocol = &empty
	}
	if version >= 9 {
		resp.SkipAssignment = outcome.skipAssignment
	}
	resp.Members = outcome.members
	return resp
}

func joinError(code int16, memberID string) joinOutcome {
	return joinOutcome{errorCode: code, generation: -1, memberID: memberID}
}

// joinRequest is a JoinGroupRequest with version defaults applied.
type joinRequest struct {
	*kmsg.JoinGroupRequest
	client           ClientInfo
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	instanceID       *string
}

// join runs the join under the group's lock. It returns either a final
// outcome (waiter nil) or a waiter to block on (outcome carries the member
// id for error responses).
func (c *Coordinator) join(ctx context.Context, raw *kmsg.JoinGroupRequest) (joinOutcome, chan joinOutcome) {
	req := joinRequest{
		JoinGroupRequest: raw,
		client:           clientInfoFrom(ctx),
		sessionTimeout:   time.Duration(raw.SessionTimeoutMillis) * time.Millisecond,
		rebalanceTimeout: time.Duration(raw.RebalanceTimeoutMillis) * time.Millisecond,
	}
	if raw.Version < 1 {
		req.rebalanceTimeout = req.sessionTimeout
	}
	if raw.Version >= 5 && raw.InstanceID != nil {
		instanceID := *raw.InstanceID
		req.instanceID = &instanceID
	}
	switch {
	case raw.Group == "":
		return joinError(kerr.InvalidGroupID.Code, raw.MemberID), nil
	case req.sessionTimeout < c.cfg.GroupMinSessionTimeout || req.sessionTimeout > c.cfg.GroupMaxSessionTimeout:
		return joinError(kerr.InvalidSessionTimeout.Code, raw.MemberID), nil
	case req.rebalanceTimeout < 0:
		return joinError(kerr.InvalidRequest.Code, raw.MemberID), nil
	case raw.ProtocolType == "" || len(raw.Protocols) == 0:
		return joinError(kerr.InconsistentGroupProtocol.Code, raw.MemberID), nil
	}
	g := c.lockGroup(raw.Group, raw.MemberID == "")
	if g == nil {
		if c.isClosed() {
			return joinError(kerr.NotCoordinator.Code, raw.MemberID), nil
		}
		return joinError(kerr.UnknownMemberID.Code, raw.MemberID), nil
	}
	defer g.mu.Unlock()
	now := c.cfg.Now()
	if g.state != stateEmpty && !g.supportsProtocols(raw.ProtocolType, raw.Protocols) {
		return joinError(kerr.InconsistentGroupProtocol.Code, raw.MemberID), nil
	}
	if raw.MemberID == "" {
		return g.joinUnknownMember(ctx, req, now)
	}
	return g.joinKnownMember(ctx, req, now)
}

// joinUnknownMember handles a join with an empty member id.
func (g *group) joinUnknownMember(ctx context.Context, req joinRequest, now time.Time) (joinOutcome, chan joinOutcome) {
	memberID := newMemberID(req.client.ClientID)
	if req.instanceID != nil {
		if oldID, ok := g.staticMembers[*req.instanceID]; ok {
			return g.replaceStaticMember(ctx, req, oldID, memberID, now)
		}
		return g.addMemberAndRebalance(ctx, req, memberID, now)
	}
	if req.Version >= 4 {
		// KIP-394: hand out the id; the member counts as expected (the
		// rebalance waits for it) until it rejoins or its session ends.
		g.pendingMembers[memberID] = now.Add(req.sessionTimeout)
		return joinError(kerr.MemberIDRequired.Code, memberID), nil
	}
	return g.addMemberAndRebalance(ctx, req, memberID, now)
}

// joinKnownMember handles a join that names its member id.
func (g *group) joinKnownMember(ctx context.Context, req joinRequest, now time.Time) (joinOutcome, chan joinOutcome) {
	memberID := req.MemberID
	if _, pending := g.pendingMembers[memberID]; pending {
		delete(g.pendingMembers, memberID)
		return g.addMemberAndRebalance(ctx, req, memberID, now)
	}
	if g.isFencedInstance(req.instanceID, memberID) {
		return joinError(kerr.FencedInstanceID.Code, memberID), nil
	}
	m, ok := g.members[memberID]
	if !ok || g.state == stateEmpty {
		return joinError(kerr.UnknownMemberID.Code, memberID), nil
	}
	switch g.state {
	case statePreparingRebalance:
		return g.updateMemberAndRebalance(ctx, m, req, now)
	case stateCompletingRebalance:
		if sameProtocols(m.protocols, req.Protocols) {
			// A retried join of this generation: answer it again.
			m.lastHeartbeat = now
			return g.currentJoinOutcome(m, false), nil
		}
		return g.updateMemberAndRebalance(ctx, m, req, now)
	default: // Stable
		if m.id == g.leader || !sameProtocols(m.protocols, req.Protocols) {
			return g.updateMemberAndRebalance(ctx, m, req, now)
		}
		m.lastHeartbeat = now
		return g.currentJoinOutcome(m, false), nil
	}
}

// addMemberAndRebalance adds a new member, parked until the join completes.
func (g *group) addMemberAndRebalance(ctx context.Context, req joinRequest, memberID string, now time.Time) (joinOutcome, chan joinOutcome) {
	m := &member{
		id:               memberID,
		instanceID:       req.instanceID,
		clientID:         req.client.ClientID,
		clientHost:       req.client.Host,
		sessionTimeout:   req.sessionTimeout,
		rebalanceTimeout: req.rebalanceTimeout,
		protocolType:     req.ProtocolType,
		protocols:        cloneProtocols(req.Protocols),
		lastHeartbeat:    now,
	}
	g.newJoinWaiter(m)
	g.addMember(m)
	waiter := m.joinWaiter
	if g.state == statePreparingRebalance && g.initialDelay {
		g.initialNewJoiner = true
	}
	g.rebalanceOrComplete(ctx, now)
	return joinOutcome{memberID: memberID}, waiter
}

// updateMemberAndRebalance records a known member's rejoin (possibly with
// new protocols) and parks it until the join completes.
func (g *group) updateMemberAndRebalance(ctx context.Context, m *member, req joinRequest, now time.Time) (joinOutcome, chan joinOutcome) {
	m.protocols = cloneProtocols(req.Protocols)
	m.sessionTimeout = req.sessionTimeout
	m.rebalanceTimeout = req.rebalanceTimeout
	m.lastHeartbeat = now
	if m.joinWaiter != nil {
		// The member joined again while its earlier join is parked (e.g. the
		// client timed out and retried): the earlier request is superseded.
		g.deliverJoin(m, joinError(kerr.RebalanceInProgress.Code, m.id))
	}
	g.newJoinWaiter(m)
	waiter := m.joinWaiter
	g.rebalanceOrComplete(ctx, now)
	return joinOutcome{memberID: m.id}, waiter
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
func (g *group) replaceStaticMember(ctx context.Context, req joinRequest, oldID, newID string, now time.Time) (joinOutcome, chan joinOutcome) {
	old := g.members[oldID]
	if old.joinWaiter != nil {
		g.deliverJoin(old, joinError(kerr.FencedInstanceID.Code, oldID))
	}
	if old.syncWaiter != nil {
		g.deliverSync(old, syncOutcome{errorCode: kerr.FencedInstanceID.Code})
	}
	unchanged := sameProtocols(old.protocols, req.Protocols)
	m := g.replaceMemberID(oldID, newID)
	m.clientID, m.clientHost = req.client.ClientID, req.client.Host
	m.lastHeartbeat = now
	if g.state == stateStable && unchanged {
		m.sessionTimeout = req.sessionTimeout
		m.rebalanceTimeout = req.rebalanceTimeout
		if err := g.persistMetadata(ctx, now); err != nil {
			// Undo: the old id stays valid and the client retries.
			g.replaceMemberID(newID, oldID)
			return joinError(kerr.CoordinatorNotAvailable.Code, ""), nil
		}
		return g.currentJoinOutcome(m, m.id == g.leader), nil
	}
	return g.updateMemberAndRebalance(ctx, m, req, now)
}

func cloneProtocols(protocols []kmsg.JoinGroupRequestProtocol) []kmsg.JoinGroupRequestProtocol {
	out := make([]kmsg.JoinGroupRequestProtocol, len(protocols))
	for i, protocol := range protocols {
		out[i] = kmsg.JoinGroupRequestProtocol{Name: protocol.Name, Metadata: cloneBytes(protocol.Metadata)}
	}
	return out
}
