package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/exactly-eos/exactly/broker/partition"
)

// leaderEpoch is the leader epoch answered for a partition not known here:
// [partition.UnreplicatedLeaderEpoch].
const leaderEpoch = partition.UnreplicatedLeaderEpoch

// topicPartition is a partition as a topic holds it: the
// [partition.Partition] — its log, producer and transaction state, role,
// high watermark, locks and the one append path — bound to its topic,
// whose config snapshot, id and metrics the broker's handlers read. It
// holds no state of its own.
type topicPartition struct {
	*partition.Partition
	topic *topic
}

// openPartition opens (or with fresh, first wipes and creates) the log of
// partition index of t ([partition.Open]).
func (b *Broker) openPartition(t *topic, index int32, fresh bool) (*topicPartition, error) {
	options := b.config.storageOptions(t.config.Load())
	options.FS = b.fs
	options.OnSync = b.onSync()
	config := partition.Config{
		Topic: t.name, Index: index, Fresh: fresh,
		Dir:       filepath.Join(b.dataDir, partitionDirName(t.name, index)),
		Storage:   options,
		Producers: b.producerOptions,
		Logger:    b.logger,
		Replication: &partition.Replication{NodeID: b.nodeID, ISR: isrChanger{b.replication.config.ISR},
			FollowerCaughtUp: b.replication.wakeISR, ISRChanged: b.isrChanged},
	}
	if !fresh {
		// A fresh partition's name may be a deleted topic's: the
		// checkpoint's entry is not this partition's.
		hw, err := b.checkpointedHighWatermark(t.name, index)
		if err != nil {
			return nil, fmt.Errorf("open %s-%d: %w", t.name, index, err)
		}
		config.Replication.CheckpointedHighWatermark = hw
	}
	p, err := partition.Open(config)
	if err != nil {
		return nil, err
	}
	return &topicPartition{Partition: p, topic: t}, nil
}

// isrChanger is the controller's [ISRChanger] as a partition asks it
// ([partition.ISRChanger]).
type isrChanger struct{ changer ISRChanger }

// AlterPartition asks the controller and converts its answer.
func (c isrChanger) AlterPartition(ctx context.Context, topic string, index, leaderEpoch, partitionEpoch int32, isr []int32) (partition.Role, error) {
	next, err := c.changer.AlterPartition(ctx, topic, index, leaderEpoch, partitionEpoch, isr)
	if err != nil {
		return partition.Role{}, err
	}
	return partition.Role{Leader: next.Leader, LeaderEpoch: next.LeaderEpoch, PartitionEpoch: next.PartitionEpoch,
		Replicas: next.Replicas, ISR: next.ISR}, nil
}

// wakeISR asks the ISR maintenance loop to look now (a follower caught
// up); it never blocks.
func (r *replication) wakeISR() {
	select {
	case r.isrWake <- struct{}{}:
	default:
	}
}

// maintainISRs runs while the broker runs (replication on): every half
// replica.lag.time.max.ms, and when a follower may rejoin, it checks the
// ISR of every partition led here ([partition.Partition.MaintainISR]).
func (b *Broker) maintainISRs() {
	defer b.background.Done()
	lag := b.config.settings.ReplicaLagTimeMax
	ticker := time.NewTicker(max(lag/2, 5*time.Millisecond))
	defer ticker.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-ticker.C:
		case <-b.replication.isrWake:
		}
		for _, p := range b.allPartitions() {
			p.MaintainISR(b.ctx, lag)
		}
	}
}
