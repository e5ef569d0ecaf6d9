package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
)

// Group coordinators (coordinatorShards has the sharding):
// __consumer_offsets is a replicated topic of the cluster, created through
// the controller on the first FindCoordinator for a group, with
// offsets.topic.num.partitions partitions, replication factor
// min(3, live brokers) (Kafka's offsets.topic.replication.factor) and
// min.insync.replicas min(2, RF). A group belongs to partition
// group.PartitionFor(group id, partitions); the shard of a partition led
// here is a group.Coordinator over partitionOffsetStore, which appends to
// the partition with acks=all, so a commit answered is on min.insync
// replicas and the next leader's shard loads it. A transaction marker for
// a __consumer_offsets partition (WriteTxnMarkers, or the local
// transaction coordinator's OffsetCommitter) is answered only after the
// shard appended it and applied the producer's offsets.

// Refusing coordinators: what groupsFor returns for a group this broker
// does not coordinate (yet).
var (
	notGroupCoordinator     = group.NewRefusingCoordinator(group.ErrNotCoordinator)
	groupCoordinatorLoading = group.NewRefusingCoordinator(group.ErrCoordinatorLoadInProgress)
)

// offsetsPartition is the __consumer_offsets partition of groupID.
func (b *Broker) offsetsPartition(groupID string) int32 {
	return int32(group.PartitionFor(groupID, int(b.internalPartitions(group.OffsetsTopic, b.config.settings.OffsetsTopicPartitions))))
}

// internalPartitions is the partition count the keys of internal topic
// name map by: the topic's own once it exists, as in Kafka, so a start
// with another offsets.topic.num.partitions or
// transaction.state.log.num.partitions does not move groups and
// transactional ids away from their records; configured before.
func (b *Broker) internalPartitions(name string, configured int32) int32 {
	if roles := b.topicRoles(name); len(roles) > 0 {
		return int32(len(roles))
	}
	return configured
}

// groupsFor returns the coordinator serving groupID here: the shard of
// its partition, or a refusing coordinator (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
func (b *Broker) groupsFor(groupID string) *group.Coordinator {
	c, loaded, exists := b.replication.groups.lookup(b.offsetsPartition(groupID))
	switch {
	case !exists:
		return notGroupCoordinator
	case !loaded:
		return groupCoordinatorLoading
	}
	return c
}

// syncGroupShards makes the group shards match view (ApplyPartitionRoles).
func (b *Broker) syncGroupShards(view *clusterView) {
	b.replication.groups.sync(b, view.topics[group.OffsetsTopic], shardLoader[*group.Coordinator]{
		load: func(_ context.Context, p *topicPartition, leaderEpoch int32) (*group.Coordinator, error) {
			return group.NewCoordinator(b.groupConfig(), &partitionOffsetStore{broker: b, partition: p, leaderEpoch: leaderEpoch})
		},
		start: func(c *group.Coordinator) { group.StartTicker(c) },
	})
}

// completeGroupTxn ends a producer's transaction in groupID's offsets (the
// local transaction coordinator's OffsetCommitter). In a cluster the
// group's __consumer_offsets partition may be led elsewhere: then the
// marker goes to its leader ([Broker.writeMarkersToLeaders]).
func (b *Broker) completeGroupTxn(ctx context.Context, groupID string, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) error {
	return b.writeMarkersToLeaders(ctx, markerWrite{producerID: producerID, producerEpoch: producerEpoch,
		coordinatorEpoch: coordinatorEpoch, commit: commit,
		partitions: []txn.TopicPartition{{Topic: group.OffsetsTopic, Partition: b.offsetsPartition(groupID)}}})
}

// completeOffsetsTxn is a transaction marker for partition index of the
// replicated __consumer_offsets (WriteTxnMarkers in a cluster): the shard
// leading it here completes the producer's offsets, appending the marker
// and applying them before it returns. NOT_LEADER_OR_FOLLOWER when the
// partition is not led here, COORDINATOR_LOAD_IN_PROGRESS while loading:
// the transaction coordinator retries.
func (b *Broker) completeOffsetsTxn(ctx context.Context, index int32, producerID int64, producerEpoch int16, commit bool) error {
	c, loaded, exists := b.replication.groups.lookup(index)
	switch {
	case !exists:
		return fmt.Errorf("%w: %s-%d is not led here", errNotLeader, group.OffsetsTopic, index)
	case !loaded:
		return fmt.Errorf("%s-%d: %w", group.OffsetsTopic, index, group.ErrCoordinatorLoadInProgress)
	}
	return c.CompleteTxn(ctx, producerID, producerEpoch, commit)
}

// listGroups lists the groups of every coordinator serving here, sorted
// by group id (in a cluster, the groups of the partitions led here; as in
// Kafka, a client asks every broker).
func (b *Broker) listGroups(filter group.ListFilter) ([]group.GroupListing, error) {
	var out []group.GroupListing
	for _, c := range b.replication.groups.loaded() {
		listed, err := c.ListGroups(filter)
		if err != nil && !errors.Is(err, group.ErrNotCoordinator) {
			return nil, err
		}
		out = append(out, listed...)
	}
	slices.SortFunc(out, func(x, y group.GroupListing) int { return compareStrings(x.Group, y.Group) })
	return out, nil
}

// deleteGroups deletes each group at its coordinator; errors are indexed
// like groupIDs.
func (b *Broker) deleteGroups(ctx context.Context, groupIDs []string) []error {
	errs := make([]error, len(groupIDs))
	for i, id := range groupIDs {
		errs[i] = b.groupsFor(id).DeleteGroups(ctx, []string{id})[0]
	}
	return errs
}

// partitionOffsetStore is a group shard's OffsetStore: one replicated
// __consumer_offsets partition, appended to as its leader at the shard's
// leader epoch with acks=all.
type partitionOffsetStore struct {
	broker      *Broker
	partition   *topicPartition
	leaderEpoch int32
}

// Append writes batch as the partition's leader and waits until the ISR
// has it.
func (s *partitionOffsetStore) Append(ctx context.Context, partition int32, batch group.StoreBatch) error {
	if partition != s.partition.Index() {
		return fmt.Errorf("%w: append for %s-%d to the store of %s", errInvalidRequest, group.OffsetsTopic, partition, s.partition.Name())
	}
	encoded, err := group.EncodeStoreBatch(batch)
	if err != nil {
		return fmt.Errorf("encode batch for %s: %w", s.partition.Name(), err)
	}
	return s.broker.appendInternalReplicated(ctx, s.partition, encoded, s.leaderEpoch)
}

// Replay reads the partition from its start to its end.
func (s *partitionOffsetStore) Replay(ctx context.Context, apply func(int32, group.StoreBatch) error) error {
	return group.ReplayLog(ctx, s.partition.Log(), s.partition.Index(), apply)
}

// Close does nothing: the partition belongs to the broker.
func (s *partitionOffsetStore) Close() error { return nil }
