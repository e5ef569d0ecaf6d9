package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	pending := make(map[string]<-chan *kmsg.SyncGroupResponse)
	for _, m := range members {
		if !m.leader {
			pending[m.id] = h.syncAsync(newSync(5, groupID, m.id, m.generation, nil))
		}
	}
	h.waitForGroup(groupID, "followers parked in SyncGroup", func(g *group) bool {
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
			resp := h.c.SyncGroup(testCtx, newSync(5, groupID, m.id, m.generation, assignments))
			if resp.ErrorCode != 0 {
				h.t.Fatalf("leader sync: error %d", resp.ErrorCode)
			}
			got[m.id] = string(resp.MemberAssignment)
		}
	}
	for id, ch := range pending {
		resp := await(h.t, ch, "follower sync")
		if resp.ErrorCode != 0 {
			h.t.Fatalf("sync of %s: error %d", id, resp.ErrorCode)
		}
		if resp.Protocol == nil || resp.ProtocolType == nil || *resp.ProtocolType != "consumer" {
			h.t.Fatalf("sync v5 response must name the protocol type and protocol: %+v", resp)
		}
		got[id] = string(resp.MemberAssignment)
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
		if m.response.LeaderID != members[0].response.LeaderID {
			t.Fatalf("members disagree on the leader: %q vs %q", m.response.LeaderID, members[0].response.LeaderID)
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

func commitCode(h *harness, groupID, memberID string, generation int32) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = groupID, memberID, generation
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "events", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42, LeaderEpoch: -1}}}}
	return h.c.OffsetCommit(testCtx, req).Topics[0].Partitions[0].ErrorCode
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
	pending := make([]<-chan *kmsg.JoinGroupResponse, 3)
	for i, id := range ids {
		pending[i] = h.joinAsync(newJoin(9, "g", id))
	}
	h.waitForGroup("g", "3 members awaiting join", awaitingJoin(3))
	// Members kept arriving during the initial delay: it is extended once.
	h.tickAfter(3 * time.Second)
	for i := range pending {
		assertPending(t, pending[i], "join during the initial delay")
	}
	h.tickAfter(3 * time.Second)
	members := make([]joinedMember, 3)
	for i := range pending {
		resp := await(t, pending[i], "join")
		if resp.ErrorCode != 0 || resp.Protocol == nil || *resp.Protocol != "range" {
			t.Fatalf("join %d: %+v", i, resp)
		}
		members[i] = joinedMember{id: resp.MemberID, generation: resp.Generation, leader: resp.LeaderID == resp.MemberID, response: resp}
	}
	checkOneGeneration(t, members, 1)
	h.syncAll("g", members)
	for _, m := range members {
		if code := h.heartbeat("g", m.id, 1); code != 0 {
			t.Fatalf("heartbeat of %s: %d", m.id, code)
		}
	}

	// Member 2 leaves: the others are told to rejoin and form generation 2.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 5
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: members[2].id}}
	if resp := h.c.LeaveGroup(testCtx, leave); resp.ErrorCode != 0 || resp.Members[0].ErrorCode != 0 {
		t.Fatalf("leave: %+v", resp)
	}
	for _, m := range members[:2] {
		if code := h.heartbeat("g", m.id, 1); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat during rebalance: got %d, want REBALANCE_IN_PROGRESS", code)
		}
	}
	second := h.joinTogether("g", []*kmsg.JoinGroupRequest{newJoin(9, "g", members[0].id), newJoin(9, "g", members[1].id)})
	checkOneGeneration(t, second, 2)
	h.syncAll("g", second)

	if code := commitCode(h, "g", second[0].id, 1); code != kerr.IllegalGeneration.Code {
		t.Fatalf("stale generation commit: got %d, want ILLEGAL_GENERATION", code)
	}
	if code := commitCode(h, "g", "client-stranger", 2); code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member commit: got %d, want UNKNOWN_MEMBER_ID", code)
	}
	if code := commitCode(h, "g", members[2].id, 2); code != kerr.UnknownMemberID.Code {
		t.Fatalf("departed member commit: got %d, want UNKNOWN_MEMBER_ID", code)
	}
	if code := commitCode(h, "g", second[0].id, 2); code != 0 {
		t.Fatalf("valid commit: got %d", code)
	}

	expireSilentMember(t, h, second)
}

// expireSilentMember: of two members of generation 2, the second stops
// heartbeating and is evicted exactly at its 10 s session timeout; the first
// rejoins alone into generation 3 and leads it.
func expireSilentMember(t *testing.T, h *harness, second []joinedMember) {
	t.Helper()
	// Member 1 stops heartbeating; member 0 keeps going. Session: 10 s.
	h.clock.Advance(6 * time.Second)
	if code := h.heartbeat("g", second[0].id, 2); code != 0 {
		t.Fatalf("heartbeat: %d", code)
	}
	h.tickAfter(3 * time.Second)
	if !h.inspect("g", func(g *group) bool { return len(g.members) == 2 && g.state == stateStable }) {
		t.Fatal("member evicted before its session timeout")
	}
	h.tickAfter(1 * time.Second) // 10 s since member 1's last heartbeat
	if !h.inspect("g", func(g *group) bool {
		_, ok := g.members[second[1].id]
		return !ok && g.state == statePreparingRebalance
	}) {
		t.Fatal("silent member not evicted after its session timeout")
	}
	if code := h.heartbeat("g", second[1].id, 2); code != kerr.UnknownMemberID.Code {
		t.Fatalf("evicted member heartbeat: got %d, want UNKNOWN_MEMBER_ID", code)
	}
	third := h.joinTogether("g", []*kmsg.JoinGroupRequest{newJoin(9, "g", second[0].id)})
	if checkOneGeneration(t, third, 3) != second[0].id {
		t.Fatal("the only member must lead")
	}
}

// KIP-394: v4+ joins with an empty member id get MEMBER_ID_REQUIRED and a
// generated id; the rejoin with it is admitted; an id that was never
// handed out is refused; a handed-out id expires after the session
// timeout; v3 joins are admitted directly.
func TestMemberIDRequiredRound(t *testing.T) {
	h := newHarness(t, nil)
	first := h.c.JoinGroup(testCtx, newJoin(4, "g", ""))
	if first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" || first.Generation != -1 {
		t.Fatalf("first join: %+v", first)
	}
	if !h.inspect("g", func(g *group) bool { return g.state == stateEmpty && len(g.members) == 0 }) {
		t.Fatal("MEMBER_ID_REQUIRED must not add a member")
	}
	if resp := h.c.JoinGroup(testCtx, newJoin(4, "g", "client-made-up")); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("made-up member id: got %d", resp.ErrorCode)
	}
	second := await(t, h.joinAsync(newJoin(4, "g", first.MemberID)), "rejoin with the id")
	if second.ErrorCode != 0 || second.MemberID != first.MemberID || second.Generation != 1 || second.LeaderID != first.MemberID {
		t.Fatalf("rejoin: %+v", second)
	}

	expired := h.c.JoinGroup(testCtx, newJoin(9, "g", ""))
	if expired.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("second newcomer: %+v", expired)
	}
	h.tickAfter(10 * time.Second)
	if resp := h.c.JoinGroup(testCtx, newJoin(9, "g", expired.MemberID)); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("rejoin after the pending id expired: got %d", resp.ErrorCode)
	}

	old := await(t, h.joinAsync(newJoin(3, "v3", "")), "v3 join")
	if old.ErrorCode != 0 || old.MemberID == "" || old.Generation != 1 {
		t.Fatalf("v3 join with empty id must be admitted directly: %+v", old)
	}
}

func staticJoin(groupID, memberID, instanceID string, protocols ...string) *kmsg.JoinGroupRequest {
	req := newJoin(9, groupID, memberID, protocols...)
	req.InstanceID = &instanceID
	return req
}

// A static member that restarts rejoins with its instance id and an empty
// member id: it gets a new member id and the current generation and
// assignment back without a rebalance; its old member id is fenced.
func TestStaticMemberRejoin(t *testing.T) {
	h := newHarness(t, withInitialDelay)
	members := h.joinTogether("g", []*kmsg.JoinGroupRequest{staticJoin("g", "", "instance-a"), staticJoin("g", "", "instance-b")})
	leader := checkOneGeneration(t, members, 1)
	assignments := h.syncAll("g", members)

	for _, restarted := range members {
		resp := h.c.JoinGroup(testCtx, staticJoin("g", "", instanceOf(t, h, restarted.id)))
		if resp.ErrorCode != 0 || resp.Generation != 1 || resp.MemberID == restarted.id {
			t.Fatalf("static rejoin: %+v", resp)
		}
		if restarted.id == leader {
			if !resp.SkipAssignment || resp.LeaderID != resp.MemberID || len(resp.Members) != 2 {
				t.Fatalf("static leader rejoin must lead, skip assignment and see the members: %+v", resp)
			}
		} else if resp.SkipAssignment || len(resp.Members) != 0 {
			t.Fatalf("static follower rejoin: %+v", resp)
		}
		if !h.inspect("g", func(g *group) bool { return g.state == stateStable && g.generation == 1 }) {
			t.Fatal("static rejoin without changes must not rebalance")
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Version = 4
		hb.Group, hb.MemberID, hb.Generation = "g", restarted.id, 1
		instance := instanceOf(t, h, resp.MemberID)
		hb.InstanceID = &instance
		if code := h.c.Heartbeat(testCtx, hb).ErrorCode; code != kerr.FencedInstanceID.Code {
			t.Fatalf("old member id heartbeat: got %d, want FENCED_INSTANCE_ID", code)
		}
		sync := await(t, h.syncAsync(newSync(5, "g", resp.MemberID, 1, nil)), "sync after static rejoin")
		if sync.ErrorCode != 0 || string(sync.MemberAssignment) != assignments[restarted.id] {
			t.Fatalf("static member must keep its assignment: %+v", sync)
		}
	}

	// A static rejoin with different protocols does rebalance.
	instance := "instance-a"
	pending := h.joinAsync(staticJoin("g", "", instance, "roundrobin", "range"))
	h.waitForGroup("g", "rebalance after a changed static rejoin", func(g *group) bool { return g.state == statePreparingRebalance })
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
	members := h.joinTogether("g", []*kmsg.JoinGroupRequest{
		newJoin(9, "g", ids[0], "range", "sticky", "roundrobin"),
		newJoin(9, "g", ids[1], "roundrobin", "sticky"),
		newJoin(9, "g", ids[2], "roundrobin", "sticky"),
	})
	checkOneGeneration(t, members, 1)
	for _, m := range members {
		if m.response.Protocol == nil || *m.response.Protocol != "roundrobin" {
			t.Fatalf("selected %v, want roundrobin (2 votes to 1 for sticky; range is not shared)", m.response.Protocol)
		}
		if m.response.ProtocolType == nil || *m.response.ProtocolType != "consumer" {
			t.Fatalf("v9 join must return the protocol type")
		}
	}
	if resp := h.c.JoinGroup(testCtx, newJoin(9, "g", "", "cooperative-sticky")); resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("joiner without a shared protocol: got %d", resp.ErrorCode)
	}
	other := newJoin(9, "g", "", "roundrobin")
	other.ProtocolType = "connect"
	if resp := h.c.JoinGroup(testCtx, other); resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("joiner with another protocol type: got %d", resp.ErrorCode)
	}
	if resp := h.c.JoinGroup(testCtx, newJoin(9, "", "")); resp.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group id: got %d", resp.ErrorCode)
	}
	short := newJoin(9, "g", "")
	short.SessionTimeoutMillis = 100
	if resp := h.c.JoinGroup(testCtx, short); resp.ErrorCode != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("session timeout below the minimum: got %d", resp.ErrorCode)
	}
}

// A member that misses the rebalance is dropped at the rebalance timeout
// and the members that rejoined form the next generation.
func TestRebalanceTimeoutDropsMembersThatDidNotRejoin(t *testing.T) {
	h := newHarness(t, withInitialDelay)
	members := h.joinTogether("g", []*kmsg.JoinGroupRequest{newJoin(5, "g", h.memberID("g")), newJoin(5, "g", h.memberID("g"))})
	h.syncAll("g", members)
	newcomer := h.joinAsync(newJoin(5, "g", h.memberID("g")))
	h.waitForGroup("g", "newcomer awaiting join", awaitingJoin(1))
	rejoin := h.joinAsync(newJoin(5, "g", members[0].id))
	h.waitForGroup("g", "two of three awaiting join", awaitingJoin(2))
	// Member 1 keeps heartbeating (so its session never ends) but does not
	// rejoin: only the 30 s rebalance timeout removes it.
	for range 3 {
		h.tickAfter(9 * time.Second)
		if code := h.heartbeat("g", members[1].id, 1); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat during the rebalance: got %d", code)
		}
	}
	h.tickAfter(2 * time.Second)
	assertPending(t, rejoin, "join before the rebalance timeout")
	h.tickAfter(1 * time.Second)
	first, second := await(t, newcomer, "newcomer join"), await(t, rejoin, "rejoin")
	if first.ErrorCode != 0 || second.ErrorCode != 0 || first.Generation != 2 || second.Generation != 2 {
		t.Fatalf("joins after the rebalance timeout: %+v %+v", first, second)
	}
	if h.inspect("g", func(g *group) bool { _, ok := g.members[members[1].id]; return ok }) {
		t.Fatal("the member that did not rejoin must be removed")
	}
}

// Responses carry version-specific fields only where the version has them.
func TestJoinResponseVersions(t *testing.T) {
	h := newHarness(t, nil)
	v0 := await(t, h.joinAsync(newJoin(0, "old", "")), "v0 join")
	if v0.Version != 0 || v0.ErrorCode != 0 || v0.Protocol == nil || *v0.Protocol != "range" || v0.ProtocolType != nil {
		t.Fatalf("v0 join: %+v", v0)
	}
	failed := h.c.JoinGroup(testCtx, newJoin(6, "", ""))
	if failed.Version != 6 || failed.Protocol == nil || *failed.Protocol != "" {
		t.Fatalf("v6 error response must carry a non-null protocol: %+v", failed)
	}
	failed = h.c.JoinGroup(testCtx, newJoin(7, "", ""))
	if failed.Protocol != nil || failed.ProtocolType != nil {
		t.Fatalf("v7 error response: null protocol and type expected: %+v", failed)
	}
}
