package group

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitTimeout bounds every wait for a parked request or a condition.
const waitTimeout = 5 * time.Second

// fakeClock is the injected clock: time moves only when a test says so.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Advance(step time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(step)
	f.mu.Unlock()
}

// harness drives one coordinator over a store with a fake clock and
// manual ticks.
type harness struct {
	t         *testing.T
	clock     *fakeClock
	openStore func() OffsetStore
	store     OffsetStore
	cfg       Config
	c         *Coordinator
	// inFlight counts joinAsync/syncAsync calls that have not returned.
	inFlight atomic.Int64
}

func newHarness(t *testing.T, adjust func(*Config)) *harness {
	t.Helper()
	store := NewMemoryStore()
	return newHarnessWith(t, func() OffsetStore { return store }, adjust)
}

// newHarnessWith runs a coordinator on the store openStore returns; a
// restart closes the coordinator (and its store) and opens the store again.
func newHarnessWith(t *testing.T, openStore func() OffsetStore, adjust func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: newFakeClock(), openStore: openStore}
	h.cfg = Config{Now: h.clock.Now, ManualTicks: true, NoInitialRebalanceDelay: true}
	if adjust != nil {
		adjust(&h.cfg)
	}
	h.start()
	t.Cleanup(func() { _ = h.c.Close() })
	return h
}

func (h *harness) start() {
	h.t.Helper()
	h.store = h.openStore()
	c, err := NewCoordinator(h.cfg, h.store)
	if err != nil {
		h.t.Fatalf("NewCoordinator: %v", err)
	}
	h.c = c
}

// restart closes the coordinator and builds a new one on the reopened
// store.
func (h *harness) restart() {
	h.t.Helper()
	if err := h.c.Close(); err != nil {
		h.t.Fatalf("close: %v", err)
	}
	h.start()
}

func (h *harness) tickAfter(step time.Duration) {
	h.clock.Advance(step)
	h.c.Tick()
}

var testCtx = WithClientInfo(context.Background(), ClientInfo{ClientID: "client", Host: "/127.0.0.1"})

// consumerMetadata is a consumer-protocol subscription to topics.
func consumerMetadata(topics ...string) []byte {
	metadata := kmsg.ConsumerMemberMetadata{Version: 0, Topics: topics}
	return metadata.AppendTo(nil)
}

// joinRequest builds a JoinGroup of the consumer protocol type with the
// given protocols (each subscribing to topic "events").
func newJoin(version int16, groupID, memberID string, protocols ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group = groupID
	req.MemberID = memberID
	req.SessionTimeoutMillis = 10_000
	req.RebalanceTimeoutMillis = 30_000
	req.ProtocolType = "consumer"
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, name := range protocols {
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: name, Metadata: consumerMetadata("events")})
	}
	return req
}

func (h *harness) joinAsync(req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	out := make(chan *kmsg.JoinGroupResponse, 1)
	h.inFlight.Add(1)
	go func() {
		out <- h.c.JoinGroup(testCtx, req) // buffered: never blocks
		h.inFlight.Add(-1)
	}()
	return out
}

func (h *harness) syncAsync(req *kmsg.SyncGroupRequest) <-chan *kmsg.SyncGroupResponse {
	out := make(chan *kmsg.SyncGroupResponse, 1)
	h.inFlight.Add(1)
	go func() {
		out <- h.c.SyncGroup(testCtx, req) // buffered: never blocks
		h.inFlight.Add(-1)
	}()
	return out
}

func newSync(version int16, groupID, memberID string, generation int32, assignments map[string]string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = version
	req.Group = groupID
	req.MemberID = memberID
	req.Generation = generation
	for id, assignment := range assignments {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(assignment)})
	}
	return req
}

func (h *harness) heartbeat(groupID, memberID string, generation int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation = groupID, memberID, generation
	return h.c.Heartbeat(testCtx, req).ErrorCode
}

// await returns what ch delivers, failing the test after waitTimeout.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case value := <-ch:
		return value
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// assertPending fails if ch has delivered: the request must still be parked.
func assertPending[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case value := <-ch:
		t.Fatalf("%s answered early: %+v", what, value)
	default:
	}
}

// waitForGroup waits until cond holds on the group's state (read under its
// lock), failing after waitTimeout.
func (h *harness) waitForGroup(groupID, what string, cond func(g *group) bool) {
	h.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		if h.inspect(groupID, cond) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for group %s: %s", groupID, what)
		}
		<-time.After(time.Millisecond)
	}
}

// settle waits until every asynchronous request has returned or is parked
// in the coordinator, so a test step sees the effects of the previous ones.
func (h *harness) settle() {
	h.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for h.inFlight.Load() != h.c.undelivered.Load() {
		if time.Now().After(deadline) {
			h.t.Fatalf("requests did not settle: %d in flight, %d parked", h.inFlight.Load(), h.c.undelivered.Load())
		}
		runtime.Gosched()
	}
}

// inspect evaluates fn on the group under its lock (false if missing).
func (h *harness) inspect(groupID string, fn func(g *group) bool) bool {
	g := h.c.lockGroup(groupID, false)
	if g == nil {
		return false
	}
	defer g.mu.Unlock()
	return fn(g)
}

func awaitingJoin(count int) func(g *group) bool {
	return func(g *group) bool {
		joined := 0
		for _, m := range g.members {
			if m.joinWaiter != nil {
				joined++
			}
		}
		return g.state == statePreparingRebalance && joined == count
	}
}

// joinedMember is a member that completed a join.
type joinedMember struct {
	id         string
	generation int32
	leader     bool
	response   *kmsg.JoinGroupResponse
}

// joinTogether makes every joiner (by client-chosen member ids obtained
// from the KIP-394 round) join one generation, releasing the initial
// delay with ticks when the group has one.
func (h *harness) joinTogether(groupID string, requests []*kmsg.JoinGroupRequest) []joinedMember {
	h.t.Helper()
	pending := make([]<-chan *kmsg.JoinGroupResponse, len(requests))
	for i, req := range requests {
		pending[i] = h.joinAsync(req)
	}
	h.waitForGroup(groupID, fmt.Sprintf("%d members awaiting join", len(requests)), func(g *group) bool {
		// Without an initial delay the join completes as soon as the last
		// expected member arrives.
		return awaitingJoin(len(requests))(g) || g.state == stateCompletingRebalance
	})
	for range 20 {
		if h.inspect(groupID, func(g *group) bool { return g.state != statePreparingRebalance }) {
			break
		}
		h.tickAfter(h.cfg.GroupInitialRebalanceDelay)
	}
	members := make([]joinedMember, len(requests))
	for i := range requests {
		resp := await(h.t, pending[i], "join response")
		if resp.ErrorCode != 0 {
			h.t.Fatalf("join %d: error %d", i, resp.ErrorCode)
		}
		members[i] = joinedMember{id: resp.MemberID, generation: resp.Generation, leader: resp.LeaderID == resp.MemberID, response: resp}
	}
	return members
}

// memberID runs the KIP-394 round and returns the id to join with.
func (h *harness) memberID(groupID string) string {
	h.t.Helper()
	resp := h.c.JoinGroup(testCtx, newJoin(9, groupID, ""))
	if resp.ErrorCode != kerr.MemberIDRequired.Code {
		h.t.Fatalf("first join: want MEMBER_ID_REQUIRED, got %d", resp.ErrorCode)
	}
	return resp.MemberID
}
