package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/exactly-eos/exactly/broker/api"
	"github.com/exactly-eos/exactly/broker/partition"
)

// Reassignment on a broker. The controller decides (broker/quorum,
// reassign.go); a broker sees the result in the roles it applies:
//
//   - A broker added to a partition's replicas becomes a follower like any
//     other (ApplyPartitionRoles creates the local partition if needed). A
//     new replica of a partition whose oldest records are gone starts its
//     log at the leader's log start offset (Partition.RestartAsFollower).
//   - The leader keeps a follower entry for every replica of the current
//     role (BecomeLeader updates them when only the replica set changed), so
//     a new replica joins the ISR once caught up, by the usual rule; the
//     controller completes the reassignment when the whole target is in the
//     ISR.
//   - A broker removed from a partition's replicas stops fetching it, stops
//     serving it (its role no longer names it) and deletes its copy: the
//     partition is replaced by an empty one (retireReplica), as Kafka's
//     StopReplica with deletion does. Added back later, it copies the
//     partition anew.

// PartitionMover is the part of a TopicController that moves replicas
// and leaders (AlterPartitionReassignments, ElectLeaders). The quorum's
// controller implements it; a controller without it answers those APIs
// with INVALID_REQUEST.
type PartitionMover interface {
	// AlterReassignment starts (target non-nil) or cancels (nil) the
	// reassignment of one partition.
	AlterReassignment(ctx context.Context, topic string, partition int32, target []int32) error
	// ElectLeader elects the preferred replica of a partition, or with
	// unclean any live replica of a leaderless one.
	ElectLeader(ctx context.Context, topic string, partition int32, unclean bool) error
}

// errNoPartitionMover answers the reassignment APIs under a controller
// that cannot move partitions.
var errNoPartitionMover = fmt.Errorf("%w: this broker's controller cannot move partitions", errInvalidRequest)

// partitionMover returns the controller's PartitionMover.
func (b *Broker) partitionMover() (PartitionMover, error) {
	if b.replication == nil {
		return nil, errNoPartitionMover
	}
	mover, ok := b.replication.config.Topics.(PartitionMover)
	if !ok {
		return nil, errNoPartitionMover
	}
	return mover, nil
}

// reassignments lists the reassignments in progress from the applied
// roles; topics nil lists every topic's, else only those of the named
// partitions (topic → partition indexes).
func (b *Broker) reassignments(wanted map[string][]int32) []api.PartitionReassignment {
	view := b.replication.view.Load()
	if view == nil {
		return nil
	}
	var out []api.PartitionReassignment
	for _, name := range slices.Sorted(maps.Keys(view.topics)) {
		indexes, ok := wanted[name]
		if wanted != nil && !ok {
			continue
		}
		for _, role := range view.topics[name] {
			if len(role.AddingReplicas) == 0 && len(role.RemovingReplicas) == 0 {
				continue
			}
			if wanted != nil && !slices.Contains(indexes, role.Partition) {
				continue
			}
			out = append(out, api.PartitionReassignment{Topic: name, Partition: role.Partition,
				Replicas: slices.Clone(role.Replicas), AddingReplicas: slices.Clone(role.AddingReplicas),
				RemovingReplicas: slices.Clone(role.RemovingReplicas)})
		}
	}
	return out
}

// wasReplica reports whether p's applied role names this broker as a
// replica.
func (b *Broker) wasReplica(p *topicPartition) bool {
	role := p.Role()
	return role != nil && slices.Contains(role.Replicas, b.nodeID)
}

// heldSinceStart reports whether p has records but no role applied since
// this broker started: a copy kept from before a restart, during which a
// reassignment may have removed this broker from the partition.
func heldSinceStart(p *topicPartition) bool {
	role := p.Role()
	return role != nil && role.LeaderEpoch == -1 && role.Leader == -1 && p.Log().LogEndOffset() > 0
}

// retireReplica stops this broker's copy of a partition it is no longer a
// replica of and replaces it with an empty partition that serves nobody:
// the fetcher stops, waiting acks=all produces and fetches answer
// NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION and retry at the
// leader, and the records are deleted.
func (b *Broker) retireReplica(t *topic, p *topicPartition, role PartitionRole) error {
	b.replication.fetchers.remove(p)
	notReplica := &partition.Role{Leader: role.Leader, LeaderEpoch: role.LeaderEpoch, PartitionEpoch: role.PartitionEpoch,
		Replicas: slices.Clone(role.Replicas), ISR: slices.Clone(role.ISR)}
	if _, err := p.BecomeFollower(notReplica); err != nil {
		return fmt.Errorf("retire replica %s: %w", p.Name(), err)
	}
	b.metadataMu.Lock()
	defer b.metadataMu.Unlock()
	parts := b.partitionsOf(t)
	index := p.Index()
	if b.topicByName(t.name) != t || int(index) >= len(parts) || parts[index] != p {
		return nil // the topic was deleted or the partition replaced meanwhile
	}
	if err := p.Delete(); err != nil {
		return fmt.Errorf("retire replica %s: %w", p.Name(), err)
	}
	fresh, err := b.openPartition(t, index, true)
	if err != nil {
		return fmt.Errorf("retire replica %s: reopen empty: %w", p.Name(), err)
	}
	if _, err := fresh.BecomeFollower(notReplica); err != nil {
		return errors.Join(fmt.Errorf("retire replica %s", p.Name()), err, fresh.Delete())
	}
	replaced := slices.Clone(parts)
	replaced[index] = fresh
	b.topicsMu.Lock()
	t.partitions = replaced
	b.topicsMu.Unlock()
	b.logger.Info("replica removed by reassignment; its copy is deleted", "partition", p.Name(), "replicas", role.Replicas)
	return nil
}

// topicElsewhere returns NOT_LEADER_OR_FOLLOWER for a topic this broker
// holds no replica of but the cluster has (by id when byID, else by name),
// as Kafka answers from its full metadata: a client with an older leader
// (the partition moved away, or to this broker and back) refreshes its
// metadata and retries, where UNKNOWN_TOPIC_ID or UNKNOWN_TOPIC_OR_PARTITION
// would tell it the topic is gone. Nil when the cluster has no such topic.
func (b *Broker) topicElsewhere(id [16]byte, name string, byID bool) error {
	if b.replication == nil {
		return nil
	}
	view := b.replication.view.Load()
	if view == nil {
		return nil
	}
	for topicName, roles := range view.topics {
		if len(roles) == 0 {
			continue
		}
		if byID && roles[0].TopicID == id || !byID && topicName == name {
			return fmt.Errorf("%w: broker %d holds no replica of %s", errNotLeader, b.nodeID, topicName)
		}
	}
	return nil
}
