package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// FindCoordinator v0–6 names this broker as the coordinator of every group
// (a single node leads every __consumer_offsets partition); in a cluster,
// the current leader of the group's partition of the replicated
// __consumer_offsets, created on first use (Broker.clusterFindCoordinator).
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

// Coordinator key types of FindCoordinator.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

// coordinatorAnswer is the answer for one key.
type coordinatorAnswer struct {
	nodeID    int32
	host      string
	port      int32
	errorCode int16
	message   *string
}

func handleFindCoordinator(ctx context.Context, c *connection, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		answer := c.findCoordinator(ctx, req.CoordinatorType, req.CoordinatorKey)
		resp.NodeID, resp.Host, resp.Port = answer.nodeID, answer.host, answer.port
		resp.ErrorCode, resp.ErrorMessage = answer.errorCode, answer.message
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		answer := c.findCoordinator(ctx, req.CoordinatorType, key)
		coordinator := kmsg.NewFindCoordinatorResponseCoordinator()
		coordinator.Key = key
		coordinator.NodeID, coordinator.Host, coordinator.Port = answer.nodeID, answer.host, answer.port
		coordinator.ErrorCode, coordinator.ErrorMessage = answer.errorCode, answer.message
		resp.Coordinators = append(resp.Coordinators, coordinator)
	}
	return resp
}

// findCoordinator is Broker.findCoordinator after Kafka's authorization
// (authorizationRules): Describe on the group, or on the transactional id; a
// refusal names no node.
func (c *connection) findCoordinator(ctx context.Context, keyType int8, key string) coordinatorAnswer {
	var refusal error
	switch {
	case keyType == coordinatorGroup && !c.authorizedGroup(kmsg.ACLOperationDescribe, key):
		refusal = errGroupAuthorization
	case keyType == coordinatorTransaction && !c.authorizedTransactionalID(kmsg.ACLOperationDescribe, key):
		refusal = errTransactionalIDAuthorization
	}
	if refusal != nil {
		return coordinatorAnswer{nodeID: -1, port: -1, errorCode: errorCode(refusal), message: errorMessage(refusal)}
	}
	return c.broker.findCoordinator(ctx, c, keyType, key)
}

// findCoordinator answers one key for a client connected through c: this
// broker at c's listener's advertised address, or in a cluster the
// leader of the key's internal partition.
func (b *Broker) findCoordinator(ctx context.Context, c *connection, keyType int8, key string) coordinatorAnswer {
	switch {
	case keyType == coordinatorGroup && b.clusterGroups():
		partitions := b.config.settings.OffsetsTopicPartitions
		return b.clusterFindCoordinator(ctx, c, group.OffsetsTopic, partitions, int32(group.PartitionFor(key, int(partitions))))
	case keyType == coordinatorTransaction && b.clusterGroups():
		partitions := b.config.settings.TransactionStatePartitions
		return b.clusterFindCoordinator(ctx, c, txn.TransactionStateTopic, partitions, int32(txn.PartitionFor(key, int(partitions))))
	case keyType == coordinatorGroup, keyType == coordinatorTransaction:
		host, port := c.advertised()
		return coordinatorAnswer{nodeID: b.nodeID, host: host, port: port}
	default:
		message := "unknown coordinator key type"
		err := fmt.Errorf("%s %d: %w", message, keyType, errInvalidRequest)
		return coordinatorAnswer{nodeID: -1, port: -1, errorCode: errorCode(err), message: &message}
	}
}
