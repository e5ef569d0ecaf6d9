package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/exactly-eos/exactly/broker/group"
)

// Coordinator shards: in a cluster (Config.Replication with a
// TopicController) the group coordinator and the transaction coordinator
// are sharded by the partitions of their replicated internal topics
// (__consumer_offsets: Broker.groupsFor; __transaction_state:
// Broker.transactionsFor). A key (group id, transactional id) belongs to
// partition abs(javaStringHashCode(key)) % partitions, as in Kafka, and
// FindCoordinator answers that partition's current leader. This file holds
// what both share:
//
//   - coordinatorShards: one coordinator per internal partition led here,
//     at the partition's leader epoch. ApplyPartitionRoles calls sync
//     after applying the roles; a partition newly led here (or led at a
//     newer epoch) gets a shard whose coordinator a goroutine loads from
//     the partition's log (retrying until the shard is dropped), and until
//     it is published its keys are answered COORDINATOR_LOAD_IN_PROGRESS;
//     a partition no longer led here loses its shard, whose coordinator is
//     closed. Keys of partitions led elsewhere are NOT_COORDINATOR.
//   - appendCoordinatorBatch: a coordinator's append to its partition as
//     the leader at the shard's epoch (NOT_LEADER_OR_FOLLOWER once the
//     epoch moved on), with the producer state derived as a follower does.
//     The callers wait for the ISR (acks=all, min.insync.replicas) before
//     they treat a record as written.
//   - the internal topics' creation through the controller on first use:
//     replication factor ReplicationConfig.InternalReplicationFactor
//     (default min(3, live brokers)), min.insync.replicas
//     min(2, RF), retention off, the partition count of the setting.

// shardRetry is the pause between attempts to load a shard.
const shardRetry = 500 * time.Millisecond

// internalAppendTimeout bounds the replication wait of one coordinator
// append (Kafka's offsets.commit.timeout.ms and the transaction log's
// equivalent).
const internalAppendTimeout = 5 * time.Second

// coordinatorShards are the coordinators (C: *group.Coordinator or
// *txn.Coordinator) of the partitions of one internal topic led here. mu
// guards shards, synced and closed and every shard's fields; it is a
// leaf, held only to read or replace them. wg counts the load and close
// goroutines.
type coordinatorShards[C interface{ Close() error }] struct {
	topic  string
	mu     sync.Mutex
	shards map[int32]*coordinatorShard[C]
	// synced is closed (and replaced) by every sync; nil until the first.
	synced chan struct{}
	closed bool
	wg     sync.WaitGroup
}

// coordinatorShard is the coordinator of one led partition at one leader
// epoch.
type coordinatorShard[C any] struct {
	index       int32
	leaderEpoch int32
	coordinator C
	loaded      bool // coordinator is set
	dropped     bool // replaced or removed: a load finishing now closes its coordinator
	// published is closed when the coordinator is loaded (set with
	// loaded, under mu).
	published chan struct{}
	ctx       context.Context
	cancel    context.CancelFunc
}

// lookup returns the shard's coordinator of partition index; exists is
// false when the partition is not led here, loaded false while loading.
func (cs *coordinatorShards[C]) lookup(index int32) (c C, loaded, exists bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	s := cs.shards[index]
	if s == nil {
		return c, false, false
	}
	return s.coordinator, s.loaded, true
}

// awaitLoaded waits until the coordinator of partition index is loaded,
// or ctx ends. The caller knows the partition is led here: roles are
// published (clusterView) before ApplyPartitionRoles syncs the shards,
// so a shard not there yet is waited for too.
func (cs *coordinatorShards[C]) awaitLoaded(ctx context.Context, index int32) {
	for {
		cs.mu.Lock()
		if cs.synced == nil {
			cs.synced = make(chan struct{})
		}
		s, synced, closed := cs.shards[index], cs.synced, cs.closed
		cs.mu.Unlock()
		if closed {
			return
		}
		if s != nil {
			select {
			case <-s.published:
			case <-s.ctx.Done():
			case <-ctx.Done():
			}
			return
		}
		select {
		case <-synced:
		case <-ctx.Done():
			return
		}
	}
}

// loaded returns every published coordinator.
func (cs *coordinatorShards[C]) loaded() []C {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []C
	for _, s := range cs.shards {
		if s.loaded {
			out = append(out, s.coordinator)
		}
	}
	return out
}

// loading counts the shards led here whose coordinator is not loaded yet.
func (cs *coordinatorShards[C]) loading() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := 0
	for _, s := range cs.shards {
		if !s.loaded {
			n++
		}
	}
	return n
}

// shardLoader builds the coordinator of partition p led at leaderEpoch
// (replaying its log); start runs once it is published.
type shardLoader[C any] struct {
	load  func(ctx context.Context, p *topicPartition, leaderEpoch int32) (C, error)
	start func(C)
}

// sync makes the shards match the roles of the internal topic: a shard
// per partition led here at its leader epoch.
func (cs *coordinatorShards[C]) sync(b *Broker, roles []PartitionRole, loader shardLoader[C]) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return
	}
	if cs.shards == nil {
		cs.shards = map[int32]*coordinatorShard[C]{}
	}
	if cs.synced != nil {
		close(cs.synced)
	}
	cs.synced = make(chan struct{})
	for index, s := range cs.shards {
		if int(index) >= len(roles) || roles[index].Leader != b.nodeID || roles[index].LeaderEpoch != s.leaderEpoch {
			cs.dropLocked(s)
		}
	}
	t := b.topicByName(cs.topic)
	for _, role := range roles {
		if role.Leader != b.nodeID || cs.shards[role.Partition] != nil || t == nil {
			continue
		}
		p, err := b.partitionOf(t, role.Partition)
		if err != nil {
			continue
		}
		s := &coordinatorShard[C]{index: role.Partition, leaderEpoch: role.LeaderEpoch, published: make(chan struct{})}
		s.ctx, s.cancel = context.WithCancel(b.ctx)
		cs.shards[role.Partition] = s
		cs.wg.Add(1)
		go cs.loadShard(b, s, p, loader)
	}
}

// dropLocked removes s and closes its coordinator, if loaded, on its own
// goroutine (a close waits for work in progress). Caller holds mu.
func (cs *coordinatorShards[C]) dropLocked(s *coordinatorShard[C]) {
	s.dropped = true
	s.cancel()
	if cs.shards[s.index] == s {
		delete(cs.shards, s.index)
	}
	if s.loaded {
		c := s.coordinator
		cs.wg.Add(1)
		go func() {
			defer cs.wg.Done()
			_ = c.Close()
		}()
	}
}

// loadShard loads the shard's coordinator and publishes it, retrying a
// failed load until the shard is dropped.
func (cs *coordinatorShards[C]) loadShard(b *Broker, s *coordinatorShard[C], p *topicPartition, loader shardLoader[C]) {
	defer cs.wg.Done()
	started := time.Now()
	for {
		c, err := loader.load(s.ctx, p, s.leaderEpoch)
		if err == nil {
			cs.mu.Lock()
			if s.dropped || cs.closed {
				cs.mu.Unlock()
				_ = c.Close()
				return
			}
			s.coordinator, s.loaded = c, true
			close(s.published)
			cs.mu.Unlock()
			if loader.start != nil {
				loader.start(c)
			}
			b.logger.Info("coordinator loaded", "partition", p.Name(), "leader_epoch", s.leaderEpoch, "took", time.Since(started))
			return
		}
		b.logger.Warn("coordinator load failed; retrying", "partition", p.Name(), "error", err)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(shardRetry):
		}
	}
}

// close drops every shard and waits for their goroutines.
func (cs *coordinatorShards[C]) close() {
	cs.mu.Lock()
	cs.closed = true
	if cs.synced != nil {
		close(cs.synced) // wakes awaitLoaded, which sees closed
		cs.synced = nil
	}
	for _, s := range cs.shards {
		cs.dropLocked(s)
	}
	cs.mu.Unlock()
	cs.wg.Wait()
}

// appendInternalReplicated is appendCoordinatorBatch with acks=all: the
// ISR is checked against min.insync.replicas before, and the call returns
// once the ISR has the batch (and it is durable here).
func (b *Broker) appendInternalReplicated(ctx context.Context, p *topicPartition, records []byte, leaderEpoch int32) error {
	minInsync := p.topic.config.Load().minInsyncReplica
	if err := p.CheckMinInsync(minInsync); err != nil {
		return err
	}
	last, err := p.AppendCoordinatorBatch(records, leaderEpoch)
	if err != nil {
		return err
	}
	if err := p.WaitReplicated(ctx, b.ctx.Done(), last, minInsync, internalAppendTimeout); err != nil {
		return err
	}
	return p.WaitDurable(ctx, last)
}

// internalTopicOverrides are the topic settings of a replicated internal
// topic of replication factor rf: retention off (the coordinators replay
// the whole log), compacted (logCleaner), the segment size of
// offsets.topic.segment.bytes or transaction.state.log.segment.bytes, and
// min.insync.replicas min(2, rf).
func (b *Broker) internalTopicOverrides(name string, rf int) map[string]string {
	segment := b.config.settings.OffsetsSegmentBytes
	if name != group.OffsetsTopic {
		segment = b.config.settings.TransactionStateSegmentBytes
	}
	return map[string]string{
		"cleanup.policy":      "compact",
		"retention.ms":        "-1",
		"retention.bytes":     "-1",
		"segment.bytes":       fmt.Sprint(segment),
		"min.insync.replicas": fmt.Sprint(min(2, max(rf, 1))),
	}
}

// liveBrokers counts the unfenced brokers of the last applied roles.
func (b *Broker) liveBrokers() int {
	view := b.replication.view.Load()
	if view == nil {
		return 0
	}
	n := 0
	for _, broker := range view.brokers {
		if !broker.Fenced {
			n++
		}
	}
	return n
}

// ensureInternalTopic creates the replicated internal topic through the
// controller unless the roles already hold it: partitions partitions,
// replication factor ReplicationConfig.InternalReplicationFactor (waiting
// for that many live brokers), or min(3, live brokers) when unset.
func (b *Broker) ensureInternalTopic(ctx context.Context, name string, partitions int32) error {
	if b.topicRoles(name) != nil {
		return nil
	}
	live := b.liveBrokers()
	rf := min(3, live)
	if want := int(b.replication.config.InternalReplicationFactor); want > 0 {
		if live < want {
			return fmt.Errorf("%w: %s needs %d live brokers for its replication factor, %d are live", errNoCoordinator, name, want, live)
		}
		rf = want
	}
	if rf < 1 {
		return fmt.Errorf("%w: no live broker to host %s", errNoCoordinator, name)
	}
	ctx, cancel := context.WithTimeout(ctx, clusterAdminTimeout)
	defer cancel()
	err := b.clusterTopics().CreateTopic(ctx, name, partitions, int32(rf), b.internalTopicOverrides(name, rf))
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("%w: create %s: %w", errNoCoordinator, name, err)
	}
	if b.topicRoles(name) == nil {
		return fmt.Errorf("%w: %s created, not yet known here", errNoCoordinator, name)
	}
	return nil
}
