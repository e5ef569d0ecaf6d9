package group

import (
	"testing"
	"time"
)

// DescribeGroup and ListGroups report state, members and filters.
func TestDescribeAndListGroups(t *testing.T) {
	h := newHarness(t, nil)
	instance := "instance-1"
	joined := h.join(staticJoin("g", "", instance))
	h.simpleCommit("offsets-only", "events", map[int32]int64{0: 1})

	g, err := h.c.DescribeGroup("g")
	if err != nil || g.State != "CompletingRebalance" || g.Protocol != "" || len(g.Members) != 1 || g.Members[0].Metadata != nil {
		t.Fatalf("describe while completing: %+v %v", g, err)
	}
	_, err = h.c.DescribeGroup("missing")
	wantErr(t, "describe a missing group", err, ErrGroupNotFound)
	sync := h.sync(newSync("g", joined.MemberID, joined.Generation, map[string]string{joined.MemberID: "parts"}))
	if sync.err != nil || string(sync.Assignment) != "parts" {
		t.Fatalf("sync: %+v", sync)
	}
	g, _ = h.c.DescribeGroup("g")
	member := g.Members[0]
	if g.State != "Stable" || g.Protocol != "range" || g.ProtocolType != "consumer" ||
		member.ClientID != "client" || member.ClientHost != "/127.0.0.1" || string(member.Assignment) != "parts" ||
		member.InstanceID == nil || *member.InstanceID != instance || len(member.Metadata) == 0 {
		t.Fatalf("describe stable: %+v", g)
	}

	listed, err := h.c.ListGroups(ListFilter{States: []string{"stable"}})
	if err != nil || len(listed) != 1 || listed[0].Group != "g" || listed[0].State != "Stable" {
		t.Fatalf("list filtered by state: %+v %v", listed, err)
	}
	listed, _ = h.c.ListGroups(ListFilter{Types: []string{"Classic"}})
	if len(listed) != 2 || listed[0].Group != "g" || listed[1].ProtocolType != "" || listed[1].Type != "classic" {
		t.Fatalf("list by type: %+v", listed)
	}
	if listed, _ = h.c.ListGroups(ListFilter{Types: []string{"consumer"}}); len(listed) != 0 {
		t.Fatalf("list KIP-848 groups: %+v", listed)
	}
}

// SyncGroup checks the protocol type and name when given; LeaveGroup
// fences a member id that no longer owns the instance id.
func TestSyncProtocolCheckAndLeaveFencing(t *testing.T) {
	h := newHarness(t, nil)
	joined := h.join(staticJoin("g", "", "instance-1"))
	wrong := newSync("g", joined.MemberID, joined.Generation, nil)
	other := "roundrobin"
	wrong.Protocol = &other
	wantErr(t, "sync with another protocol", h.sync(wrong).err, ErrInconsistentProtocol)
	wantErr(t, "sync with a future generation", h.sync(newSync("g", joined.MemberID, joined.Generation+1, nil)).err, ErrIllegalGeneration)
	instance := "instance-1"
	errs, err := h.c.Leave(testCtx, "g", []Leaver{{MemberID: "client-stale", InstanceID: &instance}, {MemberID: "client-unknown"}})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "leave of a fenced member id", errs[0], ErrFencedInstance)
	wantErr(t, "leave of an unknown member", errs[1], ErrUnknownMember)
	errs, _ = h.c.Leave(testCtx, "g", []Leaver{{InstanceID: &instance}})
	wantErr(t, "leave by instance id", errs[0], nil)
	h.assertGroup("g", "empty in a new generation once its only member left", func(g *group) bool { return g.state == stateEmpty && g.generation == 2 })
	_, err = h.c.Leave(testCtx, "", nil)
	wantErr(t, "leave without a group id", err, ErrInvalidGroupID)
}

// Close answers parked joins and syncs with ErrNotCoordinator, and later
// calls fail with it.
func TestCloseReleasesParkedRequests(t *testing.T) {
	h := newHarness(t, withInitialDelay)
	members := h.joinTogether("g", []JoinRequest{newJoin("g", h.memberID("g")), newJoin("g", h.memberID("g"))})
	joined := members[0]
	if joined.leader {
		joined = members[1]
	}
	follower := h.syncAsync(newSync("g", joined.id, joined.generation, nil))
	assertPending(t, follower, "sync before the leader's")
	other := h.joinAsync(newJoin("other", h.memberID("other")))
	h.assertGroup("other", "join parked in the initial delay", awaitingJoin(1))
	if err := h.c.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "join at close", replied(t, other, "join at close").err, ErrNotCoordinator)
	wantErr(t, "sync at close", replied(t, follower, "sync at close").err, ErrNotCoordinator)
	wantErr(t, "heartbeat after close", h.heartbeat("g", "client-x", 0), ErrNotCoordinator)
	wantErr(t, "join after close", h.join(newJoin("g", joined.id)).err, ErrNotCoordinator)
	h.tickAfter(time.Hour) // a no-op once closed
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
	if _, err := NewCoordinator(Config{}, nil); err == nil {
		t.Error("NewCoordinator accepted a nil store")
	}
}

// With the ticker driver (real clock), a member that never heartbeats is
// evicted after its session timeout; the ticker stops when asked.
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
	ticker := StartTicker(c)
	defer ticker.Stop()
	req := newJoin("g", "")
	req.RequireKnownMemberID = false
	req.SessionTimeout = 20 * time.Millisecond
	var joinErr error
	c.Join(testCtx, req, func(_ JoinResult, err error) { joinErr = err })
	if joinErr != nil {
		t.Fatalf("join: %v", joinErr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if g, err := c.DescribeGroup("g"); err == nil && g.State == "Empty" && len(g.Members) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("member never evicted by the background ticker")
		}
		<-time.After(time.Millisecond)
	}
}
