package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// ShareGroupDescribe v0–1 describes share groups: state, group and
// assignment epochs, the assignor ("simple"), and each member's epoch,
// client, subscription and assignment (topics by id and name). An unknown
// group, or one of another type, answers GROUP_ID_NOT_FOUND. Group
// DESCRIBE is required; authorized operations are not computed (-2^31).
func init() {
	register(wire.APIShareGroupDescribe, 0, 1, InReader, shareGroupDescribe)
}

func shareGroupDescribe(_ context.Context, r *Request, req *kmsg.ShareGroupDescribeRequest) kmsg.Response {
	resp := kmsg.NewPtrShareGroupDescribeResponse()
	resp.Version = req.Version
	for _, groupID := range req.GroupIDs {
		described := kmsg.NewShareGroupDescribeResponseGroup()
		described.GroupID = groupID
		described.AuthorizedOperations = authorizedOperationsOmitted
		if !r.AuthorizedGroup(kmsg.ACLOperationDescribe, groupID) {
			described.ErrorCode, described.ErrorMessage = errcode.Of(errcode.ErrGroupAuthorization), errcode.Message(errcode.ErrGroupAuthorization)
			resp.Groups = append(resp.Groups, described)
			continue
		}
		description, err := r.Groups.For(groupID).DescribeShareGroup(groupID)
		if err != nil {
			described.ErrorCode = errcode.Of(err)
			message := err.Error()
			described.ErrorMessage = &message
			resp.Groups = append(resp.Groups, described)
			continue
		}
		described.GroupState, described.GroupEpoch = description.State, description.Epoch
		described.AssignmentEpoch, described.Assignor = description.AssignmentEpoch, description.Assignor
		for _, m := range description.Members {
			member := kmsg.NewShareGroupDescribeResponseGroupMember()
			member.MemberID, member.RackID, member.MemberEpoch = m.MemberID, m.RackID, m.Epoch
			member.ClientID, member.ClientHost, member.SubscribedTopicNames = m.ClientID, m.ClientHost, m.Subscribed
			for _, topic := range m.Assigned {
				entry := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				entry.TopicID, entry.Partitions = topic.TopicID, topic.Partitions
				if name, ok := r.Groups.TopicName(topic.TopicID); ok {
					entry.Topic = name
				}
				member.Assignment.TopicPartitions = append(member.Assignment.TopicPartitions, entry)
			}
			described.Members = append(described.Members, member)
		}
		resp.Groups = append(resp.Groups, described)
	}
	return resp
}
