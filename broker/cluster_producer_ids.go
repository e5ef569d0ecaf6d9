package broker

import (
	"fmt"
	"math"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/storage"
)

// Producer ids in a cluster: every broker hands out producer ids from its
// own durably reserved blocks (producers.IDAllocator over the
// producer-ids file), so without care two brokers would give two
// producers the same id, and a partition would take one producer's batches
// for the other's. With replication on, broker n's local block [s, s+size)
// becomes [s*producerIDStride + n*size, ...+size): no two brokers with ids
// below producerIDStride share an id. (Kafka allocates the blocks in the
// controller instead, AllocateProducerIds; the metadata quorum does not
// yet.)

// producerIDStride bounds the node ids of a cluster whose producer ids
// stay distinct.
const producerIDStride = 1024

// stridedReserver maps a broker's local producer-id blocks into its own
// stripe of the id space.
type stridedReserver struct {
	local  producers.BlockReserver
	nodeID int64
}

func (r stridedReserver) ReserveBlock(size int64) (int64, error) {
	start, err := r.local.ReserveBlock(size)
	if err != nil {
		return 0, err
	}
	if start > (math.MaxInt64-producerIDStride*size)/producerIDStride {
		return 0, fmt.Errorf("producer id space of broker %d exhausted", r.nodeID)
	}
	return start*producerIDStride + r.nodeID*size, nil
}

// openProducerIDs opens the producer-id allocator: the local file, striped
// by node id when the broker is a cluster member.
func openProducerIDs(cfg Config, fsys storage.FS, path string) (*producers.IDAllocator, error) {
	if cfg.Replication == nil {
		return producers.OpenIDAllocator(fsys, path, producerIDBlockSize)
	}
	if cfg.NodeID < 0 || cfg.NodeID >= producerIDStride {
		return nil, fmt.Errorf("node id %d: a cluster member's id must be 0..%d", cfg.NodeID, producerIDStride-1)
	}
	local, err := producers.OpenFileBlockReserver(fsys, path)
	if err != nil {
		return nil, err
	}
	return producers.NewIDAllocator(stridedReserver{local: local, nodeID: int64(cfg.NodeID)}, producerIDBlockSize)
}
