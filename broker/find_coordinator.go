package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// FindCoordinator v0–6 names this broker as the coordinator of every group
// (a single node leads every __consumer_offsets partition). v0–3 ask for
// one key, v4+ for a batch (KIP-699), each answered on its own. Key type 0
// is a group; key type 1 is a transactional id, whose coordinator is the
// leader of its __transaction_state partition (txn.PartitionFor over
// transaction.state.log.num.partitions) — this broker, which leads them
// all; any other type is INVALID_REQUEST. A cluster member names the
// cluster's coordinator broker instead (cluster_coordinator.go).
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

func handleFindCoordinator(_ context.Context, c *connection, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		answer := c.broker.findCoordinator(req.CoordinatorType)
		resp.NodeID, resp.Host, resp.Port = answer.nodeID, answer.host, answer.port
		resp.ErrorCode, resp.ErrorMessage = answer.errorCode, answer.message
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		answer := c.broker.findCoordinator(req.CoordinatorType)
		coordinator := kmsg.NewFindCoordinatorResponseCoordinator()
		coordinator.Key = key
		coordinator.NodeID, coordinator.Host, coordinator.Port = answer.nodeID, answer.host, answer.port
		coordinator.ErrorCode, coordinator.ErrorMessage = answer.errorCode, answer.message
		resp.Coordinators = append(resp.Coordinators, coordinator)
	}
	return resp
}

func (b *Broker) findCoordinator(keyType int8) coordinatorAnswer {
	switch keyType {
	case coordinatorGroup, coordinatorTransaction:
		if answer, ok := b.clusterCoordinator(); ok {
			return answer // cluster_coordinator.go
		}
		return coordinatorAnswer{nodeID: b.nodeID, host: b.advertisedHost, port: b.advertisedPort}
	default:
		message := "unknown coordinator key type"
		err := fmt.Errorf("%s %d: %w", message, keyType, errInvalidRequest)
		return coordinatorAnswer{nodeID: -1, port: -1, errorCode: errorCode(err), message: &message}
	}
}
