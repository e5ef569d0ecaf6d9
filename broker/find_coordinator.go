package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// FindCoordinator v0–6 names the current leader of the group's partition
// of the replicated __consumer_offsets, created on first use
// ([Broker.findCoordinator]); alone, this broker.
// v0–3 ask for one key, v4+ for a batch (KIP-699), each answered on its
// own. Key type 0 is a group; key type 1 is a transactional id, whose
// coordinator is the leader of its __transaction_state partition
// (txn.PartitionFor over transaction.state.log.num.partitions) — this
// broker, which leads them all, or in a cluster that partition's current
// leader; any other type is INVALID_REQUEST. This broker is named by the
// advertised address of the listener the request came in on.
func init() {
	register(wire.APIFindCoordinator, 0, 6, groupHandler(inReader, handleFindCoordinator))
}

func handleFindCoordinator(ctx context.Context, c *connection, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		answer := c.findCoordinator(ctx, req.CoordinatorType, req.CoordinatorKey)
		resp.NodeID, resp.Host, resp.Port, resp.ErrorCode, resp.ErrorMessage = encodeCoordinator(answer)
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		answer := c.findCoordinator(ctx, req.CoordinatorType, key)
		coordinator := kmsg.NewFindCoordinatorResponseCoordinator()
		coordinator.Key = key
		coordinator.NodeID, coordinator.Host, coordinator.Port, coordinator.ErrorCode, coordinator.ErrorMessage = encodeCoordinator(answer)
		resp.Coordinators = append(resp.Coordinators, coordinator)
	}
	return resp
}

// findCoordinator decodes a key's type and answers it with
// [Broker.findCoordinator] after Kafka's authorization
// (authorizationRules): Describe on the group, or on the transactional
// id. A refusal, or a key type that is neither, names no node.
func (c *connection) findCoordinator(ctx context.Context, keyType int8, key string) coordinatorAnswer {
	kind := coordinatorKind(keyType)
	var refusal error
	switch kind {
	case coordinatorGroup:
		if !c.authorizedGroup(kmsg.ACLOperationDescribe, key) {
			refusal = errGroupAuthorization
		}
	case coordinatorTransaction:
		if !c.authorizedTransactionalID(kmsg.ACLOperationDescribe, key) {
			refusal = errTransactionalIDAuthorization
		}
	default:
		refusal = errUnknownCoordinatorType
	}
	if refusal != nil {
		return coordinatorAnswer{err: refusal}
	}
	return c.broker.findCoordinator(ctx, c, kind, key)
}

// encodeCoordinator is an answer's fields in a FindCoordinator response:
// the node and its address, or node -1 with the error's code and message.
func encodeCoordinator(answer coordinatorAnswer) (nodeID int32, host string, port int32, code int16, message *string) {
	if answer.err != nil {
		return -1, "", -1, errorCode(answer.err), errorMessage(answer.err)
	}
	return answer.nodeID, answer.host, answer.port, 0, nil
}
