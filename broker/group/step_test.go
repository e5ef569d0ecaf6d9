package group

import (
	"testing"
	"time"
)

// The core is driven step by step, as etcd raft's is: requests are calls,
// time moves only by Tick(now), and each parked request's reply arrives
// during the step that completes it — no goroutines, no sleeps. This
// scenario walks one rebalance and one session expiry through their exact
// deadlines.
func TestStepByStepRebalanceAndSessionExpiry(t *testing.T) {
	clock := newFakeClock()
	start := clock.Now()
	c, err := NewCoordinator(Config{Now: clock.Now, GroupInitialRebalanceDelay: 3 * time.Second}, NewMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	step := func(at time.Duration) {
		clock.now = start.Add(at)
		c.Tick(clock.Now())
	}

	// Step 0: two new members get their ids (KIP-394), then join; the
	// first rebalance of an empty group waits group.initial.rebalance.delay.
	var ids [2]string
	for i := range ids {
		var first joinReply
		c.Join(testCtx, newJoin("g", ""), func(r JoinResult, err error) { first = joinReply{r, err} })
		wantErr(t, "first join", first.err, ErrMemberIDRequired)
		ids[i] = first.MemberID
	}
	var joins [2]chan joinReply
	for i, id := range ids {
		joins[i] = make(chan joinReply, 1)
		reply := joins[i]
		c.Join(testCtx, newJoin("g", id), func(r JoinResult, err error) { reply <- joinReply{r, err} })
	}
	// Just before the delay ends nothing happens; at 3 s the delay is
	// extended once (the second member arrived during it); at 6 s the join
	// completes and both parked joins are answered within that Tick.
	step(3*time.Second - time.Nanosecond)
	step(3 * time.Second)
	assertPending(t, joins[0], "join at the first delay")
	step(6*time.Second - time.Nanosecond)
	assertPending(t, joins[1], "join before the extended delay")
	step(6 * time.Second)
	var results [2]joinReply
	for i := range joins {
		results[i] = replied(t, joins[i], "join at the extended delay")
		if results[i].err != nil || results[i].Generation != 1 {
			t.Fatalf("join %d: %+v", i, results[i])
		}
	}
	leader, follower := results[0], results[1]
	if follower.Leader == follower.MemberID {
		leader, follower = follower, leader
	}
	if leader.Leader != leader.MemberID || len(leader.Members) != 2 || len(follower.Members) != 0 {
		t.Fatalf("one leader with the member list: %+v / %+v", leader, follower)
	}

	// Step 1: the follower's sync parks; the leader's sync answers both.
	followerSync := make(chan syncReply, 1)
	c.Sync(testCtx, newSync("g", follower.MemberID, 1, nil), func(r SyncResult, err error) { followerSync <- syncReply{r, err} })
	assertPending(t, followerSync, "follower sync before the leader's")
	var leaderSync syncReply
	assignments := map[string]string{leader.MemberID: "p0", follower.MemberID: "p1"}
	c.Sync(testCtx, newSync("g", leader.MemberID, 1, assignments), func(r SyncResult, err error) { leaderSync = syncReply{r, err} })
	if got := replied(t, followerSync, "follower sync"); got.err != nil || string(got.Assignment) != "p1" || string(leaderSync.Assignment) != "p0" {
		t.Fatalf("syncs: follower %+v, leader %+v", got, leaderSync)
	}

	// Step 2: the leader heartbeats at 12 s; the follower, silent since its
	// sync at 6 s, expires exactly at 6 s + its 10 s session timeout.
	members := func() int {
		described, err := c.DescribeGroup("g")
		if err != nil {
			t.Fatal(err)
		}
		return len(described.Members)
	}
	clock.now = start.Add(12 * time.Second)
	wantErr(t, "leader heartbeat", c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: leader.MemberID, Generation: 1}), nil)
	step(16*time.Second - time.Nanosecond)
	if members() != 2 {
		t.Fatal("follower expired before its session timeout")
	}
	step(16 * time.Second)
	if members() != 1 {
		t.Fatal("follower not expired at its session timeout")
	}
	wantErr(t, "expired follower", c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: follower.MemberID, Generation: 1}), ErrUnknownMember)
	wantErr(t, "leader told to rejoin", c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: leader.MemberID, Generation: 1}), ErrRebalanceInProgress)

	// Step 3: the leader rejoins; it is the only member expected, so the
	// join completes within the call: generation 2, led by it alone.
	var rejoined joinReply
	c.Join(testCtx, newJoin("g", leader.MemberID), func(r JoinResult, err error) { rejoined = joinReply{r, err} })
	if rejoined.err != nil || rejoined.Generation != 2 || rejoined.Leader != leader.MemberID || len(rejoined.Members) != 1 {
		t.Fatalf("rejoin after the expiry: %+v", rejoined)
	}
}
