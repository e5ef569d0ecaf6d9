package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DescribeAcls v0–3 (API 29) lists the ACL bindings one filter selects
// (package [acl] documents filter semantics: ANY, MATCH, nil names), grouped
// by resource pattern, as Kafka's AclApis does: Describe on the Cluster is
// required (CLUSTER_AUTHORIZATION_FAILED), no authorizer is
// SECURITY_DISABLED, and a filter with an UNKNOWN field is
// INVALID_REQUEST. v0 has no pattern type filter: it is LITERAL.
func init() {
	register(wire.APIDescribeACLs, 0, 3, InReader, describeACLs)
}

func describeACLs(_ context.Context, r *Request, req *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(err error) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), errcode.Message(err)
		return resp
	}
	if refusal := aclsRefusal(r, kmsg.ACLOperationDescribe); refusal != nil {
		return fail(refusal)
	}
	filter := acl.Filter{
		ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType,
	}
	if err := filter.Validate(); err != nil {
		return fail(err)
	}
	resp.Resources = describeACLsResources(r.ACLs.Describe(filter))
	return resp
}

// describeACLsResources groups bindings by resource pattern, in the order
// each pattern first appears.
func describeACLsResources(bindings []acl.Binding) []kmsg.DescribeACLsResponseResource {
	type pattern struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}
	index := map[pattern]int{}
	var out []kmsg.DescribeACLsResponseResource
	for _, b := range bindings {
		key := pattern{b.ResourceType, b.ResourceName, b.PatternType}
		i, ok := index[key]
		if !ok {
			resource := kmsg.NewDescribeACLsResponseResource()
			resource.ResourceType, resource.ResourceName, resource.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			out = append(out, resource)
			i = len(out) - 1
			index[key] = i
		}
		entry := kmsg.NewDescribeACLsResponseResourceACL()
		entry.Principal, entry.Host, entry.Operation, entry.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		out[i].ACLs = append(out[i].ACLs, entry)
	}
	return out
}

// aclsRefusal is the check every ACL API makes first, in Kafka's order:
// op (Describe, or Alter to change) on the Cluster, else
// CLUSTER_AUTHORIZATION_FAILED; then an authorizer must be configured,
// else SECURITY_DISABLED. nil when the request may go on.
func aclsRefusal(r *Request, op kmsg.ACLOperation) error {
	switch {
	case !r.AuthorizedCluster(op):
		return errcode.ErrClusterAuthorization
	case !r.Auth.Enabled():
		return errcode.ErrSecurityDisabled
	}
	return nil
}
