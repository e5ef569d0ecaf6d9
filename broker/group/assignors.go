package group

import (
	"slices"
	"strings"
)

// This file holds the server-side assignors of the consumer group
// protocol, by Kafka's names: uniform (the default) spreads the
// subscribed partitions evenly and sticks to the previous target where it
// can; range gives each member a contiguous range of each topic it
// subscribes to. Both are deterministic functions of their input.

// subscribedTopic is one topic some member subscribes to, as it exists.
type subscribedTopic struct {
	name       string
	id         [16]byte
	partitions int32
}

// assignmentInput is what an assignor works on: members in a fixed order,
// each with its subscription and its previous target, and the subscribed
// topics sorted by name.
type assignmentInput struct {
	members []*consumerMember
	topics  []subscribedTopic
}

// assign computes the target assignment with the named assignor; the
// result has an entry (possibly empty) for every member.
func assign(assignor string, input assignmentInput) map[string]partitions {
	if assignor == rangeAssignor {
		return assignRange(input)
	}
	return assignUniform(input)
}

// assignRange gives, topic by topic, the members subscribed to it (static
// members first by instance id, then the others by member id, as Kafka
// orders them) contiguous ranges; the first partitions%members members get
// one more partition.
func assignRange(input assignmentInput) map[string]partitions {
	members := slices.Clone(input.members)
	slices.SortStableFunc(members, func(a, b *consumerMember) int {
		switch {
		case a.instanceID != nil && b.instanceID != nil:
			return strings.Compare(*a.instanceID, *b.instanceID)
		case a.instanceID != nil:
			return -1
		case b.instanceID != nil:
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	out := emptyTargets(members)
	for _, topic := range input.topics {
		var subscribers []*consumerMember
		for _, m := range members {
			if m.subscribes(topic.name) {
				subscribers = append(subscribers, m)
			}
		}
		if len(subscribers) == 0 {
			continue
		}
		quota, extra := int(topic.partitions)/len(subscribers), int(topic.partitions)%len(subscribers)
		next := int32(0)
		for i, m := range subscribers {
			share := quota
			if i < extra {
				share++
			}
			for range share {
				out[m.id].add(topic.id, next)
				next++
			}
		}
	}
	return out
}

// assignUniform balances the subscribed partitions over the members: a
// member keeps the partitions of its previous target that still exist and
// that it still subscribes to, up to its fair share; the rest go one by
// one (in topic and partition order) to the subscribed member holding the
// fewest, ties to the first in member id order. With equal subscriptions
// every member ends with ⌊n/m⌋ or ⌈n/m⌉ partitions.
func assignUniform(input assignmentInput) map[string]partitions {
	members := slices.Clone(input.members)
	slices.SortFunc(members, func(a, b *consumerMember) int { return strings.Compare(a.id, b.id) })
	out := emptyTargets(members)
	if len(members) == 0 {
		return out
	}
	exists := make(map[[16]byte]subscribedTopic, len(input.topics))
	total := 0
	for _, topic := range input.topics {
		exists[topic.id] = topic
		total += int(topic.partitions)
	}
	// Step 1: keep what is still valid, up to the fair share (the first
	// total%members members by previous size may keep one more).
	slices.SortStableFunc(members, func(a, b *consumerMember) int { return b.target.count() - a.target.count() })
	quota, extra := total/len(members), total%len(members)
	taken := make(map[[16]byte]map[int32]bool)
	counts := make(map[string]int, len(members))
	for i, m := range members {
		allowed := quota
		if i < extra {
			allowed++
		}
		for _, topic := range m.target.list() {
			info, ok := exists[topic.TopicID]
			if !ok || !m.subscribes(info.name) {
				continue
			}
			for _, partition := range topic.Partitions {
				if partition >= info.partitions || counts[m.id] >= allowed || taken[topic.TopicID][partition] {
					continue
				}
				markTaken(taken, topic.TopicID, partition)
				out[m.id].add(topic.TopicID, partition)
				counts[m.id]++
			}
		}
	}
	slices.SortFunc(members, func(a, b *consumerMember) int { return strings.Compare(a.id, b.id) })
	// Step 2: hand out the rest to the least loaded subscriber.
	for _, topic := range input.topics {
		for partition := range topic.partitions {
			if taken[topic.id][partition] {
				continue
			}
			var best *consumerMember
			for _, m := range members {
				if m.subscribes(topic.name) && (best == nil || counts[m.id] < counts[best.id]) {
					best = m
				}
			}
			if best == nil {
				break // nobody subscribes to this topic
			}
			markTaken(taken, topic.id, partition)
			out[best.id].add(topic.id, partition)
			counts[best.id]++
		}
	}
	return out
}

func markTaken(taken map[[16]byte]map[int32]bool, id [16]byte, partition int32) {
	if taken[id] == nil {
		taken[id] = make(map[int32]bool)
	}
	taken[id][partition] = true
}

func emptyTargets(members []*consumerMember) map[string]partitions {
	out := make(map[string]partitions, len(members))
	for _, m := range members {
		out[m.id] = partitions{}
	}
	return out
}
