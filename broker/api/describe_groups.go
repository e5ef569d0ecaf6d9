package api

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// DescribeGroups v0–6 reports groups' state, protocol and members. Members
// carry their metadata and assignment only while the group is Stable (as
// Kafka). v3+ carry authorized operations (-2^31: not computed); v4+
// instance ids; v6 answers an unknown group with GROUP_ID_NOT_FOUND and a
// message, older versions with state Dead.
func init() {
	register(wire.APIDescribeGroups, 0, 6, InReader, describeGroups)
}

func describeGroups(_ context.Context, r *Request, req *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = req.Version
	for _, groupID := range req.Groups {
		if !r.AuthorizedGroup(kmsg.ACLOperationDescribe, groupID) {
			resp.Groups = append(resp.Groups, describedGroup(req.Version, groupID, group.GroupDescription{}, errcode.ErrGroupAuthorization))
			continue
		}
		description, err := r.Groups.For(groupID).DescribeGroup(groupID)
		resp.Groups = append(resp.Groups, describedGroup(req.Version, groupID, description, err))
	}
	return resp
}

// describedGroup encodes one group's description at version.
func describedGroup(version int16, groupID string, description group.GroupDescription, err error) kmsg.DescribeGroupsResponseGroup {
	described := kmsg.NewDescribeGroupsResponseGroup()
	described.Group = groupID
	described.AuthorizedOperations = authorizedOperationsOmitted
	switch {
	case errors.Is(err, group.ErrGroupNotFound) && version < 6:
		described.State = "Dead"
		return described
	case errors.Is(err, group.ErrGroupNotFound):
		described.ErrorCode = errcode.Of(err)
		message := "group " + groupID + " not found"
		described.ErrorMessage = &message
		return described
	case err != nil:
		described.ErrorCode = errcode.Of(err)
		return described
	}
	described.State = description.State
	described.ProtocolType = description.ProtocolType
	described.Protocol = description.Protocol
	for _, m := range description.Members {
		member := kmsg.DescribeGroupsResponseGroupMember{
			MemberID:         m.MemberID,
			ClientID:         m.ClientID,
			ClientHost:       m.ClientHost,
			ProtocolMetadata: m.Metadata,
			MemberAssignment: m.Assignment,
		}
		if version >= 4 {
			member.InstanceID = m.InstanceID
		}
		described.Members = append(described.Members, member)
	}
	return described
}
