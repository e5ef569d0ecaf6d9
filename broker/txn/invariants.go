package txn

import (
	"slices"

	"github.com/exactly-eos/exactly/internal/invariants"
)

// checkPublished asserts, in builds with the invariants tag, the
// invariants Metadata's field comments state, on every value the
// coordinator installs (publish): a producer id is set; the participants
// and groups are sorted and unique; an open transaction (Ongoing or
// Prepare*) has a start time and lists the __consumer_offsets partition of
// each of its groups; a closed one (Empty, Complete*) has no participants,
// no groups and no start time; a pending producer id rotation exists only
// in Prepare*. Without the tag it compiles to nothing.
func (c *Coordinator) checkPublished(m *Metadata) {
	if !invariants.Enabled {
		return
	}
	id := m.TransactionalID
	invariants.Check(m.ProducerID >= 0, "transactional id %q: published producer id %d", id, m.ProducerID)
	invariants.Check(sortedUniquePartitions(m.Partitions), "transactional id %q: participants %v not sorted and unique", id, m.Partitions)
	invariants.Check(slices.IsSorted(m.Groups) && len(slices.Compact(slices.Clone(m.Groups))) == len(m.Groups),
		"transactional id %q: groups %v not sorted and unique", id, m.Groups)
	switch m.State {
	case StateOngoing, StatePrepareCommit, StatePrepareAbort:
		invariants.Check(m.StartTime != noTimestamp, "transactional id %q: %s without a start time", id, m.State)
		for _, group := range m.Groups {
			offsets := c.OffsetsPartition(group)
			invariants.Check(slices.Contains(m.Partitions, offsets),
				"transactional id %q: group %q in the transaction but its offsets partition %s is not a participant", id, group, offsets)
		}
	case StateEmpty, StateCompleteCommit, StateCompleteAbort:
		invariants.Check(len(m.Partitions) == 0 && len(m.Groups) == 0 && m.StartTime == noTimestamp,
			"transactional id %q: %s with participants %v, groups %v, start time %d", id, m.State, m.Partitions, m.Groups, m.StartTime)
	}
	if m.NextProducerID != noProducerID {
		invariants.Check(m.State.preparing(), "transactional id %q: next producer id %d pending in %s", id, m.NextProducerID, m.State)
	}
}

// sortedUniquePartitions reports whether partitions are strictly
// increasing in compareTopicPartitions' order.
func sortedUniquePartitions(partitions []TopicPartition) bool {
	for i := 1; i < len(partitions); i++ {
		if compareTopicPartitions(partitions[i-1], partitions[i]) >= 0 {
			return false
		}
	}
	return true
}
