package group

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// checkInvariants checks the group's invariants under its lock:
//   - there is a leader exactly when there are members, and it is a member;
//   - the generation never decreases (lastGeneration is the previous
//     observation);
//   - in CompletingRebalance and Stable, every member completed the join of
//     the current generation and supports the selected protocol;
//   - joins are parked only in PreparingRebalance, syncs only in
//     CompletingRebalance;
//   - the static member index and the join order match the members.
func checkInvariants(t *testing.T, g *group, lastGeneration int32) {
	t.Helper()
	if (g.leader == "") != (len(g.members) == 0) {
		t.Fatalf("leader %q with %d members", g.leader, len(g.members))
	}
	if _, ok := g.members[g.leader]; g.leader != "" && !ok {
		t.Fatalf("leader %q is not a member", g.leader)
	}
	if g.generation < lastGeneration {
		t.Fatalf("generation went back from %d to %d", lastGeneration, g.generation)
	}
	if len(g.order) != len(g.members) {
		t.Fatalf("join order has %d ids for %d members", len(g.order), len(g.members))
	}
	for id, m := range g.members {
		if !slices.Contains(g.order, id) || m.id != id {
			t.Fatalf("member %s missing from the join order or misfiled", id)
		}
		if stable := g.state == stateCompletingRebalance || g.state == stateStable; stable {
			if m.joinedGeneration != g.generation {
				t.Fatalf("member %s joined generation %d, group is in %d (%s)", id, m.joinedGeneration, g.generation, g.state)
			}
			if !hasProtocol(m, g.protocol) {
				t.Fatalf("member %s does not support the selected protocol %q", id, g.protocol)
			}
		}
		if m.joinWaiter != nil && g.state != statePreparingRebalance {
			t.Fatalf("member %s parked in JoinGroup while %s", id, g.state)
		}
		if m.syncWaiter != nil && g.state != stateCompletingRebalance {
			t.Fatalf("member %s parked in SyncGroup while %s", id, g.state)
		}
		if m.instanceID != nil && g.staticMembers[*m.instanceID] != id {
			t.Fatalf("instance %s of member %s indexed to %q", *m.instanceID, id, g.staticMembers[*m.instanceID])
		}
	}
	for instance, id := range g.staticMembers {
		if m, ok := g.members[id]; !ok || m.instanceID == nil || *m.instanceID != instance {
			t.Fatalf("static index %s → %s does not match a member", instance, id)
		}
	}
	if g.state == stateEmpty && len(g.members) != 0 {
		t.Fatalf("Empty group with %d members", len(g.members))
	}
}

// simulatedMember is one client of the model test, driven by the test
// loop; its parked requests are reply channels the coordinator fills.
type simulatedMember struct {
	id         string
	instanceID *string
	generation int32
	joining    <-chan joinReply
	syncing    <-chan syncReply
	stable     bool
	// silent members stop heartbeating (a hung client) until revived.
	silent bool
}

// modelRun records what clients observed, to check across responses.
type modelRun struct {
	t       *testing.T
	h       *harness
	rng     *rand.Rand
	members []*simulatedMember
	// leaders is the leader each generation's responses named.
	leaders map[int32]string
	// listed is how many join responses of a generation carried the member
	// list (only the leader's may).
	listed map[int32]int
	last   int32
	// synced counts successful SyncGroups, evicted heartbeats answered
	// UNKNOWN_MEMBER_ID (the member was expired or removed).
	synced, evicted int
	// orphan requests were in flight when their member left.
	orphanJoins []<-chan joinReply
	orphanSyncs []<-chan syncReply
}

// Random joins, leaves, heartbeats, syncs, hung clients and clock jumps
// keep the group's invariants, and clients never see two leaders in one
// generation or a generation going backwards.
func TestGroupStateMachineModel(t *testing.T) {
	evictions := 0
	for seed := range uint64(6) {
		h := newHarness(t, func(cfg *Config) {
			if seed%2 == 1 {
				withInitialDelay(cfg)
			}
		})
		run := &modelRun{t: t, h: h, rng: rand.New(rand.NewPCG(seed, 99)), leaders: map[int32]string{}, listed: map[int32]int{}}
		for i := range 5 {
			m := &simulatedMember{}
			if i%2 == 0 {
				instance := "instance-" + string(rune('a'+i))
				m.instanceID = &instance
			}
			run.members = append(run.members, m)
		}
		for range 1000 {
			run.step()
			run.check()
		}
		run.drain()
		// The run must have exercised rebalances, not idled.
		if run.last < 5 || run.synced < 5 {
			t.Fatalf("seed %d: only %d generations, %d completed syncs", seed, run.last, run.synced)
		}
		t.Logf("seed %d: %d generations, %d completed syncs, %d evictions", seed, run.last, run.synced, run.evicted)
		evictions += run.evicted
	}
	if evictions == 0 {
		t.Fatal("no member was ever evicted: session timeouts untested")
	}
}

func (r *modelRun) step() {
	m := r.members[r.rng.IntN(len(r.members))]
	switch action := r.rng.IntN(30); {
	case action < 3:
		r.h.tickAfter(time.Duration(r.rng.IntN(4000)) * time.Millisecond)
	case action == 3 && m.id != "":
		r.leave(m)
	case action == 4:
		m.silent = !m.silent
	case m.joining != nil:
		r.collectJoin(m)
	case m.syncing != nil:
		r.collectSync(m)
	case m.silent:
	case m.id == "" || !m.stable:
		r.join(m)
	default:
		r.heartbeat(m)
	}
}

func (r *modelRun) join(m *simulatedMember) {
	req := newJoin("g", m.id, "range", "roundrobin")
	req.SessionTimeout = 6 * time.Second
	req.RebalanceTimeout = 8 * time.Second
	req.InstanceID = m.instanceID
	m.stable = false
	m.joining = r.h.joinAsync(req)
}

// collectJoin reads a finished join, if any (it may still be parked).
func (r *modelRun) collectJoin(m *simulatedMember) {
	select {
	case resp := <-m.joining:
		m.joining = nil
		switch {
		case resp.err == nil:
			r.observeJoin(m, resp.JoinResult)
		case errors.Is(resp.err, ErrMemberIDRequired):
			m.id = resp.MemberID
			r.join(m)
		default:
			m.id = ""
		}
	default:
	}
}

func (r *modelRun) observeJoin(m *simulatedMember, resp JoinResult) {
	if resp.Generation < m.generation {
		r.t.Fatalf("member %s saw generation %d after %d", resp.MemberID, resp.Generation, m.generation)
	}
	if leader, ok := r.leaders[resp.Generation]; ok && leader != resp.Leader {
		r.t.Fatalf("generation %d has two leaders: %s and %s", resp.Generation, leader, resp.Leader)
	}
	r.leaders[resp.Generation] = resp.Leader
	if len(resp.Members) > 0 {
		if resp.Leader != resp.MemberID {
			r.t.Fatalf("follower %s received the member list", resp.MemberID)
		}
		if !resp.SkipAssignment {
			r.listed[resp.Generation]++
		}
	}
	if r.listed[resp.Generation] > 1 {
		r.t.Fatalf("generation %d: two members assigned partitions", resp.Generation)
	}
	m.id, m.generation = resp.MemberID, resp.Generation
	assignments := map[string]string{}
	for _, listed := range resp.Members {
		assignments[listed.MemberID] = "for-" + listed.MemberID
	}
	m.syncing = r.h.syncAsync(newSync("g", m.id, m.generation, assignments))
}

func (r *modelRun) collectSync(m *simulatedMember) {
	select {
	case resp := <-m.syncing:
		m.syncing = nil
		switch {
		case resp.err == nil:
			m.stable = true
			r.synced++
		case errors.Is(resp.err, ErrRebalanceInProgress), errors.Is(resp.err, ErrIllegalGeneration):
		default:
			m.id = ""
		}
	default:
	}
}

func (r *modelRun) heartbeat(m *simulatedMember) {
	req := HeartbeatRequest{Group: "g", MemberID: m.id, Generation: m.generation, InstanceID: m.instanceID}
	switch err := r.h.c.Heartbeat(req); {
	case err == nil:
	case errors.Is(err, ErrRebalanceInProgress), errors.Is(err, ErrIllegalGeneration):
		m.stable = false
	default:
		r.evicted++
		m.id, m.stable = "", false
	}
}

func (r *modelRun) leave(m *simulatedMember) {
	_, _ = r.h.c.Leave(testCtx, "g", []Leaver{{MemberID: m.id, InstanceID: m.instanceID}})
	// The leave answered the member's parked requests (or they were
	// answered before and not yet read): check at the end that each got
	// exactly one reply.
	if m.joining != nil {
		r.orphanJoins = append(r.orphanJoins, m.joining)
	}
	if m.syncing != nil {
		r.orphanSyncs = append(r.orphanSyncs, m.syncing)
	}
	*m = simulatedMember{instanceID: m.instanceID}
}

func (r *modelRun) check() {
	r.h.inspect("g", func(g *group) bool {
		checkInvariants(r.t, g, r.last)
		r.last = g.generation
		return true
	})
}

// drain stops the run: Close answers every parked request, and every
// request ever sent has exactly one reply.
func (r *modelRun) drain() {
	if err := r.h.c.Close(); err != nil {
		r.t.Fatal(err)
	}
	for _, m := range r.members {
		if m.joining != nil {
			r.orphanJoins = append(r.orphanJoins, m.joining)
		}
		if m.syncing != nil {
			r.orphanSyncs = append(r.orphanSyncs, m.syncing)
		}
	}
	for _, joining := range r.orphanJoins {
		replied(r.t, joining, "join at close")
	}
	for _, syncing := range r.orphanSyncs {
		replied(r.t, syncing, "sync at close")
	}
}
