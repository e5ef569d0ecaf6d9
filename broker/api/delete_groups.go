package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DeleteGroups v0–3 deletes empty groups and their offsets (tombstones in
// __consumer_offsets). A group with members answers NON_EMPTY_GROUP; an
// unknown one GROUP_ID_NOT_FOUND. v3 adds error messages (Kafka's
// description of the code).
func init() {
	register(wire.APIDeleteGroups, 0, 3, InReader, deleteGroups)
}

func deleteGroups(ctx context.Context, r *Request, req *kmsg.DeleteGroupsRequest) kmsg.Response {
	// Authorization (the broker's authorizationRules): Delete on each
	// group; the refused ones are not deleted.
	errs := make([]error, len(req.Groups))
	var authorized []string
	var authorizedIndex []int
	for i, groupID := range req.Groups {
		if !r.AuthorizedGroup(kmsg.ACLOperationDelete, groupID) {
			errs[i] = errcode.ErrGroupAuthorization
			continue
		}
		authorized, authorizedIndex = append(authorized, groupID), append(authorizedIndex, i)
	}
	if len(authorized) > 0 {
		for k, err := range r.Groups.Delete(ctx, authorized) {
			errs[authorizedIndex[k]] = err
		}
	}
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = req.Version
	for i, groupID := range req.Groups {
		deleted := kmsg.DeleteGroupsResponseGroup{Group: groupID, ErrorCode: errcode.Of(errs[i])}
		if req.Version >= 3 && deleted.ErrorCode != 0 {
			message := kerr.ErrorForCode(deleted.ErrorCode).Error()
			deleted.ErrorMessage = &message
		}
		resp.Groups = append(resp.Groups, deleted)
	}
	return resp
}
