package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/wire"
)

// ListGroups v0–5 lists every group, sorted by id. v4 filters by state
// (case-insensitive) and returns it; v5 filters by type and returns it
// ("classic" or "consumer").
func init() {
	register(wire.APIListGroups, 0, 5, InReader, listGroups)
}

func listGroups(_ context.Context, r *Request, req *kmsg.ListGroupsRequest) kmsg.Response {
	var filter group.ListFilter
	if req.Version >= 4 {
		filter.States = req.StatesFilter
	}
	if req.Version >= 5 {
		filter.Types = req.TypesFilter
	}
	listed, err := r.Groups.List(filter)
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = req.Version
	resp.ErrorCode = errcode.Of(err)
	// Authorization (the broker's authorizationRules): Describe on the
	// Cluster lists every group; otherwise only the groups the principal
	// may Describe.
	clusterDescribe := r.AuthorizedCluster(kmsg.ACLOperationDescribe)
	for _, g := range listed {
		if !clusterDescribe && !r.AuthorizedGroup(kmsg.ACLOperationDescribe, g.Group) {
			continue
		}
		entry := kmsg.ListGroupsResponseGroup{Group: g.Group, ProtocolType: g.ProtocolType}
		if req.Version >= 4 {
			entry.GroupState = g.State
		}
		if req.Version >= 5 {
			entry.GroupType = g.Type
		}
		resp.Groups = append(resp.Groups, entry)
	}
	return resp
}
