package api

import "github.com/twmb/franz-go/pkg/kmsg"

// Authorized operations (KIP-430): a response that a request asked to
// include them carries, per resource, a bit field of the operations the
// principal may perform on it, bit i set for ACL operation i, over the
// operations the resource type supports (Kafka's AclEntry
// supportedOperations). Without an authorizer every supported operation
// is allowed. When not asked for, the field is authorizedOperationsOmitted.

// topicOperations are the operations a topic supports.
var topicOperations = []kmsg.ACLOperation{
	kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
	kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
}

// clusterOperations are the operations the cluster supports.
var clusterOperations = []kmsg.ACLOperation{
	kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
	kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
}

// authorizedOperations is the bit field of operations among supported that
// r's principal may perform on the resource.
func authorizedOperations(r *Request, resourceType kmsg.ACLResourceType, name string, supported []kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range supported {
		if r.Auth.Authorized(op, resourceType, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}
