package group

import (
	"encoding/binary"
	"slices"
)

// DescribeConsumerGroup reports a consumer group for ConsumerGroupDescribe:
// its state, epochs, assignor and members with their current and target
// assignments. An unknown group, or a classic one, is ErrGroupNotFound.
func (c *Coordinator) DescribeConsumerGroup(groupID string) (ConsumerGroupDescription, error) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return ConsumerGroupDescription{}, groupError(groupID, c.refusal())
		}
		return ConsumerGroupDescription{}, groupError(groupID, ErrGroupNotFound)
	}
	defer g.mu.Unlock()
	cg := g.consumer
	if cg == nil {
		return ConsumerGroupDescription{}, groupError(groupID, ErrGroupNotFound)
	}
	described := ConsumerGroupDescription{
		State:           cg.state(),
		Epoch:           cg.groupEpoch,
		AssignmentEpoch: cg.assignmentEpoch,
		AssignorName:    cg.assignorName(),
	}
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		member := ConsumerMemberDescription{
			MemberID:             id,
			InstanceID:           m.instanceID,
			RackID:               m.rackID,
			MemberEpoch:          m.memberEpoch,
			ClientID:             m.clientID,
			ClientHost:           m.clientHost,
			SubscribedTopicNames: slices.Clone(m.subscribedTopics),
			Assignment:           m.assigned.list(),
			TargetAssignment:     m.target.list(),
		}
		if m.regex != "" {
			regex := m.regex
			member.SubscribedTopicRegex = &regex
		}
		described.Members = append(described.Members, member)
	}
	return described, nil
}

// classicDescription is a consumer group as DescribeGroups reports it (as
// Kafka does): protocol type "consumer", the assignor as the protocol,
// and each member's subscription and assignment in the classic consumer
// protocol's encoding (version 0, topics by name).
func (cg *consumerGroup) classicDescription(names func([16]byte) (string, bool)) GroupDescription {
	described := GroupDescription{State: cg.state(), ProtocolType: consumerProtocolType, Protocol: cg.assignorName()}
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		described.Members = append(described.Members, MemberDescription{
			MemberID:   id,
			InstanceID: m.instanceID,
			ClientID:   m.clientID,
			ClientHost: m.clientHost,
			Metadata:   encodeSubscriptionV0(m.subscribedTopics),
			Assignment: encodeAssignmentV0(m.assigned, names),
		})
	}
	return described
}

// encodeSubscriptionV0 is ConsumerProtocolSubscription v0: int16 version,
// int32 topic count, strings, null user data.
func encodeSubscriptionV0(topics []string) []byte {
	out := binary.BigEndian.AppendUint16(nil, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(len(topics)))
	for _, topic := range topics {
		out = appendString(out, topic)
	}
	return binary.BigEndian.AppendUint32(out, 0xffffffff)
}

// encodeAssignmentV0 is ConsumerProtocolAssignment v0: int16 version,
// int32 topic count, per topic a string and int32 partitions, null user
// data. Topics whose id no longer resolves are left out.
func encodeAssignmentV0(set partitions, names func([16]byte) (string, bool)) []byte {
	type named struct {
		name       string
		partitions []int32
	}
	var topics []named
	for _, topic := range set.list() {
		if name, ok := names(topic.TopicID); ok {
			topics = append(topics, named{name, topic.Partitions})
		}
	}
	out := binary.BigEndian.AppendUint16(nil, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(len(topics)))
	for _, topic := range topics {
		out = appendString(out, topic.name)
		out = binary.BigEndian.AppendUint32(out, uint32(len(topic.partitions)))
		for _, partition := range topic.partitions {
			out = binary.BigEndian.AppendUint32(out, uint32(partition))
		}
	}
	return binary.BigEndian.AppendUint32(out, 0xffffffff)
}
