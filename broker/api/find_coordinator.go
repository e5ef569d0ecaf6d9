package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// FindCoordinator v0–6 names the current leader of the group's partition
// of the replicated __consumer_offsets, created on first use
// ([Cluster.Coordinator]); alone, this broker.
// v0–3 ask for one key, v4+ for a batch (KIP-699), each answered on its
// own. Key type 0 is a group; key type 1 is a transactional id, whose
// coordinator is the leader of its __transaction_state partition
// (txn.PartitionFor over transaction.state.log.num.partitions) — this
// broker, which leads them all, or in a cluster that partition's current
// leader; any other type is INVALID_REQUEST. This broker is named by the
// advertised address of the listener the request came in on.
func init() {
	register(wire.APIFindCoordinator, 0, 6, InReader, findCoordinator)
}

// FindCoordinator's key types; the broker numbers its coordinator kinds
// by them.
const (
	// KeyTypeGroup names a consumer group.
	KeyTypeGroup int8 = 0
	// KeyTypeTransaction names a transactional id.
	KeyTypeTransaction int8 = 1
)

func findCoordinator(ctx context.Context, r *Request, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		resp.NodeID, resp.Host, resp.Port, resp.ErrorCode, resp.ErrorMessage = coordinatorOf(ctx, r, req.CoordinatorType, req.CoordinatorKey)
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		coordinator := kmsg.NewFindCoordinatorResponseCoordinator()
		coordinator.Key = key
		coordinator.NodeID, coordinator.Host, coordinator.Port, coordinator.ErrorCode, coordinator.ErrorMessage = coordinatorOf(ctx, r, req.CoordinatorType, key)
		resp.Coordinators = append(resp.Coordinators, coordinator)
	}
	return resp
}

// coordinatorOf answers one key of keyType with [Cluster.Coordinator]
// after Kafka's authorization (the broker's authorization rules): Describe
// on the group, or on the transactional id. A refusal, or a key type that
// is neither, names no node. The answer is in a FindCoordinator response's
// fields: the node and its address, or node -1 with the error's code and
// message.
func coordinatorOf(ctx context.Context, r *Request, keyType int8, key string) (nodeID int32, host string, port int32, code int16, message *string) {
	var err error
	switch keyType {
	case KeyTypeGroup:
		if !r.AuthorizedGroup(kmsg.ACLOperationDescribe, key) {
			err = errcode.ErrGroupAuthorization
		}
	case KeyTypeTransaction:
		if !r.AuthorizedTransactionalID(kmsg.ACLOperationDescribe, key) {
			err = errcode.ErrTransactionalIDAuthorization
		}
	default:
		err = errcode.ErrUnknownCoordinatorType
	}
	if err == nil {
		nodeID, host, port, err = r.Cluster.Coordinator(ctx, r.Listener, keyType, key)
	}
	if err != nil {
		return -1, "", -1, errcode.Of(err), errcode.Message(err)
	}
	return nodeID, host, port, 0, nil
}
