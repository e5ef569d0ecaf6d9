package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// InitProducerId v0–5 without a transactional id gives an idempotent
// producer a new producer id at epoch 0, as Kafka does: the id comes from a
// block reserved durably in <data-dir>/producer-ids, so no id is handed out
// twice, across restarts included. The v3+ ProducerID/ProducerEpoch fields
// (KIP-360) are ignored without a transactional id; Kafka also answers a
// fresh id then, and the client restarts its sequences at 0.
//
// With a transactional id the request belongs to the transaction
// coordinator, which is not wired in yet: COORDINATOR_NOT_AVAILABLE (and
// the transaction APIs are not advertised). An empty, non-null
// transactional id is INVALID_REQUEST, as in Kafka.
func init() {
	register(wire.APIInitProducerID, 0, 5, kmsgHandler(handleInitProducerID))
}

func handleInitProducerID(c *connection, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = errorCode(fmt.Errorf("%w: empty transactional id", errInvalidRequest))
		return resp
	case req.TransactionalID != nil:
		resp.ErrorCode = errorCode(fmt.Errorf("%w: transactional id %q: no transaction coordinator yet", errNoCoordinator, *req.TransactionalID))
		return resp
	}
	id, err := c.broker.producerIDs.Next()
	if err != nil {
		c.logger.Error("producer id allocation failed", "error", err)
		resp.ErrorCode = errorCode(fmt.Errorf("%w: allocate producer id: %w", errStorage, err))
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}
