package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"
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
// The ACLs are durable (acls.json) before the response is sent.
func init() {
	register(wire.APICreateACLs, 0, 3, kmsgHandler(handleCreateACLs))
}

func handleCreateACLs(c *connection, req *kmsg.CreateACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	var refusal error
	switch {
	case !c.authorizedCluster(kmsg.ACLOperationAlter):
		refusal = errClusterAuthorization
	case c.broker.authorizer == nil:
		refusal = errSecurityDisabled
	}
	if refusal != nil {
		for range req.Creations {
			result := kmsg.NewCreateACLsResponseResult()
			result.ErrorCode, result.ErrorMessage = errorCode(refusal), errorMessage(refusal)
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
	errs := c.broker.authorizer.Create(bindings)
	for i, err := range errs {
		result := kmsg.NewCreateACLsResponseResult()
		if err != nil {
			result.ErrorCode, result.ErrorMessage = errorCode(err), errorMessage(err)
			c.logger.Info("create acl refused", "acl", bindings[i].String(), "error", err)
		} else {
			c.logger.Info("acl created", "acl", bindings[i].String(), "by", c.principal())
		}
		resp.Results = append(resp.Results, result)
	}
	return resp
}
