package loadgen

import (
	"testing"
	"time"
)

// The load starts once every partition is held and no worker is left
// without one (a worker still to join would trigger a rebalance).
func TestAssignmentWatchSettles(t *testing.T) {
	watch := newAssignmentWatch(2)
	watch.set(0, 3)
	if watch.settled(3) {
		t.Fatal("settled while worker 1 holds nothing: its join is still to come")
	}
	watch.set(0, 2)
	watch.set(1, 1)
	if !watch.settled(3) {
		t.Fatal("not settled with 2 + 1 of 3 partitions")
	}
	if watch.settled(4) {
		t.Fatal("settled with 3 of 4 partitions held")
	}
	crowded := newAssignmentWatch(3) // more workers than partitions: one idles
	crowded.set(0, 1)
	crowded.set(2, 1)
	if !crowded.waitSettled(t.Context(), 2, time.Now().Add(time.Second)) {
		t.Fatal("three workers on two partitions never settled")
	}
	if newAssignmentWatch(1).waitSettled(t.Context(), 1, time.Now().Add(10*time.Millisecond)) {
		t.Fatal("settled with nothing assigned")
	}
}
