package group

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"
)

// ConsumerHeartbeat handles one ConsumerGroupHeartbeat (KIP-848), as
// Kafka's GroupMetadataManager.consumerGroupHeartbeat does: member epoch 0
// joins (creating the group, or converting an empty classic group), -1
// leaves, -2 is a static member's temporary leave, and any other epoch is
// a heartbeat of a known member. Each call updates the member, bumps the
// group epoch and recomputes the target assignment when something it
// depends on changed, advances the member one reconciliation step, and
// persists what changed before answering.
func (c *Coordinator) ConsumerHeartbeat(ctx context.Context, req ConsumerHeartbeatRequest) (ConsumerHeartbeatResult, error) {
	_, heartbeat := c.consumerTimeouts(req.Group)
	result := ConsumerHeartbeatResult{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, HeartbeatInterval: heartbeat}
	if err := validateConsumerHeartbeat(req); err != nil {
		return result, fmt.Errorf("group %q: %w", req.Group, err)
	}
	g := c.lockGroup(req.Group, req.MemberEpoch == JoinEpoch)
	if g == nil {
		if c.isClosed() {
			return result, groupError(req.Group, c.refusal())
		}
		return result, groupError(req.Group, ErrGroupNotFound)
	}
	defer g.unlock()
	cg, err := g.consumerGroupFor(ctx, req.MemberEpoch == JoinEpoch)
	if err != nil {
		return result, err
	}
	now := c.cfg.Now()
	w := &consumerWrites{group: g.id}
	switch req.MemberEpoch {
	case LeaveEpoch:
		err = g.consumerLeave(req, w, now)
		result.MemberEpoch = LeaveEpoch
	case StaticLeaveEpoch:
		err = g.consumerStaticLeave(req, w, now)
		result.MemberEpoch = StaticLeaveEpoch
	default:
		var m *consumerMember
		m, err = g.consumerJoinOrHeartbeat(req, w, now)
		if err == nil {
			result.MemberID, result.MemberEpoch = m.id, m.memberEpoch
			if isFullHeartbeat(req) || w.assignmentChanged {
				assignment := m.assigned.list()
				result.Assignment = &assignment
			}
		}
	}
	if err != nil {
		return result, err
	}
	if err := g.flushConsumer(ctx, cg, w, now); err != nil {
		return result, err
	}
	return result, nil
}

// isFullHeartbeat reports whether the member sent its whole state (a join,
// or a heartbeat with rebalance timeout, subscription and owned
// partitions): the answer then carries its assignment.
func isFullHeartbeat(req ConsumerHeartbeatRequest) bool {
	return req.MemberEpoch == JoinEpoch ||
		(req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Owned != nil)
}

// validateConsumerHeartbeat applies Kafka's request checks.
func validateConsumerHeartbeat(req ConsumerHeartbeatRequest) error {
	invalid := func(why string) error { return fmt.Errorf("%w: %s", ErrInvalidRequest, why) }
	switch {
	case req.Group == "":
		return ErrInvalidGroupID
	case req.MemberIDRequired && req.MemberID == "":
		return invalid("MemberId can't be empty")
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid("InstanceId can't be empty")
	case req.RackID != nil && *req.RackID == "":
		return invalid("RackId can't be empty")
	}
	switch {
	case req.MemberEpoch > 0 || req.MemberEpoch == LeaveEpoch:
		if req.MemberID == "" {
			return invalid("MemberId can't be empty")
		}
	case req.MemberEpoch == JoinEpoch:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return invalid("RebalanceTimeoutMs must be provided in first request")
		case req.Owned == nil || len(req.Owned) > 0:
			return invalid("TopicPartitions must be empty when (re-)joining")
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return invalid("either SubscribedTopicNames or SubscribedTopicRegex must be set when (re-)joining")
		}
	case req.MemberEpoch == StaticLeaveEpoch:
		if req.MemberID == "" || req.InstanceID == nil {
			return invalid("a static leave needs MemberId and InstanceId")
		}
	default:
		return invalid(fmt.Sprintf("MemberEpoch %d is invalid", req.MemberEpoch))
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != uniformAssignor && *req.ServerAssignor != rangeAssignor {
		return fmt.Errorf("%w: %q (the broker has %q and %q)", ErrUnsupportedAssignor, *req.ServerAssignor, uniformAssignor, rangeAssignor)
	}
	if req.SubscribedTopicRegex != nil {
		if _, err := compileSubscriptionRegex(*req.SubscribedTopicRegex); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidRegex, err)
		}
	}
	return nil
}

// compileSubscriptionRegex compiles a subscription regular expression
// (RE2 syntax, as Kafka's RE2/J) so that it must match a whole topic name.
func compileSubscriptionRegex(source string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + source + ")$")
}

// consumerGroupFor returns g's consumer group state. A join may convert an
// empty classic group (its metadata record is deleted, its offsets kept);
// a classic group with members is not a consumer group
// (GROUP_ID_NOT_FOUND).
func (g *group) consumerGroupFor(ctx context.Context, join bool) (*consumerGroup, error) {
	if g.consumer != nil {
		return g.consumer, nil
	}
	if g.share != nil {
		return nil, fmt.Errorf("group %q is a share group: %w", g.id, ErrGroupNotFound)
	}
	if !join || len(g.members) > 0 || len(g.pendingMembers) > 0 {
		return nil, fmt.Errorf("group %q is not a consumer group: %w", g.id, ErrGroupNotFound)
	}
	if g.generation > 0 || g.protocolType != "" {
		if err := g.coordinator.appendRecords(ctx, g.partition, g.coordinator.cfg.Now(), []StoreRecord{{Key: encodeGroupKey(g.id)}}); err != nil {
			return nil, storeError(g.id, err)
		}
	}
	g.consumer = newConsumerGroup()
	g.protocolType, g.protocol, g.generation = "", "", 0
	return g.consumer, nil
}

// consumerJoinOrHeartbeat handles epoch 0 (join) and positive epochs.
func (g *group) consumerJoinOrHeartbeat(req ConsumerHeartbeatRequest, w *consumerWrites, now time.Time) (*consumerMember, error) {
	cg := g.consumer
	var m *consumerMember
	var err error
	if req.MemberEpoch == JoinEpoch {
		m, err = g.consumerJoinMember(req, w)
	} else {
		m, err = g.consumerKnownMember(req)
	}
	if err != nil {
		return nil, err
	}
	changed := m.update(req)
	if changed || req.MemberEpoch == JoinEpoch {
		w.member(m)
	}
	if req.MemberEpoch == JoinEpoch {
		w.target(m) // a replacement static member: its records move to the new id
		w.current(m)
	}
	m.sessionDeadline = now.Add(g.consumerSessionTimeout())
	g.refreshTarget(cg, w, changed)
	var owned partitions
	if req.Owned != nil {
		owned = partitionsFrom(req.Owned)
	}
	before := m.assigned.clone()
	if cg.reconcile(m, owned) {
		w.current(m)
		if m.pendingRevocation.count() > 0 {
			m.revocationDeadline = now.Add(m.rebalanceTimeout)
		} else {
			m.revocationDeadline = time.Time{}
		}
	}
	w.assignmentChanged = !before.equal(m.assigned)
	return m, nil
}

// consumerJoinMember returns the member joining with epoch 0: new, the
// same member rejoining, or (static membership) the member replacing the
// one that left its instance id with epoch -2, inheriting its assignment.
func (g *group) consumerJoinMember(req ConsumerHeartbeatRequest, w *consumerWrites) (*consumerMember, error) {
	cg := g.consumer
	memberID := req.MemberID
	if memberID == "" {
		memberID = newMemberID(req.Client.ClientID)
	}
	m := cg.members[memberID]
	if req.InstanceID != nil {
		if ownerID, ok := cg.staticMembers[*req.InstanceID]; ok && ownerID != memberID {
			owner := cg.members[ownerID]
			if owner.memberEpoch != StaticLeaveEpoch {
				return nil, memberError(g.id, memberID, fmt.Errorf("%w: instance %q is held by member %q", ErrUnreleasedInstance, *req.InstanceID, ownerID))
			}
			// The replacement takes over the old member's assignment.
			delete(cg.members, ownerID)
			w.remove(ownerID)
			owner.id = memberID
			m = owner
		}
	}
	if m == nil {
		m = &consumerMember{id: memberID, assigned: partitions{}, pendingRevocation: partitions{}, target: partitions{}}
		cg.groupEpoch++ // a new member: recompute the target
		w.epoch = true
	}
	// A (re)joining member starts from epoch 0; what it was assigned is
	// kept, so nothing it held can go to another member meanwhile.
	m.clientID, m.clientHost = req.Client.ClientID, req.Client.Host
	if m.memberEpoch == StaticLeaveEpoch {
		m.memberEpoch = 0
	}
	cg.members[memberID] = m
	if req.InstanceID != nil {
		instanceID := *req.InstanceID
		m.instanceID = &instanceID
		cg.staticMembers[instanceID] = memberID
	}
	return m, nil
}

// consumerKnownMember checks a heartbeat with a positive epoch against the
// member (Kafka's epoch rules: a newer epoch is fenced; an older one is
// accepted only if it is the previous epoch and the member owns a subset
// of its assignment, since the response with the bump may have been lost).
func (g *group) consumerKnownMember(req ConsumerHeartbeatRequest) (*consumerMember, error) {
	cg := g.consumer
	m, ok := cg.members[req.MemberID]
	if !ok {
		if req.InstanceID != nil {
			if owner, held := cg.staticMembers[*req.InstanceID]; held && owner != req.MemberID {
				return nil, memberError(g.id, req.MemberID, ErrFencedInstance)
			}
		}
		return nil, memberError(g.id, req.MemberID, ErrUnknownMember)
	}
	if req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID) {
		return nil, memberError(g.id, req.MemberID, ErrFencedInstance)
	}
	fenced := func() error {
		return memberError(g.id, req.MemberID, fmt.Errorf("%w: epoch %d, the coordinator has %d", ErrFencedMemberEpoch, req.MemberEpoch, m.memberEpoch))
	}
	switch {
	case req.MemberEpoch > m.memberEpoch:
		return nil, fenced()
	case req.MemberEpoch < m.memberEpoch:
		if req.MemberEpoch != m.previousEpoch || req.Owned == nil || !isSubset(partitionsFrom(req.Owned), m.assigned) {
			return nil, fenced()
		}
	}
	return m, nil
}

func isSubset(owned, assigned partitions) bool {
	for id, list := range owned {
		for _, partition := range list {
			if !assigned.has(id, partition) {
				return false
			}
		}
	}
	return true
}

// update applies a heartbeat's optional fields to the member and reports
// whether its subscription (topics, regex or assignor) changed.
func (m *consumerMember) update(req ConsumerHeartbeatRequest) bool {
	changed := false
	if req.RackID != nil {
		rack := *req.RackID
		m.rackID = &rack
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.SubscribedTopicNames != nil {
		topics := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(topics)
		topics = slices.Compact(topics)
		if !slices.Equal(topics, m.subscribedTopics) {
			m.subscribedTopics, changed = topics, true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex, changed = *req.SubscribedTopicRegex, true
		m.pattern = nil
		if m.regex != "" {
			m.pattern, _ = compileSubscriptionRegex(m.regex) // validated before
		}
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.serverAssignor {
		m.serverAssignor, changed = *req.ServerAssignor, true
	}
	return changed
}

// consumerLeave removes a member for good (epoch -1).
func (g *group) consumerLeave(req ConsumerHeartbeatRequest, w *consumerWrites, now time.Time) error {
	cg := g.consumer
	m, ok := cg.members[req.MemberID]
	if !ok {
		return memberError(g.id, req.MemberID, ErrUnknownMember)
	}
	if req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID) {
		return memberError(g.id, req.MemberID, ErrFencedInstance)
	}
	g.removeConsumerMember(m, w)
	return nil
}

// consumerStaticLeave is a static member's temporary leave (epoch -2): it
// keeps its assignment (nobody else gets its partitions) until it rejoins
// under its instance id or its session expires. A dynamic member sending
// it leaves for good, as in Kafka.
func (g *group) consumerStaticLeave(req ConsumerHeartbeatRequest, w *consumerWrites, now time.Time) error {
	cg := g.consumer
	m, ok := cg.members[req.MemberID]
	if !ok {
		return memberError(g.id, req.MemberID, ErrUnknownMember)
	}
	if m.instanceID == nil {
		g.removeConsumerMember(m, w)
		return nil
	}
	if *m.instanceID != *req.InstanceID {
		return memberError(g.id, req.MemberID, ErrFencedInstance)
	}
	m.previousEpoch, m.memberEpoch = m.memberEpoch, StaticLeaveEpoch
	m.sessionDeadline = now.Add(g.consumerSessionTimeout())
	m.revocationDeadline = time.Time{}
	w.current(m)
	return nil
}

// removeConsumerMember drops a member (left, fenced or expired): its
// partitions are free at once, and the group epoch advances so the others
// get them.
func (g *group) removeConsumerMember(m *consumerMember, w *consumerWrites) {
	cg := g.consumer
	delete(cg.members, m.id)
	if m.instanceID != nil && cg.staticMembers[*m.instanceID] == m.id {
		delete(cg.staticMembers, *m.instanceID)
	}
	w.remove(m.id)
	cg.groupEpoch++
	w.epoch = true
	g.refreshTarget(cg, w, true)
	if hook := g.coordinator.cfg.OnRebalance; hook != nil {
		hook()
	}
}

// tickConsumer expires members whose session or revocation deadline
// passed. Called with g.mu held.
func (g *group) tickConsumer(ctx context.Context, now time.Time) {
	cg := g.consumer
	w := &consumerWrites{group: g.id}
	for _, id := range cg.sortedMemberIDs() {
		m, ok := cg.members[id]
		if !ok {
			continue
		}
		expired := !now.Before(m.sessionDeadline)
		unrevoked := !m.revocationDeadline.IsZero() && !now.Before(m.revocationDeadline)
		if expired || unrevoked {
			g.removeConsumerMember(m, w)
		}
	}
	if len(w.records) > 0 || w.epoch || len(cg.unflushed) > 0 {
		_ = g.flushConsumer(ctx, cg, w, now) // a failure is retried with the next write
	}
}
