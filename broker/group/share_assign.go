package group

import "slices"

// targetAssignment computes every member's partitions as Kafka's simple
// share assignor does, sticking to the previous target:
//
//   - Each topic's partitions are shared by sharing = ceil(subscribers /
//     partitions) members each (1 when there are at least as many
//     partitions as subscribers), so every subscriber has work.
//   - The sharing*partitions slots are divided among the subscribers in
//     member-id order by a cumulative ceiling: subscriber i gets
//     ceil((i+1)*slots/n) - ceil(i*slots/n) of them.
//   - A member keeps the partitions it had in previous, up to its count
//     and while the partition has room; the slots left go, partition by
//     partition, round robin to the members still short that do not hold
//     that partition yet (when all of them hold it, one other member
//     swaps to it to make room, so every count is met).
//
// Keeping what members had matters more here than for a consumer group:
// a share consumer that loses a partition gives back the records it had
// fetched from it and not yet handed out, and each such release counts
// toward the records' delivery limit.
func (sg *shareGroup) targetAssignment(topics []subscribedTopic, previous map[string]partitions) map[string]partitions {
	ids := sg.sortedMemberIDs()
	target := make(map[string]partitions, len(ids))
	for _, id := range ids {
		target[id] = partitions{}
	}
	for _, topic := range topics {
		var subscribers []string
		for _, id := range ids {
			if _, ok := slices.BinarySearch(sg.members[id].subscribed, topic.name); ok {
				subscribers = append(subscribers, id)
			}
		}
		if len(subscribers) == 0 || topic.partitions <= 0 {
			continue
		}
		assignShareTopic(topic, subscribers, previous, target)
	}
	return target
}

// assignShareTopic assigns one topic's partitions to its subscribers
// (sorted) into target; see targetAssignment.
func assignShareTopic(topic subscribedTopic, subscribers []string, previous, target map[string]partitions) {
	n, count := len(subscribers), int(topic.partitions)
	sharing := (n + count - 1) / count
	slots := sharing * count
	want := make(map[string]int, n)
	for i, id := range subscribers {
		want[id] = ceilDiv((i+1)*slots, n) - ceilDiv(i*slots, n)
	}
	holders := make([]int, count)
	have := make(map[string]int, n)
	for _, id := range subscribers {
		for _, p := range previous[id][topic.id] {
			if int(p) >= count || have[id] >= want[id] || holders[p] >= sharing {
				continue
			}
			target[id].add(topic.id, p)
			holders[p]++
			have[id]++
		}
	}
	var short []string
	for _, id := range subscribers {
		if have[id] < want[id] {
			short = append(short, id)
		}
	}
	// Fill the free slots, partition by partition, round robin over the
	// members still short. The slots and the shortfalls add up to the
	// same number, so a member is short while a slot is free.
	next := 0
	give := func(i int, id string, p int32) {
		target[id].add(topic.id, p)
		holders[p]++
		have[id]++
		if have[id] >= want[id] {
			short = slices.Delete(short, i, i+1)
			next = i
		} else {
			next = i + 1
		}
		if len(short) > 0 {
			next %= len(short)
		}
	}
	for p := int32(0); p < topic.partitions && len(short) > 0; p++ {
		for holders[p] < sharing && len(short) > 0 {
			placed := false
			for tried := 0; tried < len(short); tried++ {
				i := (next + tried) % len(short)
				if id := short[i]; !target[id].has(topic.id, p) {
					give(i, id, p)
					placed = true
					break
				}
			}
			if placed {
				continue
			}
			// Every member still short holds p. Take one, m: it lacks
			// some partition q (it is short of a count no larger than
			// the partitions). If q has room, m takes it (p's slot waits
			// for the next member). Otherwise q has more holders than p,
			// so one of them, x, does not hold p: x moves from q to p
			// and m takes q.
			i := next % len(short)
			m := short[i]
			q := int32(0)
			for target[m].has(topic.id, q) {
				q++
			}
			if holders[q] >= sharing {
				for _, x := range subscribers {
					if target[x].has(topic.id, q) && !target[x].has(topic.id, p) {
						target[x][topic.id] = slices.DeleteFunc(target[x][topic.id], func(v int32) bool { return v == q })
						target[x].add(topic.id, p)
						holders[p]++
						holders[q]--
						break
					}
				}
			}
			give(i, m, q)
		}
	}
}

// ceilDiv is ceil(a/b) for a >= 0, b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }
