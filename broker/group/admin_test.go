package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups and ListGroups report state, members and
// version-dependent fields.
func TestDescribeAndListGroups(t *testing.T) {
	h := newHarness(t, nil)
	instance := "instance-1"
	joinReq := staticJoin("g", "", instance)
	joined := await(t, h.joinAsync(joinReq), "join")
	h.simpleCommit("offsets-only", "events", map[int32]int64{0: 1})

	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Version = 5
	describe.Groups = []string{"g", "missing"}
	resp := h.c.DescribeGroups(testCtx, describe)
	g := resp.Groups[0]
	if g.State != "CompletingRebalance" || g.Protocol != "" || len(g.Members) != 1 || g.Members[0].ProtocolMetadata != nil {
		t.Fatalf("describe while completing: %+v", g)
	}
	if resp.Groups[1].State != "Dead" || resp.Groups[1].ErrorCode != 0 {
		t.Fatalf("describe v5 of a missing group: %+v", resp.Groups[1])
	}
	sync := h.c.SyncGroup(testCtx, newSync(3, "g", joined.MemberID, joined.Generation, map[string]string{joined.MemberID: "parts"}))
	if sync.ErrorCode != 0 || sync.Protocol != nil {
		t.Fatalf("sync v3 must not carry v5 fields: %+v", sync)
	}
	g = h.c.DescribeGroups(testCtx, describe).Groups[0]
	member := g.Members[0]
	if g.State != "Stable" || g.Protocol != "range" || g.ProtocolType != "consumer" ||
		member.ClientID != "client" || member.ClientHost != "/127.0.0.1" || string(member.MemberAssignment) != "parts" ||
		member.InstanceID == nil || *member.InstanceID != instance || len(member.ProtocolMetadata) == 0 {
		t.Fatalf("describe stable: %+v", g)
	}
	describe.Version = 6
	missing := h.c.DescribeGroups(testCtx, describe).Groups[1]
	if missing.ErrorCode != kerr.GroupIDNotFound.Code || missing.ErrorMessage == nil {
		t.Fatalf("describe v6 of a missing group: %+v", missing)
	}
	describe.Version = 3
	if old := h.c.DescribeGroups(testCtx, describe).Groups[0]; old.Members[0].InstanceID != nil {
		t.Fatalf("describe v3 must not carry instance ids: %+v", old)
	}

	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 4
	list.StatesFilter = []string{"stable"}
	listed := h.c.ListGroups(testCtx, list)
	if len(listed.Groups) != 1 || listed.Groups[0].Group != "g" || listed.Groups[0].GroupState != "Stable" || listed.Groups[0].GroupType != "" {
		t.Fatalf("list v4 filtered: %+v", listed)
	}
	list.Version = 5
	list.StatesFilter = nil
	list.TypesFilter = []string{"Classic"}
	listed = h.c.ListGroups(testCtx, list)
	if len(listed.Groups) != 2 || listed.Groups[0].Group != "g" || listed.Groups[1].ProtocolType != "" || listed.Groups[1].GroupType != "classic" {
		t.Fatalf("list v5: %+v", listed)
	}
	list.TypesFilter = []string{"consumer"}
	if listed = h.c.ListGroups(testCtx, list); len(listed.Groups) != 0 {
		t.Fatalf("list v5 for KIP-848 groups: %+v", listed)
	}
}

// SyncGroup v5 checks the protocol type and name; LeaveGroup v3+ fences a
// member id that no longer owns the instance id.
func TestSyncProtocolCheckAndLeaveFencing(t *testing.T) {
	h := newHarness(t, nil)
	joined := await(t, h.joinAsync(staticJoin("g", "", "instance-1")), "join")
	wrong := newSync(5, "g", joined.MemberID, joined.Generation, nil)
	other := "roundrobin"
	wrong.Protocol = &other
	if code := h.c.SyncGroup(testCtx, wrong).ErrorCode; code != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("sync with another protocol: %d", code)
	}
	if code := h.c.SyncGroup(testCtx, newSync(5, "g", joined.MemberID, joined.Generation+1, nil)).ErrorCode; code != kerr.IllegalGeneration.Code {
		t.Fatalf("sync with a future generation: %d", code)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 4
	leave.Group = "g"
	instance := "instance-1"
	leave.Members = []kmsg.LeaveGroupRequestMember{
		{MemberID: "client-stale", InstanceID: &instance},
		{MemberID: "client-unknown"},
	}
	resp := h.c.LeaveGroup(testCtx, leave)
	if resp.Members[0].ErrorCode != kerr.FencedInstanceID.Code || resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", resp)
	}
	leave.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: &instance}}
	if resp := h.c.LeaveGroup(testCtx, leave); resp.Members[0].ErrorCode != 0 {
		t.Fatalf("leave by instance id: %+v", resp)
	}
	if !h.inspect("g", func(g *group) bool { return g.state == stateEmpty && g.generation == 2 }) {
		t.Fatal("the group must be empty in a new generation once its only member left")
	}
}

// Close answers parked requests with NOT_COORDINATOR; a cancelled request
// context releases its handler.
func TestCloseAndCancelReleaseParkedRequests(t *testing.T) {
	h := newHarness(t, withInitialDelay)
	parked := h.joinAsync(newJoin(9, "g", h.memberID("g")))
	h.waitForGroup("g", "join parked", awaitingJoin(1))
	ctx, cancel := context.WithCancel(testCtx)
	cancelled := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { cancelled <- h.c.JoinGroup(ctx, newJoin(9, "g", h.memberID("g"))) }()
	h.waitForGroup("g", "second join parked", awaitingJoin(2))
	cancel()
	if resp := await(t, cancelled, "cancelled join"); resp.ErrorCode == 0 {
		t.Fatalf("cancelled join reported success: %+v", resp)
	}
	if err := h.c.Close(); err != nil {
		t.Fatal(err)
	}
	if resp := await(t, parked, "join at close"); resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join at close: %d", resp.ErrorCode)
	}
	if code := h.heartbeat("g", "client-x", 0); code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat after close: %d", code)
	}
}

// Bad configurations are refused with an error.
func TestConfigValidation(t *testing.T) {
	for name, cfg := range map[string]Config{
		"session bounds": {GroupMinSessionTimeout: 10, GroupMaxSessionTimeout: 5},
		"partitions":     {OffsetsTopicPartitions: -1},
		"retention":      {OffsetsRetention: -1},
	} {
		if _, err := NewCoordinator(cfg, NewMemoryStore()); err == nil {
			t.Errorf("%s: NewCoordinator accepted %+v", name, cfg)
		}
	}
	if _, err := NewCoordinator(Config{ManualTicks: true}, nil); err == nil {
		t.Error("NewCoordinator accepted a nil store")
	}
}

// With the background ticker (no manual ticks, real clock), a member that
// never heartbeats is evicted after its session timeout.
func TestBackgroundTickerEvicts(t *testing.T) {
	c, err := NewCoordinator(Config{
		GroupMinSessionTimeout:  time.Millisecond,
		TickInterval:            2 * time.Millisecond,
		NoInitialRebalanceDelay: true,
	}, NewMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := newJoin(3, "g", "")
	req.SessionTimeoutMillis = 20
	if resp := c.JoinGroup(testCtx, req); resp.ErrorCode != 0 {
		t.Fatalf("join: %+v", resp)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		describe := kmsg.NewPtrDescribeGroupsRequest()
		describe.Groups = []string{"g"}
		if group := c.DescribeGroups(testCtx, describe).Groups[0]; group.State == "Empty" && len(group.Members) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("member never evicted by the background ticker")
		}
		<-time.After(time.Millisecond)
	}
}
