package broker

import "fmt"

// ReplicaLog is a snapshot of one local replica's log, for tests and tools
// that compare replicas (a follower's log must be byte-identical to its
// leader's once caught up).
type ReplicaLog struct {
	// LogStart and LogEnd bound the log; HighWatermark is this replica's.
	LogStart, LogEnd, HighWatermark int64
	// Batches are the raw record batches from LogStart up to LogEnd, at
	// most the maxBytes given to ReadReplica.
	Batches []byte
}

// ReadReplica reads this broker's replica of topic-partition (whatever
// its role) as it is on disk: log bounds, high watermark and raw batches.
func (b *Broker) ReadReplica(topic string, partition int32, maxBytes int) (ReplicaLog, error) {
	t := b.topicByName(topic)
	if t == nil {
		return ReplicaLog{}, fmt.Errorf("broker %d has no topic %s", b.nodeID, topic)
	}
	p, err := b.partitionOf(t, partition)
	if err != nil {
		return ReplicaLog{}, fmt.Errorf("broker %d: %s-%d: %w", b.nodeID, topic, partition, err)
	}
	out := ReplicaLog{LogStart: p.Log().LogStartOffset(), LogEnd: p.Log().LogEndOffset(), HighWatermark: p.HighWatermark()}
	out.Batches, err = p.Log().ReadBatches(out.LogStart, out.LogEnd, maxBytes)
	if err != nil {
		return out, fmt.Errorf("broker %d: read %s-%d: %w", b.nodeID, topic, partition, err)
	}
	return out, nil
}
