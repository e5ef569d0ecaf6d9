package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomAssignment places partitions of rf replicas on brokers at random.
func randomAssignment(r *rand.Rand, brokers []int32, partitions, rf int) assignment {
	a := assignment{}
	for p := range partitions {
		perm := r.Perm(len(brokers))[:rf]
		list := make([]int32, rf)
		for i, j := range perm {
			list[i] = brokers[j]
		}
		a[topicPartition{topic: fmt.Sprintf("t%d", p%3), partition: int32(p)}] = list
	}
	return a
}

func applyMoves(a, moves assignment) assignment {
	out := assignment{}
	for tp, list := range a {
		out[tp] = slices.Clone(list)
	}
	for tp, list := range moves {
		out[tp] = list
	}
	return out
}

func checkLists(t *testing.T, a assignment, rf int) {
	t.Helper()
	for tp, list := range a {
		if len(list) != rf {
			t.Fatalf("%v: %v has %d replicas, want %d", tp, list, len(list), rf)
		}
		for i, b := range list {
			if slices.Contains(list[:i], b) {
				t.Fatalf("%v: broker %d twice in %v", tp, b, list)
			}
		}
	}
}

// Property: a drain leaves the drained broker with nothing, keeps every
// partition's size with distinct replicas, moves only partitions it held,
// and spreads them so no broker ends above the others by more than the
// drained broker's share allows.
func TestPlanDrainProperty(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		n := 3 + r.IntN(4)
		brokers := make([]int32, n)
		for i := range brokers {
			brokers[i] = int32(i + 1)
		}
		rf := 1 + r.IntN(min(3, n-1))
		current := randomAssignment(r, brokers, 1+r.IntN(60), rf)
		gone := brokers[r.IntN(n)]
		moves, stuck := planDrain(current, brokers, gone)
		if len(stuck) != 0 {
			t.Fatalf("seed %d: stuck %v with %d brokers for rf %d", seed, stuck, n, rf)
		}
		after := applyMoves(current, moves)
		checkLists(t, after, rf)
		replicas, _ := after.replicaCounts(brokers)
		if replicas[gone] != 0 {
			t.Fatalf("seed %d: broker %d still holds %d replicas", seed, gone, replicas[gone])
		}
		for tp := range moves {
			if !slices.Contains(current[tp], gone) {
				t.Fatalf("seed %d: %v moved without holding %d", seed, tp, gone)
			}
		}
	}
	// With as many brokers as replicas nothing can take the place.
	_, stuck := planDrain(assignment{{topic: "t"}: {1, 2}}, []int32{1, 2}, 1)
	if len(stuck) != 1 {
		t.Fatalf("stuck %v, want the one partition", stuck)
	}
}

// Property: a rebalance onto brokers (one of them new and empty) ends
// with replica counts within one of each other and first-replica counts
// within two, on the listed brokers only.
func TestPlanRebalanceProperty(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		n := 3 + r.IntN(3)
		old := make([]int32, n)
		for i := range old {
			old[i] = int32(i + 1)
		}
		rf := 1 + r.IntN(3)
		current := randomAssignment(r, old, 1+r.IntN(80), rf)
		brokers := append(slices.Clone(old), int32(n+1)) // a broker joined
		if r.IntN(3) == 0 {
			brokers = brokers[1:] // and the first is retired
		}
		after := applyMoves(current, planRebalance(current, brokers))
		checkLists(t, after, rf)
		replicas, preferred := after.replicaCounts(brokers)
		for b, count := range replicas {
			if !slices.Contains(brokers, b) && count > 0 {
				t.Fatalf("seed %d: broker %d not listed holds %d", seed, b, count)
			}
		}
		most, least := extremes(brokers, replicas)
		if replicas[most]-replicas[least] > 1 {
			t.Fatalf("seed %d: replicas %v", seed, replicas)
		}
		most, least = extremes(brokers, preferred)
		if preferred[most]-preferred[least] > 2 {
			t.Fatalf("seed %d: first replicas %v", seed, preferred)
		}
	}
}
