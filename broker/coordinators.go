package broker

import (
	"context"
	"fmt"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
)

// Finding coordinators: which broker coordinates a consumer group or a
// transactional id, and at which address a client is told to reach it.
// On a single node that is this broker for every key (it leads every
// partition of __consumer_offsets and __transaction_state); in a cluster
// it is the current leader of the key's partition of that replicated
// internal topic, created on first use ([Broker.clusterFindCoordinator]).
// The FindCoordinator handler decodes, authorizes and encodes around
// [Broker.findCoordinator].

// coordinatorKind is what a coordinator key names: a FindCoordinator key
// type.
type coordinatorKind int8

// The coordinator kinds, numbered as FindCoordinator's key types.
const (
	// coordinatorGroup is a consumer group's coordinator.
	coordinatorGroup coordinatorKind = 0
	// coordinatorTransaction is a transactional id's coordinator.
	coordinatorTransaction coordinatorKind = 1
)

// coordinatorAnswer is the coordinator of one key: a broker and the
// address a client is told, or the error why none is named.
type coordinatorAnswer struct {
	nodeID int32
	host   string
	port   int32
	err    error
}

// findCoordinator finds the coordinator of a key for a client connected
// through c: this broker at c's listener's advertised address, or in a
// cluster the leader of the key's internal partition.
func (b *Broker) findCoordinator(ctx context.Context, c *connection, kind coordinatorKind, key string) coordinatorAnswer {
	switch {
	case kind == coordinatorGroup && b.clusterGroups():
		partitions := b.config.settings.OffsetsTopicPartitions
		return b.clusterFindCoordinator(ctx, c, group.OffsetsTopic, partitions, int32(group.PartitionFor(key, int(partitions))))
	case kind == coordinatorTransaction && b.clusterGroups():
		partitions := b.config.settings.TransactionStatePartitions
		return b.clusterFindCoordinator(ctx, c, txn.TransactionStateTopic, partitions, int32(txn.PartitionFor(key, int(partitions))))
	}
	host, port := c.advertised()
	return coordinatorAnswer{nodeID: b.nodeID, host: host, port: port}
}

// clusterFindCoordinator finds a coordinator in a cluster: the leader
// of partition index of the internal topic (created on first use),
// COORDINATOR_NOT_AVAILABLE while it has no leader.
func (b *Broker) clusterFindCoordinator(ctx context.Context, c *connection, topicName string, partitions int32, index int32) coordinatorAnswer {
	fail := func(err error) coordinatorAnswer { return coordinatorAnswer{err: err} }
	if err := b.ensureInternalTopic(ctx, topicName, partitions); err != nil {
		return fail(err)
	}
	roles := b.topicRoles(topicName)
	if int(index) >= len(roles) || roles[index].Leader < 0 {
		return fail(fmt.Errorf("%w: %s-%d has no leader", errNoCoordinator, topicName, index))
	}
	leader := roles[index].Leader
	for _, broker := range b.replication.view.Load().brokers {
		if broker.ID != leader {
			continue
		}
		if host, port, ok := b.endpointFor(c, broker); ok {
			return coordinatorAnswer{nodeID: leader, host: host, port: port}
		}
		return fail(fmt.Errorf("%w: leader %d of %s-%d has no listener of this connection's name", errNoCoordinator, leader, topicName, index))
	}
	return fail(fmt.Errorf("%w: leader %d of %s-%d is not registered", errNoCoordinator, leader, topicName, index))
}
