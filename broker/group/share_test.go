package group

import (
	"errors"
	"testing"
	"time"
)

func shareHarness(t *testing.T, topics map[string]int32) *harness {
	t.Helper()
	return newHarness(t, func(cfg *Config) {
		cfg.Catalog = &fakeCatalog{topics: topics}
		cfg.ShareSessionTimeout = 10 * time.Second
	})
}

func (h *harness) shareJoin(group, member string, topics ...string) ShareHeartbeatResult {
	h.t.Helper()
	result, err := h.c.ShareHeartbeat(testCtx, ShareHeartbeatRequest{Group: group, MemberID: member, SubscribedTopicNames: topics, Client: testClient})
	if err != nil {
		h.t.Fatalf("join %s: %v", member, err)
	}
	return result
}

func (h *harness) shareBeat(group, member string, epoch int32) (ShareHeartbeatResult, error) {
	return h.c.ShareHeartbeat(testCtx, ShareHeartbeatRequest{Group: group, MemberID: member, MemberEpoch: epoch, Client: testClient})
}

func assignedCount(result ShareHeartbeatResult) int {
	n := 0
	if result.Assignment != nil {
		for _, topic := range *result.Assignment {
			n += len(topic.Partitions)
		}
	}
	return n
}

// Members share a topic's partitions: with fewer members than partitions
// each partition has one member; with more, every member gets at least
// one and each partition is shared by the same number of members (6 on 4
// partitions: 2 each, so 2 members get 2 partitions). A member learns a
// change on its next heartbeat, at the new group epoch.
func TestShareHeartbeatSpreadsPartitions(t *testing.T) {
	t.Parallel()
	h := shareHarness(t, map[string]int32{"t": 4})
	a := h.shareJoin("sg", "a", "t")
	if assignedCount(a) != 4 || a.MemberEpoch != 1 {
		t.Fatalf("first member: %d partitions at epoch %d, want 4 at 1", assignedCount(a), a.MemberEpoch)
	}
	b := h.shareJoin("sg", "b", "t")
	if assignedCount(b) != 2 {
		t.Fatalf("second member: %d partitions, want 2", assignedCount(b))
	}
	again, err := h.shareBeat("sg", "a", a.MemberEpoch)
	if err != nil || assignedCount(again) != 2 || again.MemberEpoch != b.MemberEpoch {
		t.Fatalf("first member after the join: %d partitions at epoch %d (%v), want 2 at %d", assignedCount(again), again.MemberEpoch, err, b.MemberEpoch)
	}
	for _, id := range []string{"c", "d", "e", "f"} {
		h.shareJoin("sg", id, "t")
	}
	holders := map[int32]int{}
	total := 0
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		result, err := h.c.ShareHeartbeat(testCtx, ShareHeartbeatRequest{Group: "sg", MemberID: id, MemberEpoch: 0, SubscribedTopicNames: []string{"t"}, Client: testClient})
		if n := assignedCount(result); err != nil || n < 1 || n > 2 {
			t.Errorf("member %s of 6 on 4 partitions: %d partitions (%v), want 1 or 2", id, n, err)
		}
		for _, topic := range *result.Assignment {
			for _, p := range topic.Partitions {
				holders[p]++
				total++
			}
		}
	}
	if total != 8 || len(holders) != 4 || holders[0] != 2 || holders[1] != 2 || holders[2] != 2 || holders[3] != 2 {
		t.Errorf("6 members on 4 partitions: holders per partition %v, want 2 each", holders)
	}
	described, err := h.c.DescribeShareGroup("sg")
	if err != nil || described.State != "Stable" || len(described.Members) != 6 || described.Assignor != "simple" {
		t.Fatalf("describe: %+v %v", described, err)
	}
}

// A heartbeat at an epoch neither current nor previous is fenced; an
// unknown member is refused; a leave and a session expiry remove members.
func TestShareHeartbeatEpochsLeaveAndExpiry(t *testing.T) {
	t.Parallel()
	h := shareHarness(t, map[string]int32{"t": 2})
	a := h.shareJoin("sg", "a", "t")
	if _, err := h.shareBeat("sg", "a", a.MemberEpoch+5); !errors.Is(err, ErrFencedMemberEpoch) {
		t.Errorf("heartbeat at a future epoch: %v, want ErrFencedMemberEpoch", err)
	}
	if _, err := h.shareBeat("sg", "nobody", 3); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("heartbeat of an unknown member: %v, want ErrUnknownMember", err)
	}
	h.shareJoin("sg", "b", "t")
	if result, err := h.shareBeat("sg", "b", LeaveEpoch); err != nil || result.MemberEpoch != LeaveEpoch {
		t.Fatalf("leave: %+v %v", result, err)
	}
	h.tickAfter(5 * time.Second)
	if _, err := h.shareBeat("sg", "a", a.MemberEpoch); err != nil {
		t.Fatalf("heartbeat within the session: %v", err)
	}
	h.tickAfter(11 * time.Second)
	if _, err := h.shareBeat("sg", "a", a.MemberEpoch); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("heartbeat after the session expired: %v, want ErrUnknownMember", err)
	}
	if described, _ := h.c.DescribeShareGroup("sg"); described.State != "Empty" {
		t.Errorf("state after every member left: %q, want Empty", described.State)
	}
}

// A group id is one kind of group: a share group is not a consumer or
// classic group, and the other way round.
func TestShareGroupIDsAreExclusive(t *testing.T) {
	t.Parallel()
	h := shareHarness(t, map[string]int32{"t": 1})
	h.shareJoin("sg", "a", "t")
	if _, err := h.c.ConsumerHeartbeat(testCtx, ConsumerHeartbeatRequest{Group: "sg", MemberID: "c", RebalanceTimeoutMillis: 1000,
		SubscribedTopicNames: []string{"t"}, Owned: []TopicPartitions{}}); !errors.Is(err, ErrGroupNotFound) {
		t.Errorf("consumer heartbeat on a share group: %v, want ErrGroupNotFound", err)
	}
	joined := h.join(newJoin("sg", "", "range"))
	if !errors.Is(joined.err, ErrInconsistentProtocol) {
		t.Errorf("classic join on a share group: %v, want ErrInconsistentProtocol", joined.err)
	}
	if _, err := h.c.DescribeGroup("sg"); !errors.Is(err, ErrGroupNotFound) {
		t.Errorf("DescribeGroups of a share group: %v, want ErrGroupNotFound", err)
	}
	listed, _ := h.c.ListGroups(ListFilter{Types: []string{"share"}})
	if len(listed) != 1 || listed[0].Group != "sg" || listed[0].ProtocolType != "share" {
		t.Errorf("ListGroups of type share: %+v", listed)
	}
	if _, err := h.c.ConsumerHeartbeat(testCtx, ConsumerHeartbeatRequest{Group: "cg", MemberID: "c", RebalanceTimeoutMillis: 1000,
		SubscribedTopicNames: []string{"t"}, Owned: []TopicPartitions{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.ShareHeartbeat(testCtx, ShareHeartbeatRequest{Group: "cg", MemberID: "s", SubscribedTopicNames: []string{"t"}}); !errors.Is(err, ErrGroupNotFound) {
		t.Errorf("share heartbeat on a consumer group: %v, want ErrGroupNotFound", err)
	}
}

// Share-partition state: initialized once, then updated; an older leader
// epoch and another state epoch are fenced; a deleted group's state is
// not written back; everything survives a coordinator restart.
func TestShareStateFencingAndRestart(t *testing.T) {
	t.Parallel()
	h := shareHarness(t, map[string]int32{"t": 1})
	key := ShareKey{TopicID: topicIDOf("t"), Partition: 0}
	if err := h.c.WriteShareState(testCtx, "sg", key, ShareState{LeaderEpoch: 3, StartOffset: 10}, false); !errors.Is(err, ErrFencedStateEpoch) {
		t.Errorf("update before any state: %v, want ErrFencedStateEpoch", err)
	}
	if err := h.c.WriteShareState(testCtx, "sg", key, ShareState{LeaderEpoch: -1, StartOffset: 10}, true); err != nil {
		t.Fatal(err)
	}
	if err := h.c.WriteShareState(testCtx, "sg", key, ShareState{LeaderEpoch: -1, StartOffset: 10}, true); !errors.Is(err, ErrFencedStateEpoch) {
		t.Errorf("second initialization: %v, want ErrFencedStateEpoch", err)
	}
	state := ShareState{LeaderEpoch: 3, StartOffset: 12, Batches: []ShareStateBatch{{First: 12, Last: 14, DeliveryCount: 2, State: 0}, {First: 15, Last: 15, DeliveryCount: 1, State: 2}}}
	if err := h.c.WriteShareState(testCtx, "sg", key, state, false); err != nil {
		t.Fatal(err)
	}
	overlapping := ShareState{LeaderEpoch: 3, StartOffset: 12, Batches: []ShareStateBatch{{First: 12, Last: 14}, {First: 14, Last: 15}}}
	if err := h.c.WriteShareState(testCtx, "sg", key, overlapping, false); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("write of overlapping batches: %v, want ErrInvalidRequest", err)
	}
	if err := h.c.WriteShareState(testCtx, "sg", key, ShareState{LeaderEpoch: 2, StartOffset: 99}, false); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Errorf("write of an older leader: %v, want ErrFencedLeaderEpoch", err)
	}
	h.restart()
	got, found, err := h.c.ReadShareState("sg", key)
	if err != nil || !found || got.StartOffset != 12 || got.LeaderEpoch != 3 || len(got.Batches) != 2 || got.Batches[0] != state.Batches[0] || got.Batches[1] != state.Batches[1] {
		t.Fatalf("state after a restart: %+v found %v (%v), want %+v", got, found, err, state)
	}
	if err := h.c.AlterShareOffsets(testCtx, "sg", []ShareOffset{{Key: key, StartOffset: 5}}); err != nil {
		t.Fatal(err)
	}
	if err := h.c.WriteShareState(testCtx, "sg", key, state, false); !errors.Is(err, ErrFencedStateEpoch) {
		t.Errorf("write over an altered start offset: %v, want ErrFencedStateEpoch", err)
	}
	if errs := h.c.DeleteGroups(testCtx, []string{"sg"}); errs[0] != nil {
		t.Fatalf("delete: %v", errs[0])
	}
	state.StateEpoch = 1
	if err := h.c.WriteShareState(testCtx, "sg", key, state, false); !errors.Is(err, ErrFencedStateEpoch) {
		t.Errorf("a stale leader's write after the group was deleted: %v, want ErrFencedStateEpoch", err)
	}
	h.restart()
	if _, found, _ := h.c.ReadShareState("sg", key); found {
		t.Error("a deleted group's state came back after a restart")
	}
}

// AlterShareOffsets and DeleteShareOffsets need a group without members.
func TestShareOffsetsNeedAnEmptyGroup(t *testing.T) {
	t.Parallel()
	h := shareHarness(t, map[string]int32{"t": 1})
	key := ShareKey{TopicID: topicIDOf("t"), Partition: 0}
	h.shareJoin("sg", "a", "t")
	if err := h.c.AlterShareOffsets(testCtx, "sg", []ShareOffset{{Key: key, StartOffset: 5}}); !errors.Is(err, ErrNonEmptyGroup) {
		t.Errorf("alter with a member: %v, want ErrNonEmptyGroup", err)
	}
	if err := h.c.DeleteShareOffsets(testCtx, "sg", [][16]byte{key.TopicID}); !errors.Is(err, ErrNonEmptyGroup) {
		t.Errorf("delete with a member: %v, want ErrNonEmptyGroup", err)
	}
	if _, err := h.shareBeat("sg", "a", LeaveEpoch); err != nil {
		t.Fatal(err)
	}
	if err := h.c.AlterShareOffsets(testCtx, "sg", []ShareOffset{{Key: key, StartOffset: 5}}); err != nil {
		t.Fatal(err)
	}
	states, err := h.c.ShareStates("sg")
	if err != nil || states[key].StartOffset != 5 || states[key].StateEpoch != 1 {
		t.Fatalf("after alter: %+v %v", states, err)
	}
	if err := h.c.DeleteShareOffsets(testCtx, "sg", [][16]byte{key.TopicID}); err != nil {
		t.Fatal(err)
	}
	if states, _ := h.c.ShareStates("sg"); len(states) != 0 {
		t.Errorf("after delete: %+v", states)
	}
}

// FuzzDecodeShareState: a share-partition state value never panics the
// decoder, and what decodes encodes back to the same bytes.
func FuzzDecodeShareState(f *testing.F) {
	f.Add(shareStateRecord("g", ShareKey{}, ShareState{StateEpoch: 1, LeaderEpoch: 2, StartOffset: 3,
		Batches: []ShareStateBatch{{First: 3, Last: 9, DeliveryCount: 1, State: 2}}}).Value)
	f.Add([]byte{0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, raw []byte) {
		state, err := decodeShareState(raw)
		if err != nil {
			return
		}
		if again := shareStateRecord("g", ShareKey{}, state).Value; string(again) != string(raw) {
			t.Fatalf("re-encoded %x, decoded from %x", again, raw)
		}
	})
}
