package stages

import (
	"testing"
	"time"
)

// The load starts once every partition is held and no worker is left
// without one (a worker still to join would trigger a rebalance).
func TestAssignmentWatchSettles(t *testing.T) {
	watch := NewAssignmentWatch(2)
	watch.Set(0, 3)
	if watch.Settled(3) {
		t.Fatal("settled while worker 1 holds nothing: its join is still to come")
	}
	watch.Set(0, 2)
	watch.Set(1, 1)
	if !watch.Settled(3) {
		t.Fatal("not settled with 2 + 1 of 3 partitions")
	}
	if watch.Settled(4) {
		t.Fatal("settled with 3 of 4 partitions held")
	}
	crowded := NewAssignmentWatch(3) // more workers than partitions: one idles
	crowded.Set(0, 1)
	crowded.Set(2, 1)
	if !crowded.WaitSettled(t.Context(), 2, time.Now().Add(time.Second)) {
		t.Fatal("three workers on two partitions never settled")
	}
	if NewAssignmentWatch(1).WaitSettled(t.Context(), 1, time.Now().Add(10*time.Millisecond)) {
		t.Fatal("settled with nothing assigned")
	}
}
