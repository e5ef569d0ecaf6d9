package group

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file computes target assignments and reconciles members toward
// them (Kafka's CurrentAssignmentBuilder), and persists each operation's
// records. Everything runs with the group's mu held.

// consumerWrites collects the records one operation must persist, in
// order, and what the heartbeat's answer needs to know.
type consumerWrites struct {
	group   string
	records []StoreRecord
	// epoch: the group epoch changed (its record is written at flush).
	epoch bool
	// assignmentChanged: the heartbeating member's assigned set changed.
	assignmentChanged bool
}

func (w *consumerWrites) member(m *consumerMember) {
	w.records = append(w.records, consumerMemberRecord(w.group, m))
}

func (w *consumerWrites) target(m *consumerMember) {
	w.records = append(w.records, consumerTargetRecord(w.group, m))
}

func (w *consumerWrites) current(m *consumerMember) {
	w.records = append(w.records, consumerCurrentRecord(w.group, m))
}

func (w *consumerWrites) remove(memberID string) {
	w.records = append(w.records, consumerMemberTombstones(w.group, memberID)...)
}

// flushConsumer appends the operation's records (after any that failed
// before) as one batch.
func (g *group) flushConsumer(ctx context.Context, cg *consumerGroup, w *consumerWrites, now time.Time) error {
	records := append(cg.unflushed, w.records...)
	if w.epoch {
		records = append(records, consumerEpochRecord(g.id, cg.groupEpoch))
	}
	if len(records) == 0 {
		return nil
	}
	if err := g.coordinator.appendRecords(ctx, g.partition, now, records); err != nil {
		cg.unflushed = records
		return storeError(g.id, err)
	}
	cg.unflushed = nil
	return nil
}

// refreshTarget recomputes the target assignment when the group epoch is
// ahead of the assignment epoch, bumping the group epoch first if a
// subscription changed or the subscribed topics did (created, deleted,
// grown).
func (g *group) refreshTarget(cg *consumerGroup, w *consumerWrites, subscriptionChanged bool) {
	topics, signature := g.subscribedTopicMetadata(cg)
	if (subscriptionChanged || signature != cg.metadata) && cg.groupEpoch == cg.assignmentEpoch {
		cg.groupEpoch++
		w.epoch = true
	}
	if cg.groupEpoch == cg.assignmentEpoch {
		return
	}
	members := make([]*consumerMember, 0, len(cg.members))
	for _, id := range cg.sortedMemberIDs() {
		members = append(members, cg.members[id])
	}
	targets := assign(cg.assignorName(), assignmentInput{members: members, topics: topics})
	for _, m := range members {
		if target := targets[m.id]; !target.equal(m.target) {
			m.target = target
			w.target(m)
		}
	}
	cg.assignmentEpoch = cg.groupEpoch
	cg.metadata = signature
	w.records = append(w.records, consumerAssignmentEpochRecord(g.id, cg.assignmentEpoch))
	w.epoch = true
}

// subscribedTopicMetadata resolves every topic some member subscribes to
// (by name or regex) and returns them sorted by name, with a signature
// that changes when any of them appears, disappears, is recreated or
// grows.
func (g *group) subscribedTopicMetadata(cg *consumerGroup) ([]subscribedTopic, string) {
	catalog := g.coordinator.cfg.Catalog
	if catalog == nil {
		return nil, ""
	}
	names := map[string]bool{}
	hasRegex := false
	for _, m := range cg.members {
		for _, topic := range m.subscribedTopics {
			names[topic] = true
		}
		hasRegex = hasRegex || m.pattern != nil
	}
	if hasRegex {
		for _, topic := range catalog.TopicNames() {
			for _, m := range cg.members {
				if m.pattern != nil && m.pattern.MatchString(topic) {
					names[topic] = true
					break
				}
			}
		}
	}
	return resolveTopics(catalog, names)
}

// resolveTopics looks the named topics up in catalog and returns those
// that exist, sorted by name, with their signature (names, ids and
// partition counts).
func resolveTopics(catalog TopicCatalog, names map[string]bool) ([]subscribedTopic, string) {
	var topics []subscribedTopic
	var signature strings.Builder
	for _, name := range slicesSorted(names) {
		id, count, ok := catalog.TopicPartitions(name)
		if !ok || count <= 0 {
			continue
		}
		topics = append(topics, subscribedTopic{name: name, id: id, partitions: count})
		fmt.Fprintf(&signature, "%s/%x/%d;", name, id, count)
	}
	return topics, signature.String()
}

func slicesSorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// reconcile advances m one step toward its target at the assignment
// epoch, given the partitions it reports owning (nil: not reported, so it
// is taken to still own everything). It reports whether the member's
// epoch, state or partitions changed.
func (cg *consumerGroup) reconcile(m *consumerMember, owned partitions) bool {
	if m.memberEpoch == StaticLeaveEpoch {
		return false
	}
	before := [3]int32{m.memberEpoch, m.previousEpoch, int32(m.state)}
	assigned, pending := m.assigned.clone(), m.pendingRevocation.clone()
	switch m.state {
	case memberUnrevokedPartitions:
		if ownsAny(owned, m.pendingRevocation) {
			return false // still revoking
		}
		cg.computeNext(m, owned)
	case memberUnreleasedPartitions:
		cg.computeNext(m, owned)
	default:
		if m.memberEpoch == cg.assignmentEpoch {
			return false
		}
		cg.computeNext(m, owned)
	}
	return before != [3]int32{m.memberEpoch, m.previousEpoch, int32(m.state)} ||
		!assigned.equal(m.assigned) || !pending.equal(m.pendingRevocation)
}

// ownsAny reports whether the member (owned nil: unknown, so yes) still
// owns any partition of set.
func ownsAny(owned, set partitions) bool {
	if owned == nil {
		return set.count() > 0
	}
	for id, list := range set {
		for _, partition := range list {
			if owned.has(id, partition) {
				return true
			}
		}
	}
	return false
}

// computeNext is Kafka's CurrentAssignmentBuilder.computeNextAssignment:
// the member keeps assigned ∩ target; if it still owns partitions outside
// its target it must revoke them first (its epoch stays, so it can still
// commit their offsets); otherwise it moves to the assignment epoch and
// gets the partitions of its target that no other member holds, waiting
// (UNRELEASED_PARTITIONS) for the rest.
func (cg *consumerGroup) computeNext(m *consumerMember, owned partitions) {
	keep, revoke, gain := partitions{}, partitions{}, partitions{}
	unreleased := false
	for id, list := range m.assigned {
		for _, partition := range list {
			if m.target.has(id, partition) {
				keep.add(id, partition)
			} else {
				revoke.add(id, partition)
			}
		}
	}
	for id, list := range m.target {
		for _, partition := range list {
			switch {
			case keep.has(id, partition):
			case cg.holder(id, partition, m.id) != "":
				unreleased = true
			default:
				gain.add(id, partition)
			}
		}
	}
	if revoke.count() > 0 && ownsAny(owned, revoke) {
		m.state, m.assigned, m.pendingRevocation = memberUnrevokedPartitions, keep, revoke
		return
	}
	for id, list := range gain {
		for _, partition := range list {
			keep.add(id, partition)
		}
	}
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleasedPartitions
	}
	if m.memberEpoch != cg.assignmentEpoch {
		m.previousEpoch, m.memberEpoch = m.memberEpoch, cg.assignmentEpoch
	}
	m.assigned, m.pendingRevocation = keep, partitions{}
}
