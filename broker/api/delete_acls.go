package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DeleteAcls v0–3 (API 31) removes the ACL bindings each filter selects
// and returns them per filter, as Kafka's AclApis does: Alter on the
// Cluster is required (else every filter result is
// CLUSTER_AUTHORIZATION_FAILED), no authorizer is SECURITY_DISABLED, a
// filter with an UNKNOWN field is INVALID_REQUEST for that filter alone.
// Every filter is matched against the ACLs as they were before the
// request, so a binding two filters select is listed under both. v0 has
// no pattern type filter: it is LITERAL. The removal is durable
// ([ACLs.Delete]) before the response is sent.
func init() {
	register(wire.APIDeleteACLs, 0, 3, InReader, deleteACLs)
}

func deleteACLs(_ context.Context, r *Request, req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	if refusal := aclsRefusal(r, kmsg.ACLOperationAlter); refusal != nil {
		for range req.Filters {
			result := kmsg.NewDeleteACLsResponseResult()
			result.ErrorCode, result.ErrorMessage = errcode.Of(refusal), errcode.Message(refusal)
			resp.Results = append(resp.Results, result)
		}
		return resp
	}
	filters := make([]acl.Filter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = acl.Filter{
			ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType,
		}
	}
	for _, deleted := range r.ACLs.Delete(filters) {
		result := kmsg.NewDeleteACLsResponseResult()
		if deleted.Err != nil {
			result.ErrorCode, result.ErrorMessage = errcode.Of(deleted.Err), errcode.Message(deleted.Err)
		}
		for _, b := range deleted.Deleted {
			matching := kmsg.NewDeleteACLsResponseResultMatchingACL()
			matching.ResourceType, matching.ResourceName, matching.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			matching.Principal, matching.Host, matching.Operation, matching.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
			result.MatchingACLs = append(result.MatchingACLs, matching)
			r.Logger.Info("acl deleted", "acl", b.String(), "by", r.Auth.Principal())
		}
		resp.Results = append(resp.Results, result)
	}
	return resp
}
