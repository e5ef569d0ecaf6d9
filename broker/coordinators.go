package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/exactly-eos/exactly/broker/api"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
)

// Finding coordinators: which broker coordinates a consumer group or a
// transactional id, and at which address a client is told to reach it.
// It is the current leader of the key's partition of the replicated
// internal topic (__consumer_offsets, __transaction_state), created on
// first use ([Broker.clusterFindCoordinator]); in a cluster of one, this
// broker for every key.
// The FindCoordinator handler (package api) decodes, authorizes and
// encodes around [Broker.findCoordinator], through [clusterService.Coordinator].

// coordinatorKind is what a coordinator key names: a FindCoordinator key
// type.
type coordinatorKind int8

// The coordinator kinds, numbered as FindCoordinator's key types.
const (
	// coordinatorGroup is a consumer group's coordinator.
	coordinatorGroup = coordinatorKind(api.KeyTypeGroup)
	// coordinatorTransaction is a transactional id's coordinator.
	coordinatorTransaction = coordinatorKind(api.KeyTypeTransaction)
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
// through the listener named listener: this broker at that listener's
// advertised address, or in a cluster the leader of the key's internal
// partition ([Broker.endpointFor]).
func (b *Broker) findCoordinator(ctx context.Context, listener string, kind coordinatorKind, key string) coordinatorAnswer {
	if kind == coordinatorTransaction {
		return b.clusterFindCoordinator(ctx, listener, key, coordinatorTopic{
			name: txn.TransactionStateTopic, partitions: b.config.settings.TransactionStatePartitions,
			partitionOf: b.transactionStatePartition, awaitLoaded: b.replication.txns.awaitLoaded,
		})
	}
	return b.clusterFindCoordinator(ctx, listener, key, coordinatorTopic{
		name: group.OffsetsTopic, partitions: b.config.settings.OffsetsTopicPartitions,
		partitionOf: b.offsetsPartition, awaitLoaded: b.replication.groups.awaitLoaded,
	})
}

// coordinatorTopic is the internal topic of one coordinator kind.
type coordinatorTopic struct {
	name string
	// partitions is the partition count it is created with.
	partitions int32
	// partitionOf is the partition of a key (once the topic exists).
	partitionOf func(key string) int32
	// awaitLoaded waits for this broker's coordinator of a partition it
	// leads to be loaded (coordinatorShards.awaitLoaded).
	awaitLoaded func(ctx context.Context, index int32)
}

// coordinatorLoadWait bounds how long FindCoordinator waits for the
// coordinator it names here to be loaded.
const coordinatorLoadWait = 2 * time.Second

// clusterFindCoordinator finds a coordinator in a cluster: the leader
// of key's partition of the internal topic (created on first use);
// COORDINATOR_NOT_AVAILABLE while it has no leader. When that is this
// broker, it waits (up to coordinatorLoadWait) for its coordinator to be
// loaded, so the client's next request — on a topic created just now,
// with nothing to replay, as a single broker's first — is not answered
// COORDINATOR_LOAD_IN_PROGRESS and sent to back off.
func (b *Broker) clusterFindCoordinator(ctx context.Context, listener, key string, topic coordinatorTopic) coordinatorAnswer {
	fail := func(err error) coordinatorAnswer { return coordinatorAnswer{err: err} }
	topicName := topic.name
	if err := b.ensureInternalTopic(ctx, topicName, topic.partitions); err != nil {
		return fail(err)
	}
	index := topic.partitionOf(key)
	roles := b.topicRoles(topicName)
	if int(index) >= len(roles) || roles[index].Leader < 0 {
		return fail(fmt.Errorf("%w: %s-%d has no leader", errNoCoordinator, topicName, index))
	}
	leader := roles[index].Leader
	if leader == b.nodeID {
		wait, cancel := context.WithTimeout(ctx, coordinatorLoadWait)
		topic.awaitLoaded(wait, index)
		cancel()
	}
	for _, broker := range b.replication.view.Load().brokers {
		if broker.ID != leader {
			continue
		}
		if host, port, ok := b.endpointFor(listener, broker); ok {
			return coordinatorAnswer{nodeID: leader, host: host, port: port}
		}
		return fail(fmt.Errorf("%w: leader %d of %s-%d has no listener of this connection's name", errNoCoordinator, leader, topicName, index))
	}
	return fail(fmt.Errorf("%w: leader %d of %s-%d is not registered", errNoCoordinator, leader, topicName, index))
}
