package main

import (
	"cmp"
	"slices"
)

// Replica placement for `exactly cluster drain` and `exactly cluster
// rebalance`: pure functions from the current assignment to a target one,
// moving as few replicas as they can. A replica that moves keeps its
// position in the partition's list, so a partition's preferred leader (the
// first replica) changes only where that broker leaves.

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

func (a topicPartition) compare(b topicPartition) int {
	return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

// assignment is every partition's replica list, in preference order.
type assignment map[topicPartition][]int32

// sortedPartitions returns the partitions in topic, partition order.
func (a assignment) sortedPartitions() []topicPartition {
	var out []topicPartition
	for tp := range a {
		out = append(out, tp)
	}
	slices.SortFunc(out, topicPartition.compare)
	return out
}

// replicaCounts is how many replicas (and how many first replicas) each
// of brokers holds in a.
func (a assignment) replicaCounts(brokers []int32) (replicas, preferred map[int32]int) {
	replicas, preferred = map[int32]int{}, map[int32]int{}
	for _, b := range brokers {
		replicas[b], preferred[b] = 0, 0
	}
	for _, list := range a {
		for i, b := range list {
			replicas[b]++
			if i == 0 {
				preferred[b]++
			}
		}
	}
	return replicas, preferred
}

// leastLoaded returns the broker of candidates with the fewest replicas
// (then the fewest first replicas, then the lowest id), or -1.
func leastLoaded(candidates []int32, replicas, preferred map[int32]int) int32 {
	best := int32(-1)
	for _, b := range candidates {
		if best < 0 || replicas[b] < replicas[best] ||
			replicas[b] == replicas[best] && preferred[b] < preferred[best] {
			best = b
		}
	}
	return best
}

// planDrain returns the partitions that must move for broker gone to hold
// no replica, with their new replica lists: gone is replaced, in place, by
// the least loaded of brokers that does not hold the partition yet. A
// partition with no such broker (fewer brokers than replicas) is left out
// and returned in stuck.
func planDrain(current assignment, brokers []int32, gone int32) (moves assignment, stuck []topicPartition) {
	live := slices.DeleteFunc(slices.Clone(brokers), func(b int32) bool { return b == gone })
	replicas, preferred := current.replicaCounts(live)
	moves = assignment{}
	for _, tp := range current.sortedPartitions() {
		list := current[tp]
		at := slices.Index(list, gone)
		if at < 0 {
			continue
		}
		candidates := slices.DeleteFunc(slices.Clone(live), func(b int32) bool { return slices.Contains(list, b) })
		to := leastLoaded(candidates, replicas, preferred)
		if to < 0 {
			stuck = append(stuck, tp)
			continue
		}
		next := slices.Clone(list)
		next[at] = to
		replicas[to]++
		if at == 0 {
			preferred[to]++
		}
		moves[tp] = next
	}
	return moves, stuck
}

// planRebalance returns the partitions whose replica lists change so that
// every broker of brokers holds a nearly equal number of replicas (within
// one) and of first replicas (preferred leaders: within two, since only
// swaps inside a partition's list are tried), with their new lists.
// Replicas on brokers not listed move onto listed ones first.
func planRebalance(current assignment, brokers []int32) assignment {
	next := assignment{}
	for tp, list := range current {
		next[tp] = slices.Clone(list)
	}
	for _, b := range slices.Sorted(func(yield func(int32) bool) {
		seen := map[int32]bool{}
		for _, list := range current {
			for _, r := range list {
				if !seen[r] && !slices.Contains(brokers, r) {
					seen[r] = true
					if !yield(r) {
						return
					}
				}
			}
		}
	}) {
		moves, _ := planDrain(next, brokers, b)
		for tp, list := range moves {
			next[tp] = list
		}
	}
	order := next.sortedPartitions()
	// Replicas: move one from the most to the least loaded broker until
	// they differ by at most one (each move narrows the gap, so this ends).
	for range len(order) * len(brokers) {
		replicas, _ := next.replicaCounts(brokers)
		most, least := extremes(brokers, replicas)
		if replicas[most]-replicas[least] <= 1 {
			break
		}
		moved := false
		for _, tp := range order {
			list := next[tp]
			at := slices.Index(list, most)
			if at >= 0 && !slices.Contains(list, least) {
				list[at] = least
				moved = true
				break
			}
		}
		if !moved {
			break
		}
	}
	// Preferred leaders: swap a partition's first replica b with another
	// of its replicas c when b leads at least two more partitions than c,
	// until no such swap is left (each swap lowers the sum of squares of
	// the counts, so this ends).
	for range len(order) * len(brokers) {
		_, preferred := next.replicaCounts(brokers)
		moved := false
		for _, tp := range order {
			list := next[tp]
			for at := 1; at < len(list) && !moved; at++ {
				if slices.Contains(brokers, list[0]) && preferred[list[0]] >= preferred[list[at]]+2 {
					list[0], list[at] = list[at], list[0]
					moved = true
				}
			}
			if moved {
				break
			}
		}
		if !moved {
			break
		}
	}
	changed := assignment{}
	for tp, list := range next {
		if !slices.Equal(list, current[tp]) {
			changed[tp] = list
		}
	}
	return changed
}

// extremes returns the brokers with the most and the fewest of count
// (ties: the lowest id).
func extremes(brokers []int32, count map[int32]int) (most, least int32) {
	most, least = brokers[0], brokers[0]
	for _, b := range brokers[1:] {
		if count[b] > count[most] {
			most = b
		}
		if count[b] < count[least] {
			least = b
		}
	}
	return most, least
}
