package group

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// ShareHeartbeatRequest is one ShareGroupHeartbeat (KIP-932).
type ShareHeartbeatRequest struct {
	Group    string
	MemberID string
	// MemberEpoch: JoinEpoch (0) joins, LeaveEpoch (-1) leaves, any other
	// is a heartbeat of a known member at that epoch.
	MemberEpoch int32
	RackID      *string
	// SubscribedTopicNames: nil when unchanged since the last heartbeat.
	SubscribedTopicNames []string
	Client               ClientInfo
	// SessionTimeout and HeartbeatInterval are the group's
	// share.session.timeout.ms and share.heartbeat.interval.ms (zero: the
	// coordinator's defaults).
	SessionTimeout, HeartbeatInterval time.Duration
}

// ShareHeartbeatResult is a ShareGroupHeartbeat's answer.
type ShareHeartbeatResult struct {
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is set when the member must be told its partitions: on a
	// join, a full heartbeat (one carrying its subscription), or when they
	// changed.
	Assignment *[]TopicPartitions
}

// ShareHeartbeat handles one ShareGroupHeartbeat: member epoch 0 joins
// (creating the share group), -1 leaves, any other epoch is a heartbeat of
// a known member (its current or previous epoch; others are
// ErrFencedMemberEpoch). A change of membership, subscription or topic
// partitions bumps the group epoch; a member learns its new partitions, and
// its epoch moves to the group's, on its own next heartbeat. A group id
// held by a classic or consumer group is ErrGroupNotFound.
func (c *Coordinator) ShareHeartbeat(ctx context.Context, req ShareHeartbeatRequest) (ShareHeartbeatResult, error) {
	interval := req.HeartbeatInterval
	if interval <= 0 {
		interval = c.cfg.ShareHeartbeatInterval
	}
	result := ShareHeartbeatResult{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, HeartbeatInterval: interval}
	invalid := func(why string) error { return groupError(req.Group, fmt.Errorf("%w: %s", ErrInvalidRequest, why)) }
	switch {
	case req.Group == "":
		return result, ErrInvalidGroupID
	case req.MemberID == "":
		return result, invalid("MemberId can't be empty")
	case len(req.MemberID) > 36:
		return result, invalid("MemberId can't be longer than 36 characters")
	case req.RackID != nil && *req.RackID == "":
		return result, invalid("RackId can't be empty")
	case req.MemberEpoch == JoinEpoch && req.SubscribedTopicNames == nil:
		return result, invalid("SubscribedTopicNames must be set in first request")
	case req.MemberEpoch < LeaveEpoch:
		return result, invalid(fmt.Sprintf("MemberEpoch %d is invalid", req.MemberEpoch))
	}
	g := c.lockGroup(req.Group, req.MemberEpoch == JoinEpoch)
	if g == nil {
		if c.isClosed() {
			return result, groupError(req.Group, c.refusal())
		}
		return result, groupError(req.Group, ErrGroupNotFound)
	}
	defer g.unlock()
	sg, err := g.shareGroupFor(ctx, req.MemberEpoch == JoinEpoch)
	if err != nil {
		return result, err
	}
	now := c.cfg.Now()
	timeout := req.SessionTimeout
	if timeout <= 0 {
		timeout = c.cfg.ShareSessionTimeout
	}
	m := sg.members[req.MemberID]
	epochBefore := sg.epoch
	switch {
	case req.MemberEpoch == LeaveEpoch:
		if m == nil {
			return result, memberError(req.Group, req.MemberID, ErrUnknownMember)
		}
		delete(sg.members, m.id)
		sg.epoch++
		result.MemberEpoch = LeaveEpoch
		return result, g.persistShareEpoch(ctx, sg, epochBefore, now)
	case m == nil && req.MemberEpoch != JoinEpoch:
		return result, memberError(req.Group, req.MemberID, ErrUnknownMember)
	case m == nil:
		m = &shareMember{id: req.MemberID}
		sg.members[m.id] = m
		sg.epoch++
	case req.MemberEpoch != JoinEpoch && req.MemberEpoch != m.epoch && req.MemberEpoch != m.previousEpoch:
		return result, memberError(req.Group, req.MemberID, ErrFencedMemberEpoch)
	}
	m.clientID, m.clientHost = req.Client.ClientID, req.Client.Host
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	m.sessionTimeout = timeout
	m.sessionDeadline = now.Add(timeout)
	if req.SubscribedTopicNames != nil {
		subscribed := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(subscribed)
		subscribed = slices.Compact(subscribed)
		if !slices.Equal(subscribed, m.subscribed) {
			m.subscribed = subscribed
			if sg.epoch == epochBefore { // one bump per heartbeat, whatever changed
				sg.epoch++
			}
		}
	}
	topics, signature := g.shareTopicMetadata(sg)
	if signature != sg.metadata {
		sg.metadata = signature
		if sg.epoch == epochBefore {
			sg.epoch++
		}
	}
	if err := g.persistShareEpoch(ctx, sg, epochBefore, now); err != nil {
		delete(sg.members, m.id)
		return result, err
	}
	if sg.target == nil || sg.targetEpoch != sg.epoch {
		sg.target, sg.targetEpoch = sg.targetAssignment(topics, sg.target), sg.epoch
	}
	target := sg.target[m.id]
	changed := !target.equal(m.assigned)
	if changed || m.epoch != sg.epoch {
		m.previousEpoch, m.epoch = m.epoch, sg.epoch
		m.assigned = target
	}
	result.MemberEpoch = m.epoch
	if req.MemberEpoch == JoinEpoch || req.SubscribedTopicNames != nil || changed {
		assignment := m.assigned.list()
		result.Assignment = &assignment
	}
	return result, nil
}

// shareGroupFor returns g's share group state; a join makes an empty
// group without classic or consumer state a share group. Any other group
// is not a share group (ErrGroupNotFound).
func (g *group) shareGroupFor(ctx context.Context, join bool) (*shareGroup, error) {
	if g.share != nil {
		return g.share, nil
	}
	if !join || g.consumer != nil || len(g.members) > 0 || g.generation > 0 || g.protocolType != "" || len(g.offsets) > 0 {
		return nil, fmt.Errorf("group %q is not a share group: %w", g.id, ErrGroupNotFound)
	}
	g.share = newShareGroup()
	return g.share, nil
}

// shareTopicMetadata resolves the topics the share group's members
// subscribe to.
func (g *group) shareTopicMetadata(sg *shareGroup) ([]subscribedTopic, string) {
	catalog := g.coordinator.cfg.Catalog
	if catalog == nil {
		return nil, ""
	}
	names := map[string]bool{}
	for _, m := range sg.members {
		for _, topic := range m.subscribed {
			names[topic] = true
		}
	}
	return resolveTopics(catalog, names)
}

// persistShareEpoch writes the group epoch when it moved past before.
func (g *group) persistShareEpoch(ctx context.Context, sg *shareGroup, before int32, now time.Time) error {
	if sg.epoch == before {
		return nil
	}
	if err := g.coordinator.appendRecords(ctx, g.partition, now, []StoreRecord{shareGroupRecord(g.id, sg.epoch)}); err != nil {
		sg.epoch = before
		return storeError(g.id, err)
	}
	return nil
}

// tickShare removes the members whose session expired.
func (g *group) tickShare(ctx context.Context, now time.Time) {
	sg := g.share
	before := sg.epoch
	for _, id := range sg.sortedMemberIDs() {
		if m := sg.members[id]; !now.Before(m.sessionDeadline) {
			delete(sg.members, id)
			sg.epoch++
		}
	}
	_ = g.persistShareEpoch(ctx, sg, before, now) // a failure leaves the epoch to the next change
}
