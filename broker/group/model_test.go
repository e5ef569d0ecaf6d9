package group

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
// loop; its parked requests run on goroutines.
type simulatedMember struct {
	id         string
	instanceID *string
	generation int32
	joining    <-chan *kmsg.JoinGroupResponse
	syncing    <-chan *kmsg.SyncGroupResponse
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
	orphanJoins []<-chan *kmsg.JoinGroupResponse
	orphanSyncs []<-chan *kmsg.SyncGroupResponse
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
			h.settle()
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
	req := newJoin(9, "g", m.id, "range", "roundrobin")
	req.SessionTimeoutMillis = 6000
	req.RebalanceTimeoutMillis = 8000
	req.InstanceID = m.instanceID
	m.stable = false
	m.joining = r.h.joinAsync(req)
}

// collectJoin reads a finished join, if any (it may still be parked).
func (r *modelRun) collectJoin(m *simulatedMember) {
	select {
	case resp := <-m.joining:
		m.joining = nil
		switch resp.ErrorCode {
		case 0:
			r.observeJoin(m, resp)
		case kerr.MemberIDRequired.Code:
			m.id = resp.MemberID
			r.join(m)
		default:
			m.id = ""
		}
	default:
	}
}

func (r *modelRun) observeJoin(m *simulatedMember, resp *kmsg.JoinGroupResponse) {
	if resp.Generation < m.generation {
		r.t.Fatalf("member %s saw generation %d after %d", resp.MemberID, resp.Generation, m.generation)
	}
	if leader, ok := r.leaders[resp.Generation]; ok && leader != resp.LeaderID {
		r.t.Fatalf("generation %d has two leaders: %s and %s", resp.Generation, leader, resp.LeaderID)
	}
	r.leaders[resp.Generation] = resp.LeaderID
	if len(resp.Members) > 0 {
		if resp.LeaderID != resp.MemberID {
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
	m.syncing = r.h.syncAsync(newSync(5, "g", m.id, m.generation, assignments))
}

func (r *modelRun) collectSync(m *simulatedMember) {
	select {
	case resp := <-m.syncing:
		m.syncing = nil
		switch resp.ErrorCode {
		case 0:
			m.stable = true
			r.synced++
		case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
		default:
			m.id = ""
		}
	default:
	}
}

func (r *modelRun) heartbeat(m *simulatedMember) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation, req.InstanceID = "g", m.id, m.generation, m.instanceID
	switch code := r.h.c.Heartbeat(testCtx, req).ErrorCode; code {
	case 0:
	case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
		m.stable = false
	default:
		r.evicted++
		m.id, m.stable = "", false
	}
}

func (r *modelRun) leave(m *simulatedMember) {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 5
	req.Group = "g"
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m.id, InstanceID: m.instanceID}}
	r.h.c.LeaveGroup(testCtx, req)
	// A request still in flight may not have reached the coordinator yet
	// (then it is not answered by the leave): drain it at the end.
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

// drain stops the run: Close answers every parked request.
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
		await(r.t, joining, "join at close")
	}
	for _, syncing := range r.orphanSyncs {
		await(r.t, syncing, "sync at close")
	}
}
