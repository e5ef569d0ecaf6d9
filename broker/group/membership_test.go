package group

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func withInitialDelay(cfg *Config) {
	cfg.NoInitialRebalanceDelay = false
	cfg.GroupInitialRebalanceDelay = 3 * time.Second
}

// syncAll has every member sync; the leader assigns "assignment-<index>".
// It returns each member's assignment.
func (h *harness) syncAll(groupID string, members []joinedMember) map[string]string {
	h.t.Helper()
	assignments := make(map[string]string)
	for i, m := range members {
		assignments[m.id] = "assignment-" + string(rune('a'+i))
	}
	pending := make(map[string]<-chan syncReply)
	for _, m := range members {
		if !m.leader {
			pending[m.id] = h.syncAsync(newSync(groupID, m.id, m.generation, nil))
		}
	}
	h.assertGroup(groupID, "followers parked in SyncGroup", func(g *group) bool {
		parked := 0
		for _, m := range g.members {
			if m.syncWaiter != nil {
				parked++
			}
		}
		return parked == len(pending)
	})
	for id, ch := range pending {
		assertPending(h.t, ch, "follower sync of "+id)
	}
	got := make(map[string]string)
	for _, m := range members {
		if m.leader {
			resp := h.sync(newSync(groupID, m.id, m.generation, assignments))
			if resp.err != nil {
				h.t.Fatalf("leader sync: %v", resp.err)
			}
			got[m.id] = string(resp.Assignment)
		}
	}
	for id, ch := range pending {
		resp := replied(h.t, ch, "follower sync")
		if resp.err != nil {
			h.t.Fatalf("sync of %s: %v", id, resp.err)
		}
		if resp.ProtocolType != "consumer" || resp.Protocol == "" {
			h.t.Fatalf("sync must name the protocol type and protocol: %+v", resp)
		}
		got[id] = string(resp.Assignment)
	}
	for id, want := range assignments {
		if got[id] != want {
			h.t.Fatalf("member %s got assignment %q, want %q", id, got[id], want)
		}
	}
	return got
}

func checkOneGeneration(t *testing.T, members []joinedMember, wantGeneration int32) string {
	t.Helper()
	leader := ""
	for _, m := range members {
		if m.generation != wantGeneration {
			t.Fatalf("member %s in generation %d, want %d", m.id, m.generation, wantGeneration)
		}
		if m.response.Leader != members[0].response.Leader {
			t.Fatalf("members disagree on the leader: %q vs %q", m.response.Leader, members[0].response.Leader)
		}
		if m.leader {
			if leader != "" {
				t.Fatalf("two leaders: %s and %s", leader, m.id)
			}
			leader = m.id
			if len(m.response.Members) != len(members) {
				t.Fatalf("leader got %d members, want %d", len(m.response.Members), len(members))
			}
		} else if len(m.response.Members) != 0 {
			t.Fatalf("follower %s got the member list", m.id)
		}
	}
	if leader == "" {
		t.Fatal("no leader in the generation")
	}
	return leader
}

// commitErr commits offset 42 of events-0 as a member and returns the
// partition's error.
func commitErr(h *harness, groupID, memberID string, generation int32) error {
	req := CommitRequest{Group: groupID, MemberID: memberID, Generation: generation, Topics: []CommitTopic{
		{Name: "events", Partitions: []CommitPartition{{Partition: 0, Offset: 42, LeaderEpoch: -1}}},
	}}
	return h.c.CommitOffsets(testCtx, req)[0][0]
}

// Three members join, one generation with one leader, SyncGroup delivers
// each its assignment; a member leaves and the rest rebalance into the next
// generation; a member stops heartbeating and is evicted after its session
// timeout; stale-generation and unknown-member commits are refused.
func TestThreeMembersJoinLeaveAndExpire(t *testing.T) {
	h := newHarness(t, withInitialDelay)
	ids := []string{h.memberID("g"), h.memberID("g"), h.memberID("g")}
	for _, id := range ids {
		if !strings.HasPrefix(id, "client-") {
			t.Fatalf("member id %q does not start with the client id", id)
		}
	}
	pending := make([]<-chan joinReply, 3)
	for i, id := range ids {
		pending[i] = h.joinAsync(newJoin("g", id))
	}
	h.assertGroup("g", "3 members awaiting join", awaitingJoin(3))
	// Members kept arriving during the initial delay: it is extended once.
	h.tickAfter(3 * time.Second)
	for i := range pending {
		assertPending(t, pending[i], "join during the initial delay")
	}
	h.tickAfter(3 * time.Second)
	members := make([]joinedMember, 3)
	for i := range pending {
		resp := replied(t, pending[i], "join")
		if resp.err != nil || resp.Protocol == nil || *resp.Protocol != "range" {
			t.Fatalf("join %d: %+v", i, resp)
		}
		members[i] = joinedMember{id: resp.MemberID, generation: resp.Generation, leader: resp.Leader == resp.MemberID, response: resp.JoinResult}
	}
	checkOneGeneration(t, members, 1)
	h.syncAll("g", members)
	for _, m := range members {
		wantErr(t, "heartbeat of "+m.id, h.heartbeat("g", m.id, 1), nil)
	}

	// Member 2 leaves: the others are told to rejoin and form generation 2.
	errs, err := h.c.Leave(testCtx, "g", []Leaver{{MemberID: members[2].id}})
	if err != nil || errs[0] != nil {
		t.Fatalf("leave: %v %v", err, errs)
	}
	for _, m := range members[:2] {
		wantErr(t, "heartbeat during rebalance", h.heartbeat("g", m.id, 1), ErrRebalanceInProgress)
	}
	second := h.joinTogether("g", []JoinRequest{newJoin("g", members[0].id), newJoin("g", members[1].id)})
	checkOneGeneration(t, second, 2)
	h.syncAll("g", second)

	wantErr(t, "stale generation commit", commitErr(h, "g", second[0].id, 1), ErrIllegalGeneration)
	wantErr(t, "unknown member commit", commitErr(h, "g", "client-stranger", 2), ErrUnknownMember)
	wantErr(t, "departed member commit", commitErr(h, "g", members[2].id, 2), ErrUnknownMember)
	wantErr(t, "valid commit", commitErr(h, "g", second[0].id, 2), nil)

	expireSilentMember(t, h, second)
}

// expireSilentMember: of two members of generation 2, the second stops
// heartbeating and is evicted exactly at its 10 s session timeout; the first
// rejoins alone into generation 3 and leads it.
func expireSilentMember(t *testing.T, h *harness, second []joinedMember) {
	t.Helper()
	// Member 1 stops heartbeating; member 0 keeps going. Session: 10 s.
	h.clock.Advance(6 * time.Second)
	wantErr(t, "heartbeat", h.heartbeat("g", second[0].id, 2), nil)
	h.tickAfter(3 * time.Second)
	h.assertGroup("g", "no eviction before the session timeout", func(g *group) bool { return len(g.members) == 2 && g.state == stateStable })
	h.tickAfter(1 * time.Second) // 10 s since member 1's last heartbeat
	h.assertGroup("g", "silent member evicted after its session timeout", func(g *group) bool {
		_, ok := g.members[second[1].id]
		return !ok && g.state == statePreparingRebalance
	})
	wantErr(t, "evicted member heartbeat", h.heartbeat("g", second[1].id, 2), ErrUnknownMember)
	third := h.joinTogether("g", []JoinRequest{newJoin("g", second[0].id)})
	if checkOneGeneration(t, third, 3) != second[0].id {
		t.Fatal("the only member must lead")
	}
}

// KIP-394: joins (v4+) with an empty member id get ErrMemberIDRequired and
// a generated id; the rejoin with it is admitted; an id that was never
// handed out is refused; a handed-out id expires after the session
// timeout; older joins are admitted directly.
func TestMemberIDRequiredRound(t *testing.T) {
	h := newHarness(t, nil)
	first := h.join(newJoin("g", ""))
	if !errors.Is(first.err, ErrMemberIDRequired) || first.MemberID == "" || first.Generation != -1 {
		t.Fatalf("first join: %+v", first)
	}
	h.assertGroup("g", "MEMBER_ID_REQUIRED adds no member", func(g *group) bool { return g.state == stateEmpty && len(g.members) == 0 })
	wantErr(t, "made-up member id", h.join(newJoin("g", "client-made-up")).err, ErrUnknownMember)
	second := h.join(newJoin("g", first.MemberID))
	if second.err != nil || second.MemberID != first.MemberID || second.Generation != 1 || second.Leader != first.MemberID {
		t.Fatalf("rejoin: %+v", second)
	}

	expired := h.join(newJoin("g", ""))
	wantErr(t, "second newcomer", expired.err, ErrMemberIDRequired)
	h.tickAfter(10 * time.Second)
	wantErr(t, "rejoin after the pending id expired", h.join(newJoin("g", expired.MemberID)).err, ErrUnknownMember)

	v3 := newJoin("v3", "")
	v3.RequireKnownMemberID = false
	old := h.join(v3)
	if old.err != nil || old.MemberID == "" || old.Generation != 1 {
		t.Fatalf("a join with an empty id that need not be known must be admitted directly: %+v", old)
	}
}

func staticJoin(groupID, memberID, instanceID string, protocols ...string) JoinRequest {
	req := newJoin(groupID, memberID, protocols...)
	req.InstanceID = &instanceID
	return req
}

// A static member that restarts rejoins with its instance id and an empty
// member id: it gets a new member id and the current generation and
// assignment back without a rebalance; its old member id is fenced.
func TestStaticMemberRejoin(t *testing.T) {
	h := newHarness(t, withInitialDelay)
	members := h.joinTogether("g", []JoinRequest{staticJoin("g", "", "instance-a"), staticJoin("g", "", "instance-b")})
	leader := checkOneGeneration(t, members, 1)
	assignments := h.syncAll("g", members)

	for _, restarted := range members {
		resp := h.join(staticJoin("g", "", instanceOf(t, h, restarted.id)))
		if resp.err != nil || resp.Generation != 1 || resp.MemberID == restarted.id {
			t.Fatalf("static rejoin: %+v", resp)
		}
		if restarted.id == leader {
			if !resp.SkipAssignment || resp.Leader != resp.MemberID || len(resp.Members) != 2 {
				t.Fatalf("static leader rejoin must lead, skip assignment and see the members: %+v", resp)
			}
		} else if resp.SkipAssignment || len(resp.Members) != 0 {
			t.Fatalf("static follower rejoin: %+v", resp)
		}
		h.assertGroup("g", "no rebalance after an unchanged static rejoin", func(g *group) bool { return g.state == stateStable && g.generation == 1 })
		instance := instanceOf(t, h, resp.MemberID)
		err := h.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: restarted.id, Generation: 1, InstanceID: &instance})
		wantErr(t, "old member id heartbeat", err, ErrFencedInstance)
		sync := h.sync(newSync("g", resp.MemberID, 1, nil))
		if sync.err != nil || string(sync.Assignment) != assignments[restarted.id] {
			t.Fatalf("static member must keep its assignment: %+v", sync)
		}
	}

	// A static rejoin with different protocols does rebalance.
	pending := h.joinAsync(staticJoin("g", "", "instance-a", "roundrobin", "range"))
	h.assertGroup("g", "rebalance after a changed static rejoin", func(g *group) bool { return g.state == statePreparingRebalance })
	assertPending(t, pending, "changed static rejoin")
}

func instanceOf(t *testing.T, h *harness, memberID string) string {
	t.Helper()
	instance := ""
	h.inspect("g", func(g *group) bool {
		for id, owner := range g.staticMembers {
			if owner == memberID {
				instance = id
			}
		}
		return true
	})
	if instance == "" {
		t.Fatalf("member %s has no instance id", memberID)
	}
	return instance
}

// The group's protocol is one every member supports, chosen by each
// member's first supported choice; a joiner sharing no protocol, or with
// another protocol type, is refused.
func TestProtocolSelection(t *testing.T) {
	h := newHarness(t, withInitialDelay)
	ids := []string{h.memberID("g"), h.memberID("g"), h.memberID("g")}
	members := h.joinTogether("g", []JoinRequest{
		newJoin("g", ids[0], "range", "sticky", "roundrobin"),
		newJoin("g", ids[1], "roundrobin", "sticky"),
		newJoin("g", ids[2], "roundrobin", "sticky"),
	})
	checkOneGeneration(t, members, 1)
	for _, m := range members {
		if m.response.Protocol == nil || *m.response.Protocol != "roundrobin" {
			t.Fatalf("selected %v, want roundrobin (2 votes to 1 for sticky; range is not shared)", m.response.Protocol)
		}
		if m.response.ProtocolType != "consumer" {
			t.Fatalf("join must return the protocol type")
		}
	}
	wantErr(t, "joiner without a shared protocol", h.join(newJoin("g", "", "cooperative-sticky")).err, ErrInconsistentProtocol)
	other := newJoin("g", "", "roundrobin")
	other.ProtocolType = "connect"
	wantErr(t, "joiner with another protocol type", h.join(other).err, ErrInconsistentProtocol)
	wantErr(t, "empty group id", h.join(newJoin("", "")).err, ErrInvalidGroupID)
	short := newJoin("g", "")
	short.SessionTimeout = 100 * time.Millisecond
	wantErr(t, "session timeout below the minimum", h.join(short).err, ErrInvalidSessionTimeout)
	negative := newJoin("g", "")
	negative.RebalanceTimeout = -time.Millisecond
	wantErr(t, "negative rebalance timeout", h.join(negative).err, ErrInvalidRebalanceTimeout)
}

// A member that misses the rebalance is dropped at the rebalance timeout
// and the members that rejoined form the next generation.
func TestRebalanceTimeoutDropsMembersThatDidNotRejoin(t *testing.T) {
	h := newHarness(t, withInitialDelay)
	members := h.joinTogether("g", []JoinRequest{newJoin("g", h.memberID("g")), newJoin("g", h.memberID("g"))})
	h.syncAll("g", members)
	newcomer := h.joinAsync(newJoin("g", h.memberID("g")))
	h.assertGroup("g", "newcomer awaiting join", awaitingJoin(1))
	rejoin := h.joinAsync(newJoin("g", members[0].id))
	h.assertGroup("g", "two of three awaiting join", awaitingJoin(2))
	// Member 1 keeps heartbeating (so its session never ends) but does not
	// rejoin: only the 30 s rebalance timeout removes it.
	for range 3 {
		h.tickAfter(9 * time.Second)
		wantErr(t, "heartbeat during the rebalance", h.heartbeat("g", members[1].id, 1), ErrRebalanceInProgress)
	}
	h.tickAfter(2 * time.Second)
	assertPending(t, rejoin, "join before the rebalance timeout")
	h.tickAfter(1 * time.Second)
	first, second := replied(t, newcomer, "newcomer join"), replied(t, rejoin, "rejoin")
	if first.err != nil || second.err != nil || first.Generation != 2 || second.Generation != 2 {
		t.Fatalf("joins after the rebalance timeout: %+v %+v", first, second)
	}
	if h.inspect("g", func(g *group) bool { _, ok := g.members[members[1].id]; return ok }) {
		t.Fatal("the member that did not rejoin must be removed")
	}
}
