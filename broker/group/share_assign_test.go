package group

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// shareAssignFixture is a share group of members subscribed to one topic.
func shareAssignFixture(members []string) *shareGroup {
	sg := newShareGroup()
	for _, id := range members {
		sg.members[id] = &shareMember{id: id, subscribed: []string{"t"}}
	}
	return sg
}

var shareAssignTopic = subscribedTopic{name: "t", id: [16]byte{7}, partitions: 4}

// checkShareAssignment fails unless every member has work, each partition
// is held by ceil(members/partitions) members, and no member holds more
// than its fair count (the cumulative ceiling) or a partition twice.
func checkShareAssignment(t *testing.T, what string, sg *shareGroup, topic subscribedTopic, target map[string]partitions) {
	t.Helper()
	n, count := len(sg.members), int(topic.partitions)
	sharing := ceilDiv(n, count)
	holders := make([]int, count)
	for id := range sg.members {
		list := target[id][topic.id]
		if len(list) == 0 {
			t.Errorf("%s: member %s has no partition", what, id)
		}
		if len(list) > ceilDiv(sharing*count, n) {
			t.Errorf("%s: member %s has %d partitions, more than its share", what, id, len(list))
		}
		if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
			t.Errorf("%s: member %s holds %v", what, id, list)
		}
		for _, p := range list {
			holders[p]++
		}
	}
	for p, h := range holders {
		if h != sharing {
			t.Errorf("%s: partition %d has %d members, want %d", what, p, h, sharing)
		}
	}
}

// moved counts the partitions members kept in both assignments had in
// before and not in after.
func moved(before, after map[string]partitions, topic [16]byte) int {
	n := 0
	for id, parts := range before {
		if _, still := after[id]; !still {
			continue
		}
		for _, p := range parts[topic] {
			if !after[id].has(topic, p) {
				n++
			}
		}
	}
	return n
}

// Members come and go one at a time, in a random order, on 1, 3, 4 and 7
// partitions:
// each target is balanced, and it moves no partition away from a member
// that did not have more than its new share (a member keeps what it had),
// but for at most one swap a step that makes room for a member short of
// its share, in few steps.
func TestShareAssignmentIsBalancedAndSticky(t *testing.T) {
	for _, count := range []int32{1, 3, 4, 7} {
		t.Run(fmt.Sprintf("%d partitions", count), func(t *testing.T) {
			checkShareAssignmentSteps(t, subscribedTopic{name: "t", id: [16]byte{7}, partitions: count})
		})
	}
}

func checkShareAssignmentSteps(t *testing.T, topic subscribedTopic) {
	rng := rand.New(rand.NewSource(int64(topic.partitions)))
	var members []string
	sg := shareAssignFixture(nil)
	var target map[string]partitions
	swapSteps := 0
	defer func() {
		if swapSteps > 30 {
			t.Errorf("%d steps of 300 moved a partition by a swap, want few", swapSteps)
		}
		t.Logf("%d steps of 300 moved a partition by a swap", swapSteps)
	}()
	for step := range 300 {
		join := len(members) == 0 || (len(members) < 12 && rng.Intn(2) == 0)
		if join {
			id := fmt.Sprintf("m%03d", step)
			members = append(members, id)
			sg.members[id] = &shareMember{id: id, subscribed: []string{"t"}}
		} else {
			i := rng.Intn(len(members))
			delete(sg.members, members[i])
			members = slices.Delete(members, i, i+1)
		}
		next := sg.targetAssignment([]subscribedTopic{topic}, target)
		what := fmt.Sprintf("step %d (%d members)", step, len(members))
		checkShareAssignment(t, what, sg, topic, next)
		// A kept member loses a partition only when its new share is
		// smaller than what it held, or the partition had more holders
		// among the kept members than it has room for now.
		sharing := ceilDiv(len(members), int(topic.partitions))
		unforced := 0 // at most one: the swap that makes room
		heldBefore := map[int32]int{}
		for id, parts := range target {
			if _, still := next[id]; still {
				for _, p := range parts[topic.id] {
					heldBefore[p]++
				}
			}
		}
		for id, parts := range target {
			if _, still := next[id]; !still {
				continue
			}
			for _, p := range parts[topic.id] {
				if next[id].has(topic.id, p) || heldBefore[p] > sharing {
					continue
				}
				if kept := len(next[id][topic.id]); kept >= len(parts[topic.id]) {
					unforced++
					if unforced > 1 {
						t.Errorf("%s: member %s lost partition %d (held by %d, room for %d) yet holds as many as before (%v -> %v)",
							what, id, p, heldBefore[p], sharing, parts, next[id])
					}
				}
			}
		}
		if unforced > 0 {
			swapSteps++
		}
		target = next
		if t.Failed() {
			return
		}
	}
}

// A member joining a group of 3 on 4 partitions takes one partition from
// the member that had two; a member leaving hands its partitions to the
// others without moving anyone else's.
func TestShareAssignmentMovesLittle(t *testing.T) {
	sg := shareAssignFixture([]string{"a", "b", "c"})
	topics := []subscribedTopic{shareAssignTopic}
	three := sg.targetAssignment(topics, nil)
	checkShareAssignment(t, "3 members", sg, shareAssignTopic, three)
	sg.members["d"] = &shareMember{id: "d", subscribed: []string{"t"}}
	four := sg.targetAssignment(topics, three)
	checkShareAssignment(t, "4 members", sg, shareAssignTopic, four)
	if n := moved(three, four, shareAssignTopic.id); n != 1 {
		t.Errorf("a fourth member moved %d partitions, want 1: %v -> %v", n, three, four)
	}
	delete(sg.members, "b")
	back := sg.targetAssignment(topics, four)
	checkShareAssignment(t, "b left", sg, shareAssignTopic, back)
	if n := moved(four, back, shareAssignTopic.id); n != 0 {
		t.Errorf("b's departure moved %d partitions of the others, want 0: %v -> %v", n, four, back)
	}
}
