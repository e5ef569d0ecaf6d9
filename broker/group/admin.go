package group

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerProtocolType is the protocol type of Kafka consumers; only its
// member metadata is parsed (for OffsetDelete's subscription check).
const consumerProtocolType = "consumer"

// DescribeGroups (key 15), versions 0–6. Members carry their metadata and
// assignment only while the group is Stable (as Kafka). v4+ carry instance
// ids; v3+ authorized operations (-2^31: not requested / not computed);
// v6 answers an unknown group with GROUP_ID_NOT_FOUND and a message, older
// versions with state Dead.
func (c *Coordinator) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = req.Version
	for _, groupID := range req.Groups {
		described := kmsg.NewDescribeGroupsResponseGroup()
		described.Group = groupID
		described.AuthorizedOperations = -2147483648
		c.describeGroup(&described, req.Version)
		resp.Groups = append(resp.Groups, described)
	}
	return resp
}

func (c *Coordinator) describeGroup(described *kmsg.DescribeGroupsResponseGroup, version int16) {
	g := c.lockGroup(described.Group, false)
	if g == nil {
		switch {
		case c.isClosed():
			described.ErrorCode = kerr.NotCoordinator.Code
		case version >= 6:
			described.ErrorCode = kerr.GroupIDNotFound.Code
			message := "group " + described.Group + " not found"
			described.ErrorMessage = &message
		default:
			described.State = stateDead.String()
		}
		return
	}
	defer g.mu.Unlock()
	described.State = g.state.String()
	described.ProtocolType = g.protocolType
	if g.state == stateStable {
		described.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		member := kmsg.DescribeGroupsResponseGroupMember{MemberID: id, ClientID: m.clientID, ClientHost: m.clientHost}
		if version >= 4 {
			member.InstanceID = m.instanceID
		}
		if g.state == stateStable {
			member.ProtocolMetadata = m.protocolMetadata(g.protocol)
			member.MemberAssignment = m.assignment
		}
		described.Members = append(described.Members, member)
	}
}

// ListGroups (key 16), versions 0–5. v4 filters by state
// (case-insensitive) and returns it; v5 filters by type and returns it
// (every group here is "classic").
func (c *Coordinator) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = req.Version
	if c.isClosed() {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	matches := func(filter []string, value string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(wanted string) bool { return strings.EqualFold(wanted, value) })
	}
	for _, g := range c.snapshotGroups() {
		g.mu.Lock()
		state, protocolType := g.state, g.protocolType
		g.mu.Unlock()
		if state == stateDead ||
			(req.Version >= 4 && !matches(req.StatesFilter, state.String())) ||
			(req.Version >= 5 && !matches(req.TypesFilter, "classic")) {
			continue
		}
		listed := kmsg.ListGroupsResponseGroup{Group: g.id, ProtocolType: protocolType}
		if req.Version >= 4 {
			listed.GroupState = state.String()
		}
		if req.Version >= 5 {
			listed.GroupType = "classic"
		}
		resp.Groups = append(resp.Groups, listed)
	}
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp
}

// DeleteGroups (key 42), versions 0–3. A group with members answers
// NON_EMPTY_GROUP; an unknown one GROUP_ID_NOT_FOUND. Deleting writes
// tombstones for the group's offsets and metadata. v3 adds error messages.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = req.Version
	for _, groupID := range req.Groups {
		deleted := kmsg.DeleteGroupsResponseGroup{Group: groupID, ErrorCode: c.deleteGroup(ctx, groupID)}
		if req.Version >= 3 && deleted.ErrorCode != 0 {
			message := kerr.ErrorForCode(deleted.ErrorCode).Error()
			deleted.ErrorMessage = &message
		}
		resp.Groups = append(resp.Groups, deleted)
	}
	return resp
}

func (c *Coordinator) deleteGroup(ctx context.Context, groupID string) int16 {
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return kerr.NotCoordinator.Code
		}
		return kerr.GroupIDNotFound.Code
	}
	defer g.mu.Unlock()
	if g.state != stateEmpty {
		return kerr.NonEmptyGroup.Code
	}
	now := c.cfg.Now()
	records := []StoreRecord{{Key: encodeGroupKey(g.id)}}
	for key := range g.offsets {
		records = append(records, StoreRecord{Key: encodeOffsetKey(offsetKey{Group: g.id, Topic: key.Topic, Partition: key.Partition})})
	}
	if err := c.appendRecords(ctx, g.partition, now, records); err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	clear(g.offsets)
	c.removeGroup(g)
	return 0
}

// OffsetDelete (key 47), version 0. Offsets of topics the group's
// consumers still subscribe to answer GROUP_SUBSCRIBED_TO_TOPIC; a
// non-consumer group with members answers NON_EMPTY_GROUP.
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	g := c.lockGroup(req.Group, false)
	if g == nil {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		if c.isClosed() {
			resp.ErrorCode = kerr.NotCoordinator.Code
		}
		return resp
	}
	defer g.mu.Unlock()
	if len(g.members) > 0 && g.protocolType != consumerProtocolType {
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp
	}
	subscribed := g.subscribedTopics()
	var records []StoreRecord
	var deleted []topicPartition
	for _, topic := range req.Topics {
		responseTopic := kmsg.OffsetDeleteResponseTopic{Topic: topic.Topic}
		for _, partition := range topic.Partitions {
			var code int16
			key := topicPartition{Topic: topic.Topic, Partition: partition.Partition}
			if _, ok := subscribed[topic.Topic]; ok {
				code = kerr.GroupSubscribedToTopic.Code
			} else if _, ok := g.offsets[key]; ok {
				deleted = append(deleted, key)
				records = append(records, StoreRecord{Key: encodeOffsetKey(offsetKey{Group: g.id, Topic: key.Topic, Partition: key.Partition})})
			}
			responseTopic.Partitions = append(responseTopic.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: partition.Partition, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, responseTopic)
	}
	if len(records) > 0 {
		if err := c.appendRecords(ctx, g.partition, c.cfg.Now(), records); err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.Topics = nil
			return resp
		}
	}
	for _, key := range deleted {
		delete(g.offsets, key)
	}
	return resp
}

// subscribedTopics parses the consumer protocol subscriptions of the
// members (their metadata for the selected protocol, or their first one
// while none is selected). Unparseable metadata subscribes to nothing.
func (g *group) subscribedTopics() map[string]struct{} {
	topics := make(map[string]struct{})
	if g.protocolType != consumerProtocolType {
		return topics
	}
	for _, m := range g.members {
		metadata := m.protocolMetadata(g.protocol)
		if metadata == nil && len(m.protocols) > 0 {
			metadata = m.protocols[0].Metadata
		}
		var subscription kmsg.ConsumerMemberMetadata
		if err := subscription.ReadFrom(metadata); err != nil {
			continue
		}
		for _, topic := range subscription.Topics {
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
		if g.state != stateEmpty {
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
