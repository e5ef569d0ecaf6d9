package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/broker/txn"
)

// Cluster roles: the controller's decisions about replica sets reach a
// broker through ApplyPartitionRoles, and a partition leader asks the
// controller to change its ISR through ISRChanger. The types are the
// contract shared with the metadata quorum (broker/quorum defines the same
// shapes; glue converts them). Replication is off when Config.Replication
// is nil: then no roles exist and every partition is led here at epoch 0.

// PartitionRole is the controller's decision about one partition replica set.
type PartitionRole struct {
	Topic          string
	TopicID        [16]byte
	Partition      int32
	Replicas       []int32 // assignment order; the preferred leader first
	ISR            []int32 // in-sync replicas (always includes Leader when Leader >= 0)
	Leader         int32   // -1: no leader (e.g. every ISR member is down, unclean election off)
	LeaderEpoch    int32   // bumped at every leader change (Kafka's leader epoch)
	PartitionEpoch int32   // bumped at every change of ISR or leader (KIP-497's partition epoch)
	// AddingReplicas and RemovingReplicas describe a reassignment in
	// progress (both empty otherwise): Replicas is the target followed by
	// the replicas being removed.
	AddingReplicas, RemovingReplicas []int32
}

// ClusterBroker is one broker as registered: Host and Port are its
// inter-broker listener, Listeners every listener by name (empty: Host
// and Port serve every client).
type ClusterBroker struct {
	ID        int32
	Host      string
	Port      int32
	Rack      string
	Listeners []ListenerEndpoint
	Fenced    bool // stopped heartbeating: not a leader, not in any ISR
}

// ISRChanger is how a partition leader asks the controller to change the ISR
// (Kafka's AlterPartition). The controller rejects a request whose LeaderEpoch or
// PartitionEpoch is stale (an error); on success it returns the new role,
// which is also delivered through ApplyPartitionRoles afterwards.
type ISRChanger interface {
	AlterPartition(ctx context.Context, topic string, partition, leaderEpoch, partitionEpoch int32, isr []int32) (PartitionRole, error)
}

// ReplicationConfig is the broker's controller: its own quorum's (set by
// Start), or one given in Config.Replication (the replication tests'
// fake). The lag after which a follower leaves the ISR is the broker
// property replica.lag.time.max.ms.
type ReplicationConfig struct {
	// ISR is the controller's AlterPartition; required.
	ISR ISRChanger
	// ResolveBroker returns the host:port of a broker id for the replica
	// fetchers; nil uses the brokers of the last ApplyPartitionRoles.
	ResolveBroker func(id int32) (string, error)
	// Topics is the controller client APIs create and delete topics
	// through (Broker.clusterCreateTopic, clusterDeleteTopic,
	// clusterCreatePartitions, ...); required.
	Topics TopicController
	// InternalReplicationFactor is the replication factor of
	// __consumer_offsets and __transaction_state (Kafka's
	// offsets.topic.replication.factor and
	// transaction.state.log.replication.factor). FindCoordinator answers
	// COORDINATOR_NOT_AVAILABLE until that many brokers are live, so a
	// cluster whose brokers are still registering does not create them
	// with fewer replicas for good. 0 means min(3, live brokers) at
	// creation.
	InternalReplicationFactor int32
	// Dial, if set, dials every connection this broker opens to another
	// broker (replica fetchers, the peer clients of Broker.peerRequest),
	// e.g. from a chosen source address so a partition proxy can cut this
	// broker off; nil dials as kgo does by default.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Alone says the cluster is this broker alone (a single broker run as
	// a cluster of one): no other broker ever connects to it, so its
	// inter-broker listener may be TLS or SASL like any other.
	Alone bool
	// ProducerIDs hands out the blocks of producer ids (the quorum's
	// AllocateProducerIds, quorumProducerIDs). Nil: the producer-ids file
	// in the data directory reserves them, unique on this broker only (a
	// test's broker with a fake controller).
	ProducerIDs ProducerIDBlocks
	// GroupConfigs holds the groups' dynamic configs (the quorum's,
	// quorumGroupConfigs). Nil: in memory, on this broker only (a test's
	// broker with a fake controller).
	GroupConfigs GroupConfigStore
}

// peerOptions are the kgo options of every client to another broker.
func (r *replication) peerOptions() []kgo.Opt {
	if r.config.Dial == nil {
		return nil
	}
	return []kgo.Opt{kgo.Dialer(r.config.Dial)}
}

// clusterView is the last applied cluster metadata (immutable; replaced
// whole by ApplyPartitionRoles): Metadata answers from it.
type clusterView struct {
	brokers []ClusterBroker
	// topics maps a topic name to its roles indexed by partition.
	topics map[string][]PartitionRole
}

// topicRoles returns the roles of a topic's partitions as last applied,
// nil when it has none (no roles applied yet, or a topic only this broker
// has on disk).
func (b *Broker) topicRoles(name string) []PartitionRole {
	view := b.replication.view.Load()
	if view == nil {
		return nil
	}
	return view.topics[name]
}

// partitionLeader is the current leader of a partition in the roles, -1
// when none (or unknown).
func (b *Broker) partitionLeader(topicName string, index int32) int32 {
	roles := b.topicRoles(topicName)
	if int(index) >= len(roles) {
		return -1
	}
	return roles[index].Leader
}

// replication is a broker's replication machinery (nil when off).
type replication struct {
	config ReplicationConfig
	// applyMu serializes ApplyPartitionRoles (outermost lock: it opens
	// partitions, takes metadataMu and the partitions' locks).
	applyMu sync.Mutex
	view    atomic.Pointer[clusterView]
	// fetchers runs one replica fetcher (replicaFetcher) per source leader.
	fetchers *fetcherManager
	// copyThrottle bounds the fetching of reassignments' copies
	// (follower.replication.throttled.rate); nil: no limit.
	copyThrottle *byteThrottle
	// isrWake asks the ISR maintenance loop to look now (a follower caught up).
	isrWake chan struct{}
	// groups and txns are the group and transaction coordinators of the
	// __consumer_offsets and __transaction_state partitions led here
	// (coordinatorShards); peers the clients to other brokers
	// (Broker.peerRequest).
	groups coordinatorShards[*group.Coordinator]
	txns   coordinatorShards[*txn.Coordinator]
	peers  peers
}

// brokerAddress resolves a broker id for the fetchers.
func (r *replication) brokerAddress(id int32) (string, error) {
	if r.config.ResolveBroker != nil {
		return r.config.ResolveBroker(id)
	}
	if view := r.view.Load(); view != nil {
		for _, broker := range view.brokers {
			if broker.ID == id {
				return net.JoinHostPort(broker.Host, strconv.Itoa(int(broker.Port))), nil
			}
		}
	}
	return "", fmt.Errorf("broker %d is not known", id)
}

// ApplyPartitionRoles makes this broker leader or follower of each listed
// partition of which it is a replica, creating the topic or partition
// locally when it does not have it yet, and records brokers and roles for
// Metadata. It is idempotent and may be called with the full set on every
// metadata change; a partition whose role did not change is left alone.
func (b *Broker) ApplyPartitionRoles(ctx context.Context, brokers []ClusterBroker, roles []PartitionRole) error {
	r := b.replication
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if b.ctx.Err() != nil {
		return fmt.Errorf("%w: roles not applied", errShuttingDown)
	}
	view := &clusterView{brokers: slices.Clone(brokers), topics: map[string][]PartitionRole{}}
	for _, role := range roles {
		list := view.topics[role.Topic]
		for int32(len(list)) <= role.Partition {
			list = append(list, PartitionRole{Topic: role.Topic, TopicID: role.TopicID, Partition: int32(len(list)), Leader: -1})
		}
		list[role.Partition] = role
		view.topics[role.Topic] = list
	}
	r.view.Store(view)
	var errs []error
	for name, list := range view.topics {
		t := b.topicByName(name)
		if slices.ContainsFunc(list, func(role PartitionRole) bool { return slices.Contains(role.Replicas, b.nodeID) }) {
			var err error
			if t, err = b.ensureLocalTopic(name, list[0].TopicID, int32(len(list))); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if t == nil || t.id != list[0].TopicID {
			continue
		}
		partitions := b.partitionsOf(t)
		for _, role := range list {
			if int(role.Partition) >= len(partitions) {
				continue
			}
			p := partitions[role.Partition]
			var err error
			switch {
			case slices.Contains(role.Replicas, b.nodeID):
				err = b.applyRole(p, role)
			case b.wasReplica(p) || heldSinceStart(p):
				err = b.retireReplica(t, p, role) // reassigned away (maybe while this broker was down)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	b.syncGroupShards(view)
	b.syncTxnShards(view)
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// ensureLocalTopic returns the local topic of that name and id with at
// least partitions partitions, creating or growing it.
func (b *Broker) ensureLocalTopic(name string, id [16]byte, partitions int32) (*topic, error) {
	t := b.topicByName(name)
	if t == nil {
		var overrides map[string]string
		if isInternalTopicName(name) {
			overrides = b.internalTopicOverrides(name, len(b.topicRoles(name)[0].Replicas))
		}
		created, err := b.createTopicWithID(name, id, partitions, overrides, false)
		if err != nil && !errors.Is(err, errTopicExists) {
			return nil, fmt.Errorf("create replica of topic %s: %w", name, err)
		}
		if t = created; t == nil {
			t = b.topicByName(name)
		}
	}
	if t == nil {
		return nil, fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	if t.id != id {
		return nil, fmt.Errorf("topic %s exists here with another id (deleted and recreated?); not replicating it", name)
	}
	if current := int32(len(b.partitionsOf(t))); current < partitions {
		if err := b.addPartitions(t, partitions, false); err != nil {
			return nil, fmt.Errorf("grow replica of topic %s: %w", name, err)
		}
	}
	return t, nil
}

// applyRole makes p leader or follower as role says.
func (b *Broker) applyRole(p *topicPartition, role PartitionRole) error {
	next := &partition.Role{Leader: role.Leader, LeaderEpoch: role.LeaderEpoch, PartitionEpoch: role.PartitionEpoch,
		Replicas: slices.Clone(role.Replicas), ISR: slices.Clone(role.ISR)}
	if role.Leader == b.nodeID {
		b.replication.fetchers.remove(p)
		return p.BecomeLeader(next)
	}
	// A replica added back by a reassignment fetches again even if the
	// leader and epoch it last saw (as a non-replica) are unchanged.
	rejoined := !b.wasReplica(p)
	changed, err := p.BecomeFollower(next)
	if err != nil || !changed && !rejoined {
		return err
	}
	b.replication.fetchers.remove(p)
	if role.Leader >= 0 {
		b.replication.fetchers.add(p, role.Leader, role.LeaderEpoch)
	}
	return nil
}
