package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/broker/storage"
)

// Producer ids come in blocks from the controller, as in Kafka
// (AllocateProducerIds, KIP-730): a broker asks the metadata quorum for
// the next block of quorum.ProducerIDBlockSize ids with its broker id and
// epoch, and the quorum's state machine hands out each block once, across
// controller failovers and restarts (quorum/producer_ids.go). Every
// member asks, a cluster of one too. The allocator (a
// producers.IDAllocator) asks for the next block in the background once
// 90% of the current one is handed out, and waits for it only when the
// current one is used up before the answer came.
//
// Migration from the producer-ids file. Brokers before this handed out ids
// from blocks reserved in their own file (broker/producer-ids), each
// mapped into its own stripe of the id space by node id. Such a file is
// kept and only read: its end gives the broker's floor
// (quorum.LegacyProducerIDFloor), which every request carries, and the
// quorum never hands out a block below the floor of a broker that has
// asked, nor in the stripe of a registered broker that has not asked yet.
// So no id handed out from a file is handed out again, whichever broker
// of an upgraded cluster asks first.

// ProducerIDBlocks is the controller's producer-id allocation
// ([ReplicationConfig.ProducerIDs]).
type ProducerIDBlocks interface {
	// AllocateProducerIDs returns the first id of a new block of
	// quorum.ProducerIDBlockSize ids that no broker was or will be given,
	// at or above floor.
	AllocateProducerIDs(ctx context.Context, floor int64) (start int64, err error)
}

// producerIDBlockTimeout bounds one block request: a Next that waits for
// a block (the first after start, or one whose prefetch has not been
// answered) holds its transaction coordinator's lock meanwhile.
const producerIDBlockTimeout = 5 * time.Second

// controllerReserver is the allocator's BlockReserver over the
// controller's blocks, with the broker's floor.
type controllerReserver struct {
	blocks ProducerIDBlocks
	floor  int64
}

func (r controllerReserver) ReserveBlock(ctx context.Context, size int64) (int64, error) {
	if size != quorum.ProducerIDBlockSize {
		return 0, fmt.Errorf("producer id blocks of %d ids, the controller's are %d", size, quorum.ProducerIDBlockSize)
	}
	ctx, cancel := context.WithTimeout(ctx, producerIDBlockTimeout)
	defer cancel()
	return r.blocks.AllocateProducerIDs(ctx, r.floor)
}

// openProducerIDs opens the producer-id allocator: blocks from the
// controller (cfg.Replication.ProducerIDs) with the floor of the
// producer-ids file at path, if there is one. Without ProducerIDs (a test
// broker with a fake controller) the file itself reserves the blocks,
// unique on this broker only.
func openProducerIDs(cfg Config, fsys storage.FS, path string) (*producers.IDAllocator, error) {
	if cfg.Replication.ProducerIDs == nil {
		return producers.OpenIDAllocator(fsys, path, producerIDBlockSize)
	}
	floor, err := legacyProducerIDFloor(fsys, path)
	if err != nil {
		return nil, err
	}
	return producers.NewPrefetchingIDAllocator(controllerReserver{blocks: cfg.Replication.ProducerIDs, floor: floor}, producerIDBlockSize)
}

// legacyProducerIDFloor is the floor of the producer-ids file at path (0
// if there is none). A corrupt file is an error: the floor would be
// unknown.
func legacyProducerIDFloor(fsys storage.FS, path string) (int64, error) {
	file, err := producers.OpenFileBlockReserver(fsys, path) // missing: end 0
	if err != nil {
		return 0, err
	}
	return quorum.LegacyProducerIDFloor(file.End())
}

// quorumProducerIDs is a member's ProducerIDBlocks: AllocateProducerIDs
// on its quorum node, with the broker epoch of its registration.
type quorumProducerIDs struct {
	node     *quorum.Node
	brokerID int32
}

// AllocateProducerIDs waits until this process has registered (the
// heartbeats started by startMember) and its node's image holds the
// registration, then asks with the broker's current epoch, and again with
// the next one if the broker registered anew meanwhile.
func (q quorumProducerIDs) AllocateProducerIDs(ctx context.Context, floor int64) (int64, error) {
	select {
	case <-q.node.Registered():
	case <-ctx.Done():
		return 0, fmt.Errorf("producer ids: broker %d not registered yet: %w", q.brokerID, ctx.Err())
	}
	registered := uint64(q.node.RegisteredEpoch())
	for {
		img, err := q.node.WaitFor(ctx, func(img *quorum.Image) bool { return img.Index() >= registered })
		if err != nil {
			return 0, err
		}
		b, ok := img.Broker(q.brokerID)
		if !ok {
			return 0, fmt.Errorf("producer ids: broker %d: %w", q.brokerID, quorum.ErrUnknownBroker)
		}
		start, err := q.node.AllocateProducerIDs(ctx, q.brokerID, b.Epoch, floor)
		if !errors.Is(err, quorum.ErrStaleBrokerEpoch) {
			return start, err
		}
		// Registered again since the image was read: wait for a newer
		// registration in the image.
		if _, err := q.node.WaitFor(ctx, func(img *quorum.Image) bool {
			nb, ok := img.Broker(q.brokerID)
			return ok && nb.Epoch != b.Epoch
		}); err != nil {
			return 0, err
		}
	}
}
