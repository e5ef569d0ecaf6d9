package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// CreateAcls v0–3 (API 30) adds ACL bindings to the authorizer, as Kafka's
// AclApis does: Alter on the Cluster is required (else every creation is
// CLUSTER_AUTHORIZATION_FAILED); without an authorizer every creation is
// SECURITY_DISABLED; a binding Kafka refuses (UNKNOWN or ANY fields, a
// pattern type other than LITERAL or PREFIXED, an empty name, a Cluster
// not named kafka-cluster, a principal not of the form Type:name) is
// INVALID_REQUEST for that creation alone. v0 has no pattern type: it is
// LITERAL. Creating a binding that exists succeeds and changes nothing.
// The ACLs are durable ([ACLs.Create]) before the response is sent.
func init() {
	register(wire.APICreateACLs, 0, 3, InReader, createACLs)
}

func createACLs(_ context.Context, r *Request, req *kmsg.CreateACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	if refusal := aclsRefusal(r, kmsg.ACLOperationAlter); refusal != nil {
		for range req.Creations {
			result := kmsg.NewCreateACLsResponseResult()
			result.ErrorCode, result.ErrorMessage = errcode.Of(refusal), errcode.Message(refusal)
			resp.Results = append(resp.Results, result)
		}
		return resp
	}
	bindings := make([]acl.Binding, len(req.Creations))
	for i, creation := range req.Creations {
		bindings[i] = acl.Binding{
			ResourceType: creation.ResourceType, ResourceName: creation.ResourceName,
			PatternType: creation.ResourcePatternType, Principal: creation.Principal, Host: creation.Host,
			Operation: creation.Operation, Permission: creation.PermissionType,
		}
	}
	errs := r.ACLs.Create(bindings)
	for i, err := range errs {
		result := kmsg.NewCreateACLsResponseResult()
		if err != nil {
			result.ErrorCode, result.ErrorMessage = errcode.Of(err), errcode.Message(err)
			r.Logger.Info("create acl refused", "acl", bindings[i].String(), "error", err)
		} else {
			r.Logger.Info("acl created", "acl", bindings[i].String(), "by", r.Auth.Principal())
		}
		resp.Results = append(resp.Results, result)
	}
	return resp
}
