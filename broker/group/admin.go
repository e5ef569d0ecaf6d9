package group

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// classicGroupType is the group type (KIP-848's ListGroups v5) of
// groups of the JoinGroup/SyncGroup protocol.
const classicGroupType = "classic"

// DescribeGroup reports a group's state, protocol and members. Members
// carry their metadata and assignment only while the group is Stable (as
// Kafka). An unknown group is ErrGroupNotFound.
func (c *Coordinator) DescribeGroup(groupID string) (GroupDescription, error) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return GroupDescription{}, groupError(groupID, c.refusal())
		}
		return GroupDescription{}, groupError(groupID, ErrGroupNotFound)
	}
	defer g.mu.Unlock()
	if g.consumer != nil {
		return g.consumer.classicDescription(c.topicName), nil
	}
	if g.share != nil {
		return GroupDescription{}, fmt.Errorf("group %q is a share group, not a classic group: %w", groupID, ErrGroupNotFound)
	}
	described := GroupDescription{State: g.state.String(), ProtocolType: g.protocolType}
	if g.state == stateStable {
		described.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		member := MemberDescription{MemberID: id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if g.state == stateStable {
			member.Metadata = m.protocolMetadata(g.protocol)
			member.Assignment = m.assignment
		}
		described.Members = append(described.Members, member)
	}
	return described, nil
}

// ListGroups lists the groups matching filter, sorted by group id.
func (c *Coordinator) ListGroups(filter ListFilter) ([]GroupListing, error) {
	if c.isClosed() {
		return nil, c.refusal()
	}
	matches := func(filter []string, value string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(wanted string) bool { return strings.EqualFold(wanted, value) })
	}
	var listed []GroupListing
	for _, g := range c.snapshotGroups() {
		g.mu.Lock()
		state, protocolType, groupType := g.state.String(), g.protocolType, classicGroupType
		if g.consumer != nil {
			state, protocolType, groupType = g.consumer.state(), consumerProtocolType, consumerGroupType
		}
		if g.share != nil {
			state, protocolType, groupType = g.share.state(), shareGroupType, shareGroupType
		}
		dead := g.state == stateDead
		g.mu.Unlock()
		if dead || !matches(filter.States, state) || !matches(filter.Types, groupType) {
			continue
		}
		listed = append(listed, GroupListing{Group: g.id, State: state, ProtocolType: protocolType, Type: groupType})
	}
	slices.SortFunc(listed, func(a, b GroupListing) int { return strings.Compare(a.Group, b.Group) })
	return listed, nil
}

// DeleteGroups deletes empty groups, writing tombstones for each group's
// offsets and metadata. It returns one error per group (nil: deleted): a
// group with members is ErrNonEmptyGroup, an unknown one ErrGroupNotFound.
func (c *Coordinator) DeleteGroups(ctx context.Context, groupIDs []string) []error {
	errs := make([]error, len(groupIDs))
	for i, groupID := range groupIDs {
		errs[i] = c.deleteGroup(ctx, groupID)
	}
	return errs
}

func (c *Coordinator) deleteGroup(ctx context.Context, groupID string) error {
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return groupError(groupID, c.refusal())
		}
		return groupError(groupID, ErrGroupNotFound)
	}
	defer g.mu.Unlock()
	if g.state != stateEmpty || g.hasConsumerMembers() || (g.share != nil && len(g.share.members) > 0) {
		return groupError(groupID, ErrNonEmptyGroup)
	}
	now := c.cfg.Now()
	records := []StoreRecord{{Key: encodeGroupKey(g.id)}}
	if g.consumer != nil {
		records = append(records, consumerGroupTombstones(g.id)...)
	}
	if g.share != nil {
		for key := range g.share.states {
			records = append(records, StoreRecord{Key: encodeShareStateKey(g.id, key)})
		}
		records = append(records, StoreRecord{Key: encodeConsumerKey(shareGroupMetadataKeyVersion, g.id, nil)})
	}
	for key := range g.offsets {
		records = append(records, StoreRecord{Key: encodeOffsetKey(offsetKey{Group: g.id, Topic: key.Topic, Partition: key.Partition})})
	}
	if err := c.appendRecords(ctx, g.partition, now, records); err != nil {
		return storeError(groupID, err)
	}
	clear(g.offsets)
	c.removeGroup(g)
	return nil
}

// DeleteOffsets deletes a group's committed offsets. It returns an error
// for the group as a whole (unknown: ErrGroupNotFound; a non-consumer
// group with members: ErrNonEmptyGroup; a store failure), or one per
// requested partition, indexed like topics: offsets of topics the group's
// consumers still subscribe to are ErrSubscribedTopic.
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, topics []DeleteOffsetsTopic) ([][]error, error) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return nil, groupError(groupID, c.refusal())
		}
		return nil, groupError(groupID, ErrGroupNotFound)
	}
	defer g.mu.Unlock()
	if len(g.members) > 0 && g.protocolType != consumerProtocolType && g.consumer == nil {
		return nil, groupError(groupID, ErrNonEmptyGroup)
	}
	subscribed := g.subscribedTopics()
	var records []StoreRecord
	var deleted []topicPartition
	errs := make([][]error, len(topics))
	for i, topic := range topics {
		errs[i] = make([]error, len(topic.Partitions))
		for j, partition := range topic.Partitions {
			key := topicPartition{Topic: topic.Name, Partition: partition}
			if _, ok := subscribed[topic.Name]; ok {
				errs[i][j] = fmt.Errorf("group %q topic %q: %w", groupID, topic.Name, ErrSubscribedTopic)
			} else if _, ok := g.offsets[key]; ok {
				deleted = append(deleted, key)
				records = append(records, StoreRecord{Key: encodeOffsetKey(offsetKey{Group: g.id, Topic: key.Topic, Partition: key.Partition})})
			}
		}
	}
	if len(records) > 0 {
		if err := c.appendRecords(ctx, g.partition, c.cfg.Now(), records); err != nil {
			return nil, storeError(groupID, err)
		}
	}
	for _, key := range deleted {
		delete(g.offsets, key)
	}
	return errs, nil
}

// subscribedTopics parses the consumer protocol subscriptions of the
// members (their metadata for the selected protocol, or their first one
// while none is selected). Unparseable metadata subscribes to nothing.
func (g *group) subscribedTopics() map[string]struct{} {
	topics := make(map[string]struct{})
	if g.consumer != nil {
		subscribed, _ := g.subscribedTopicMetadata(g.consumer)
		for _, topic := range subscribed {
			topics[topic.name] = struct{}{}
		}
		return topics
	}
	if g.protocolType != consumerProtocolType {
		return topics
	}
	for _, m := range g.members {
		metadata := m.protocolMetadata(g.protocol)
		if metadata == nil && len(m.protocols) > 0 {
			metadata = m.protocols[0].Metadata
		}
		subscription, err := subscriptionTopics(metadata)
		if err != nil {
			continue
		}
		for _, topic := range subscription {
			topics[topic] = struct{}{}
		}
	}
	return topics
}

// expireOffsets deletes offsets older than offsets.retention: for a group
// with a protocol, counted from when it became Empty; for a simple group
// (offsets only), from each offset's commit time. Groups with members keep
// their offsets. An Empty group left without offsets is removed.
func (c *Coordinator) expireOffsets(ctx context.Context, now time.Time) {
	retention := c.cfg.OffsetsRetention
	for _, g := range c.snapshotGroups() {
		g.mu.Lock()
		if g.state != stateEmpty || g.hasConsumerMembers() {
			g.mu.Unlock()
			continue
		}
		var records []StoreRecord
		var expired []topicPartition
		for key, entry := range g.offsets {
			base := time.UnixMilli(entry.value.CommitTimestamp)
			if g.protocolType != "" {
				base = g.stateSince
			}
			if !now.Before(base.Add(retention)) {
				expired = append(expired, key)
				records = append(records, StoreRecord{Key: encodeOffsetKey(offsetKey{Group: g.id, Topic: key.Topic, Partition: key.Partition})})
			}
		}
		removeGroup := len(expired) == len(g.offsets) && len(g.pendingTxn) == 0 && len(g.pendingMembers) == 0
		if removeGroup {
			records = append(records, StoreRecord{Key: encodeGroupKey(g.id)})
			if g.consumer != nil {
				records = append(records, consumerGroupTombstones(g.id)...)
			}
		}
		if err := c.appendRecords(ctx, g.partition, now, records); err == nil {
			for _, key := range expired {
				delete(g.offsets, key)
			}
			if removeGroup {
				c.removeGroup(g)
			}
		}
		g.mu.Unlock()
	}
}
