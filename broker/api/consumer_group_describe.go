package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// ConsumerGroupDescribe v0–1 describes consumer-protocol (KIP-848)
// groups: state, group and assignment epochs, assignor, and each member's
// epoch, subscription and current and target assignments (topics by id
// and name). An unknown or classic group answers GROUP_ID_NOT_FOUND.
// Authorized operations are not computed (-2^31). v1 adds the member type
// (1: consumer protocol).
func init() {
	register(wire.APIConsumerGroupDescribe, 0, 1, InReader, consumerGroupDescribe)
}

func consumerGroupDescribe(_ context.Context, r *Request, req *kmsg.ConsumerGroupDescribeRequest) kmsg.Response {
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.Version = req.Version
	for _, groupID := range req.Groups {
		described := kmsg.NewConsumerGroupDescribeResponseGroup()
		described.Group = groupID
		described.AuthorizedOperations = authorizedOperationsOmitted
		if !r.AuthorizedGroup(kmsg.ACLOperationDescribe, groupID) {
			described.ErrorCode, described.ErrorMessage = errcode.Of(errcode.ErrGroupAuthorization), errcode.Message(errcode.ErrGroupAuthorization)
			resp.Groups = append(resp.Groups, described)
			continue
		}
		description, err := r.Groups.For(groupID).DescribeConsumerGroup(groupID)
		if err != nil {
			described.ErrorCode = errcode.Of(err)
			message := err.Error()
			described.ErrorMessage = &message
			resp.Groups = append(resp.Groups, described)
			continue
		}
		described.State = description.State
		described.Epoch = description.Epoch
		described.AssignmentEpoch = description.AssignmentEpoch
		described.AssignorName = description.AssignorName
		for _, m := range description.Members {
			member := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			member.MemberID, member.InstanceID, member.RackID = m.MemberID, m.InstanceID, m.RackID
			member.MemberEpoch, member.ClientID, member.ClientHost = m.MemberEpoch, m.ClientID, m.ClientHost
			member.SubscribedTopics, member.SubscribedTopicRegex = m.SubscribedTopicNames, m.SubscribedTopicRegex
			member.Assignment = describedAssignment(r.Groups, m.Assignment)
			member.TargetAssignment = describedAssignment(r.Groups, m.TargetAssignment)
			member.MemberType = 1 // consumer protocol
			described.Members = append(described.Members, member)
		}
		resp.Groups = append(resp.Groups, described)
	}
	return resp
}

// describedAssignment names an assignment's topics (a topic deleted since
// keeps its id with an empty name).
func describedAssignment(groups Groups, topics []group.TopicPartitions) kmsg.Assignment {
	var assignment kmsg.Assignment
	for _, topic := range topics {
		entry := kmsg.NewAssignmentTopicPartition()
		entry.TopicID, entry.Partitions = topic.TopicID, topic.Partitions
		if name, ok := groups.TopicName(topic.TopicID); ok {
			entry.Topic = name
		}
		assignment.TopicPartitions = append(assignment.TopicPartitions, entry)
	}
	return assignment
}
