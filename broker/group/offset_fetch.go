package group

import (
	"fmt"
	"slices"
	"strings"
)

// FetchOffsets reads a group's committed offsets: the requested partitions,
// or with req.Topics nil every committed offset of the group, sorted by
// topic and partition. An unknown group or uncommitted partition answers
// offset -1 without error. The error is for the group as a whole.
func (c *Coordinator) FetchOffsets(req FetchRequest) ([]FetchedTopic, error) {
	g := c.lockGroup(req.Group, false)
	if g == nil && c.isClosed() {
		return nil, groupError(req.Group, c.refusal())
	}
	if g != nil {
		defer g.mu.Unlock()
		if err := g.validateConsumerFetch(req.MemberID, req.MemberEpoch); err != nil {
			return nil, err
		}
	}
	if req.Topics == nil {
		if g == nil {
			return nil, nil
		}
		return c.withTopicIDs(g.allOffsets(), req.ByTopicID), nil
	}
	result := make([]FetchedTopic, 0, len(req.Topics))
	for _, topic := range req.Topics {
		name := topic.Name
		if req.ByTopicID {
			name, _ = c.topicName(topic.ID)
		}
		answered := FetchedTopic{Name: name, ID: topic.ID}
		for _, partition := range topic.Partitions {
			fetched := FetchedPartition{Partition: partition, Offset: -1, LeaderEpoch: -1}
			key := topicPartition{Topic: name, Partition: partition}
			switch {
			case req.ByTopicID && name == "":
				fetched.Err = ErrUnknownTopicID
			case g == nil:
			case req.RequireStable && g.hasPendingTxnOffset(key):
				fetched.Err = fmt.Errorf("group %q %s-%d: %w", g.id, name, partition, ErrUnstableOffset)
			default:
				if entry, ok := g.offsets[key]; ok {
					fetched.Offset = entry.value.Offset
					fetched.LeaderEpoch = entry.value.LeaderEpoch
					fetched.Metadata = entry.value.Metadata
				}
			}
			answered.Partitions = append(answered.Partitions, fetched)
		}
		result = append(result, answered)
	}
	return result, nil
}

// withTopicIDs fills in the topics' ids when byID, leaving out topics that
// have none (they cannot be named by id).
func (c *Coordinator) withTopicIDs(topics []FetchedTopic, byID bool) []FetchedTopic {
	if !byID {
		return topics
	}
	kept := topics[:0]
	for _, topic := range topics {
		id, ok := c.topicID(topic.Name)
		if !ok {
			continue
		}
		topic.ID = id
		kept = append(kept, topic)
	}
	return kept
}

// allOffsets returns every committed offset, sorted. Called with g.mu held.
func (g *group) allOffsets() []FetchedTopic {
	keys := make([]topicPartition, 0, len(g.offsets))
	for key := range g.offsets {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b topicPartition) int {
		if order := strings.Compare(a.Topic, b.Topic); order != 0 {
			return order
		}
		return int(a.Partition) - int(b.Partition)
	})
	var result []FetchedTopic
	for _, key := range keys {
		if len(result) == 0 || result[len(result)-1].Name != key.Topic {
			result = append(result, FetchedTopic{Name: key.Topic})
		}
		last := &result[len(result)-1]
		value := g.offsets[key].value
		last.Partitions = append(last.Partitions, FetchedPartition{
			Partition: key.Partition, Offset: value.Offset, LeaderEpoch: value.LeaderEpoch, Metadata: value.Metadata,
		})
	}
	return result
}

func (g *group) hasPendingTxnOffset(key topicPartition) bool {
	for _, offsets := range g.pendingTxn {
		if _, ok := offsets[key]; ok {
			return true
		}
	}
	return false
}
