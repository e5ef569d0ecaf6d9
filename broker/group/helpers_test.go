package group

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeClock is the injected clock: time moves only when a test says so.
// The coordinator runs no goroutine, so tests are single-threaded: a step
// is a call, and its effects (including replies to parked requests) are
// complete when the call returns.
type fakeClock struct {
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time { return f.now }

func (f *fakeClock) Advance(step time.Duration) { f.now = f.now.Add(step) }

// harness drives one coordinator over a store with a fake clock; time
// moves only by tickAfter.
type harness struct {
	t         *testing.T
	clock     *fakeClock
	openStore func() OffsetStore
	store     OffsetStore
	cfg       Config
	c         *Coordinator
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
	h.cfg = Config{Now: h.clock.Now, NoInitialRebalanceDelay: true}
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

// tickAfter moves the clock by step and runs the coordinator's time step.
func (h *harness) tickAfter(step time.Duration) {
	h.clock.Advance(step)
	h.c.Tick(h.clock.Now())
}

var testCtx = context.Background()

// testClient is the connection every test request comes on.
var testClient = ClientInfo{ClientID: "client", Host: "/127.0.0.1"}

// consumerMetadata is a consumer-protocol subscription to topics.
func consumerMetadata(topics ...string) []byte {
	metadata := kmsg.ConsumerMemberMetadata{Version: 0, Topics: topics}
	return metadata.AppendTo(nil)
}

// newJoin builds a join of the consumer protocol type with the given
// protocols (each subscribing to topic "events"), as a v4+ client sends it
// (KIP-394: a new member first gets ErrMemberIDRequired).
func newJoin(groupID, memberID string, protocols ...string) JoinRequest {
	req := JoinRequest{
		Group:                groupID,
		MemberID:             memberID,
		SessionTimeout:       10 * time.Second,
		RebalanceTimeout:     30 * time.Second,
		ProtocolType:         "consumer",
		RequireKnownMemberID: true,
		Client:               testClient,
	}
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, name := range protocols {
		req.Protocols = append(req.Protocols, Protocol{Name: name, Metadata: consumerMetadata("events")})
	}
	return req
}

// joinReply is one reply to a join.
type joinReply struct {
	JoinResult
	err error
}

// syncReply is one reply to a sync.
type syncReply struct {
	SyncResult
	err error
}

// joinAsync sends a join; its reply arrives on the returned channel when
// the coordinator answers (at once, or at a later step).
func (h *harness) joinAsync(req JoinRequest) <-chan joinReply {
	out := make(chan joinReply, 2) // room for a wrong second reply, caught by replied
	h.c.Join(testCtx, req, func(result JoinResult, err error) { out <- joinReply{result, err} })
	return out
}

// join sends a join that must be answered at once.
func (h *harness) join(req JoinRequest) joinReply {
	h.t.Helper()
	return replied(h.t, h.joinAsync(req), "join")
}

func (h *harness) syncAsync(req SyncRequest) <-chan syncReply {
	out := make(chan syncReply, 2)
	h.c.Sync(testCtx, req, func(result SyncResult, err error) { out <- syncReply{result, err} })
	return out
}

// sync sends a sync that must be answered at once.
func (h *harness) sync(req SyncRequest) syncReply {
	h.t.Helper()
	return replied(h.t, h.syncAsync(req), "sync")
}

func newSync(groupID, memberID string, generation int32, assignments map[string]string) SyncRequest {
	req := SyncRequest{Group: groupID, MemberID: memberID, Generation: generation}
	for id, assignment := range assignments {
		req.Assignments = append(req.Assignments, Assignment{MemberID: id, Assignment: []byte(assignment)})
	}
	return req
}

func (h *harness) heartbeat(groupID, memberID string, generation int32) error {
	return h.c.Heartbeat(HeartbeatRequest{Group: groupID, MemberID: memberID, Generation: generation})
}

// replied returns the one reply ch holds, failing if the request is still
// parked or was answered twice. Replies are synchronous (from the step
// that completes them), so no waiting is involved.
func replied[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case value := <-ch:
		select {
		case again := <-ch:
			t.Fatalf("%s answered twice: %+v, then %+v", what, value, again)
		default:
		}
		return value
	default:
		t.Fatalf("%s not answered", what)
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

// wantErr fails unless err wraps want (want nil: err must be nil).
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) { // errors.Is(err, nil) means err == nil
		t.Fatalf("%s: got error %v, want %v", what, err, want)
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

// assertGroup fails unless cond holds on the group's state.
func (h *harness) assertGroup(groupID, what string, cond func(g *group) bool) {
	h.t.Helper()
	if !h.inspect(groupID, cond) {
		h.t.Fatalf("group %s: %s does not hold", groupID, what)
	}
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
	response   JoinResult
}

// joinTogether makes every joiner (by member ids obtained from the KIP-394
// round) join one generation, releasing the initial delay with ticks when
// the group has one.
func (h *harness) joinTogether(groupID string, requests []JoinRequest) []joinedMember {
	h.t.Helper()
	pending := make([]<-chan joinReply, len(requests))
	for i, req := range requests {
		pending[i] = h.joinAsync(req)
	}
	for range 20 {
		if h.inspect(groupID, func(g *group) bool { return g.state != statePreparingRebalance }) {
			break
		}
		h.tickAfter(h.cfg.GroupInitialRebalanceDelay)
	}
	members := make([]joinedMember, len(requests))
	for i := range requests {
		resp := replied(h.t, pending[i], "join")
		if resp.err != nil {
			h.t.Fatalf("join %d: %v", i, resp.err)
		}
		members[i] = joinedMember{id: resp.MemberID, generation: resp.Generation, leader: resp.Leader == resp.MemberID, response: resp.JoinResult}
	}
	return members
}

// memberID runs the KIP-394 round and returns the id to join with.
func (h *harness) memberID(groupID string) string {
	h.t.Helper()
	resp := h.join(newJoin(groupID, ""))
	wantErr(h.t, "first join", resp.err, ErrMemberIDRequired)
	return resp.MemberID
}
