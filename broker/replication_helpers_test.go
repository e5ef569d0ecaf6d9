package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// A test cluster: brokers in-process on loopback, each with its own data
// directory, and a fake controller in place of the metadata quorum. The
// controller holds every partition's role and every topic's configs,
// answers AlterPartition with Kafka's epoch checks, serves the brokers'
// topic administration (a TopicController: CreateTopics, the internal
// topics' creation, AlterConfigs, ...), and pushes the full set of roles
// and configs to every live broker (ApplyPartitionRoles,
// ApplyTopicConfigs) after each change, including when a test kills a
// broker: it then elects the next live ISR member as leader with the
// leader epoch bumped. It hands out the producer-id blocks too.

// errStaleEpochs is the fake controller's refusal of an AlterPartition
// with an old leader or partition epoch.
var errStaleEpochs = errors.New("fake controller: stale leader or partition epoch")

// testCluster is a fake controller and the brokers it controls.
type testCluster struct {
	t          *testing.T
	properties map[string]string
	dirs       map[int32]string

	// publishMu orders deliveries of roles, so brokers see them in order.
	publishMu sync.Mutex
	mu        sync.Mutex // guards the fields below
	brokers   map[int32]*Broker
	listens   map[int32]string // each broker's address, kept across restarts
	roles     map[string][]PartitionRole
	// configs are every topic's config overrides (nil: none).
	configs map[string]map[string]string
	// exclude lists brokers that publishes skip (a broker cut off from
	// the controller, for divergence tests).
	exclude map[int32]bool
	// metrics are brokers' metrics, set before they start (nil: none).
	metrics map[int32]*metrics.Broker
	// nextProducerID is the start of the next producer-id block
	// (AllocateProducerIDs).
	nextProducerID int64
}

// startCluster starts n brokers with ids 1..n and the fake controller.
func startCluster(t *testing.T, n int, properties map[string]string) *testCluster {
	t.Helper()
	return startClusterWith(t, n, properties, nil)
}

// startClusterWith is startCluster with setup run on the cluster before
// its brokers start (to set metrics).
func startClusterWith(t *testing.T, n int, properties map[string]string, setup func(*testCluster)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, properties: properties, dirs: map[int32]string{}, brokers: map[int32]*Broker{}, listens: map[int32]string{},
		roles: map[string][]PartitionRole{}, configs: map[string]map[string]string{}, exclude: map[int32]bool{}}
	if setup != nil {
		setup(c)
	}
	root := t.TempDir()
	for id := int32(1); id <= int32(n); id++ {
		c.dirs[id] = filepath.Join(root, "broker-"+strconv.Itoa(int(id)))
		c.startBroker(id)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		brokers := c.brokers
		c.brokers = map[int32]*Broker{}
		c.mu.Unlock()
		for _, b := range brokers {
			if err := b.Close(); err != nil {
				t.Errorf("close broker %d: %v", b.nodeID, err)
			}
		}
	})
	c.publish()
	return c
}

// startBroker starts (or restarts) broker id over its data directory.
func (c *testCluster) startBroker(id int32) *Broker {
	c.t.Helper()
	level := slog.LevelWarn
	if os.Getenv("BROKER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("node", id)
	properties := map[string]string{"auto.create.topics.enable": "false", "replica.lag.time.max.ms": "3000"}
	for k, v := range c.properties {
		properties[k] = v
	}
	// A restarted broker listens where it did before, as a real one
	// would: a client that knows only the old addresses (its metadata not
	// refreshed between restarts on a busy machine) must still find it.
	// Port 0 if that address was taken meanwhile.
	start := func(listen string) (*Broker, error) {
		return Start(context.Background(), Config{NodeID: id, Listen: listen, DataDir: c.dirs[id],
			Properties: properties, Logger: logger, Replication: &ReplicationConfig{ISR: c, Topics: c, ProducerIDs: c}, Metrics: c.metricsOf(id)})
	}
	c.mu.Lock()
	listen := c.listens[id]
	c.mu.Unlock()
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	b, err := start(listen)
	if err != nil && listen != "127.0.0.1:0" {
		b, err = start("127.0.0.1:0")
	}
	if err != nil {
		c.t.Fatalf("start broker %d: %v", id, err)
	}
	c.mu.Lock()
	c.brokers[id] = b
	c.listens[id] = b.Addr()
	c.mu.Unlock()
	return b
}

// AllocateProducerIDs hands out the brokers' producer-id blocks, as the
// quorum does (ProducerIDBlocks), from one counter kept across restarts.
func (c *testCluster) AllocateProducerIDs(_ context.Context, floor int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := max(c.nextProducerID, floor)
	c.nextProducerID = start + producerIDBlockSize
	return start, nil
}

// metricsOf is broker id's metrics (nil: none).
func (c *testCluster) metricsOf(id int32) *metrics.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.metrics[id]
}

// broker returns live broker id (nil if down).
func (c *testCluster) broker(id int32) *Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokers[id]
}

// addrs lists the live brokers' addresses.
func (c *testCluster) addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, b := range c.brokers {
		out = append(out, b.Addr())
	}
	return out
}

// role returns a copy of a partition's role.
func (c *testCluster) role(topic string, partition int32) PartitionRole {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cloneRole(c.roles[topic][partition])
}

func cloneRole(r PartitionRole) PartitionRole {
	r.Replicas, r.ISR = slices.Clone(r.Replicas), slices.Clone(r.ISR)
	return r
}

// createTopic assigns partitions over every broker (replication factor
// = cluster size), partition i led by broker i%n+1, and publishes.
func (c *testCluster) createTopic(name string, partitions int32) {
	c.t.Helper()
	if err := c.CreateTopic(context.Background(), name, partitions, int32(len(c.dirs)), nil); err != nil {
		c.t.Fatalf("create topic %s: %v", name, err)
	}
}

// assignLocked places partitions [from, to) of a topic of replication
// factor rf over the brokers in id order, partition i's replicas starting
// at the i%n-th broker, which leads it (caller holds mu).
func (c *testCluster) assignLocked(name string, topicID [16]byte, from, to, rf int32) []PartitionRole {
	var ids []int32
	for id := range c.dirs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var roles []PartitionRole
	for i := from; i < to; i++ {
		replicas := append(slices.Clone(ids[int(i)%len(ids):]), ids[:int(i)%len(ids)]...)[:rf]
		roles = append(roles, PartitionRole{Topic: name, TopicID: topicID, Partition: i, Replicas: replicas,
			ISR: slices.Clone(replicas), Leader: replicas[0]})
	}
	return roles
}

// CreateTopic is the fake controller's topic creation (TopicController):
// replication factor -1 is the cluster's size.
func (c *testCluster) CreateTopic(ctx context.Context, name string, partitions, replicationFactor int32, configs map[string]string) error {
	c.mu.Lock()
	if replicationFactor == -1 {
		replicationFactor = int32(len(c.dirs))
	}
	switch {
	case c.roles[name] != nil:
		c.mu.Unlock()
		return fmt.Errorf("%w: fake controller: %s", kerr.TopicAlreadyExists, name)
	case partitions < 1:
		c.mu.Unlock()
		return fmt.Errorf("%w: fake controller: %d partitions", kerr.InvalidPartitions, partitions)
	case replicationFactor < 1 || int(replicationFactor) > len(c.dirs):
		c.mu.Unlock()
		return fmt.Errorf("%w: fake controller: replication factor %d of %d brokers", kerr.InvalidReplicationFactor, replicationFactor, len(c.dirs))
	}
	c.roles[name] = c.assignLocked(name, newRandomID(), 0, partitions, replicationFactor)
	c.configs[name] = maps.Clone(configs)
	c.mu.Unlock()
	c.publish()
	return nil
}

// CreatePartitions is the fake controller's partition growth
// (TopicController): the new partitions get the first one's replication
// factor.
func (c *testCluster) CreatePartitions(ctx context.Context, name string, count int32) error {
	c.mu.Lock()
	roles := c.roles[name]
	switch {
	case roles == nil:
		c.mu.Unlock()
		return fmt.Errorf("%w: fake controller: %s", kerr.UnknownTopicOrPartition, name)
	case int(count) <= len(roles):
		c.mu.Unlock()
		return fmt.Errorf("%w: fake controller: %s has %d partitions, asked %d", kerr.InvalidPartitions, name, len(roles), count)
	}
	c.roles[name] = append(roles, c.assignLocked(name, roles[0].TopicID, int32(len(roles)), count, int32(len(roles[0].Replicas)))...)
	c.mu.Unlock()
	c.publish()
	return nil
}

// DeleteTopic is the fake controller's topic deletion (TopicController):
// every live broker removes its replicas.
func (c *testCluster) DeleteTopic(ctx context.Context, name string) error {
	c.mu.Lock()
	if c.roles[name] == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: fake controller: %s", kerr.UnknownTopicOrPartition, name)
	}
	delete(c.roles, name)
	delete(c.configs, name)
	var targets []*Broker
	for id, b := range c.brokers {
		if !c.exclude[id] {
			targets = append(targets, b)
		}
	}
	c.mu.Unlock()
	c.publish()
	for _, b := range targets {
		if err := b.RemoveTopics([]string{name}); err != nil {
			return fmt.Errorf("fake controller: remove %s on broker %d: %w", name, b.nodeID, err)
		}
	}
	return nil
}

// TopicConfigs is the fake controller's view of a topic's configs
// (TopicController).
func (c *testCluster) TopicConfigs(name string) (map[string]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.roles[name] == nil {
		return nil, false
	}
	return maps.Clone(c.configs[name]), true
}

// SetTopicConfigs is the fake controller's config change
// (TopicController).
func (c *testCluster) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	c.mu.Lock()
	if c.roles[name] == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: fake controller: %s", kerr.UnknownTopicOrPartition, name)
	}
	c.configs[name] = maps.Clone(configs)
	c.mu.Unlock()
	c.publish()
	return nil
}

// AlterPartition is the fake controller's ISR change (ISRChanger).
func (c *testCluster) AlterPartition(ctx context.Context, topic string, partition, leaderEpoch, partitionEpoch int32, isr []int32) (PartitionRole, error) {
	c.mu.Lock()
	roles := c.roles[topic]
	if int(partition) >= len(roles) {
		c.mu.Unlock()
		return PartitionRole{}, fmt.Errorf("fake controller: unknown partition %s-%d", topic, partition)
	}
	role := &roles[partition]
	if role.LeaderEpoch != leaderEpoch || role.PartitionEpoch != partitionEpoch {
		c.mu.Unlock()
		return PartitionRole{}, fmt.Errorf("%w: %s-%d at (%d, %d), asked (%d, %d)", errStaleEpochs, topic, partition,
			role.LeaderEpoch, role.PartitionEpoch, leaderEpoch, partitionEpoch)
	}
	for _, id := range isr {
		if c.brokers[id] == nil {
			c.mu.Unlock()
			return PartitionRole{}, fmt.Errorf("fake controller: broker %d in the proposed ISR is down", id)
		}
	}
	role.ISR = slices.Clone(isr)
	role.PartitionEpoch++
	out := cloneRole(*role)
	c.mu.Unlock()
	c.publish()
	return out, nil
}

// publish delivers the brokers and every role to every live broker not
// excluded.
func (c *testCluster) publish() {
	c.publishMu.Lock()
	defer c.publishMu.Unlock()
	c.mu.Lock()
	var listeners []ClusterBroker
	var targets []*Broker
	for id, b := range c.brokers {
		host, port, _ := net.SplitHostPort(b.Addr())
		portNumber, _ := strconv.Atoi(port)
		listeners = append(listeners, ClusterBroker{ID: id, Host: host, Port: int32(portNumber)})
		if !c.exclude[id] {
			targets = append(targets, b)
		}
	}
	var roles []PartitionRole
	for _, list := range c.roles {
		for _, role := range list {
			roles = append(roles, cloneRole(role))
		}
	}
	configs := map[string]map[string]string{}
	for name, config := range c.configs {
		configs[name] = maps.Clone(config)
	}
	c.mu.Unlock()
	for _, b := range targets {
		if err := b.ApplyPartitionRoles(context.Background(), listeners, roles); err != nil {
			c.t.Logf("apply roles on broker %d: %v", b.nodeID, err)
		}
		if err := b.ApplyTopicConfigs(configs); err != nil {
			c.t.Logf("apply configs on broker %d: %v", b.nodeID, err)
		}
	}
}

// kill closes broker id and, as a controller fencing it would, removes it
// from every ISR (keeping a last member) and moves each partition it led
// to the next ISR member (leader epoch +1), or to no leader.
func (c *testCluster) kill(id int32) {
	c.t.Helper()
	c.mu.Lock()
	b := c.brokers[id]
	delete(c.brokers, id)
	c.mu.Unlock()
	if b == nil {
		c.t.Fatalf("kill broker %d: not running", id)
	}
	if err := b.Close(); err != nil {
		c.t.Errorf("close broker %d: %v", id, err)
	}
	c.mu.Lock()
	for _, list := range c.roles {
		for i := range list {
			c.electWithoutLocked(&list[i], id)
		}
	}
	c.mu.Unlock()
	c.publish()
}

// electWithoutLocked takes broker id out of role's ISR and leadership
// (caller holds mu).
func (c *testCluster) electWithoutLocked(role *PartitionRole, id int32) {
	changed := false
	if len(role.ISR) > 1 && slices.Contains(role.ISR, id) {
		role.ISR = slices.DeleteFunc(slices.Clone(role.ISR), func(member int32) bool { return member == id })
		changed = true
	}
	if role.Leader == id {
		role.Leader = -1
		for _, member := range role.ISR {
			if member != id && c.brokers[member] != nil {
				role.Leader = member
				break
			}
		}
		role.LeaderEpoch++
		changed = true
	}
	if changed {
		role.PartitionEpoch++
	}
}

// restart starts broker id again; a leaderless partition whose ISR holds
// it elects it.
func (c *testCluster) restart(id int32) *Broker {
	c.t.Helper()
	b := c.startBroker(id)
	c.mu.Lock()
	for _, list := range c.roles {
		for i := range list {
			role := &list[i]
			if role.Leader < 0 && slices.Contains(role.ISR, id) {
				role.Leader = id
				role.LeaderEpoch++
				role.PartitionEpoch++
			}
		}
	}
	c.mu.Unlock()
	c.publish()
	return b
}

// localPartition returns broker id's replica of topic-partition.
func (c *testCluster) localPartition(id int32, topic string, partition int32) *topicPartition {
	c.t.Helper()
	b := c.broker(id)
	if b == nil {
		c.t.Fatalf("broker %d is down", id)
	}
	t := b.topicByName(topic)
	if t == nil {
		c.t.Fatalf("broker %d has no topic %s", id, topic)
	}
	p, err := b.partitionOf(t, partition)
	if err != nil {
		c.t.Fatalf("broker %d: %v", id, err)
	}
	return p
}

// client returns a franz-go client of the live brokers, closed at the end.
func (c *testCluster) client(options ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	options = append([]kgo.Opt{kgo.SeedBrokers(c.addrs()...), kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })}, options...)
	client, err := kgo.NewClient(options...)
	if err != nil {
		c.t.Fatalf("new client: %v", err)
	}
	c.t.Cleanup(client.Close)
	return client
}

// waitCaughtUp waits until every live replica of topic-partition has the
// leader's log end and the leader's high watermark is there.
func (c *testCluster) waitCaughtUp(topic string, partition int32) {
	c.t.Helper()
	testutil.Until(c.t, 20*time.Second, fmt.Sprintf("%s-%d replicas caught up", topic, partition), func() bool {
		role := c.role(topic, partition)
		if role.Leader < 0 || c.broker(role.Leader) == nil {
			return false
		}
		leader := c.localPartition(role.Leader, topic, partition)
		end := leader.Log().LogEndOffset()
		if leader.HighWatermark() != end {
			return false
		}
		for _, id := range role.Replicas {
			if c.broker(id) != nil && c.localPartition(id, topic, partition).Log().LogEndOffset() != end {
				return false
			}
		}
		return true
	})
}

// produceAcks sends records to topic-partition with the given acks over a
// raw connection and returns the partition's answer.
func (r *rawConnection) produceAcks(topic string, partition int32, records []byte, acks int16) kmsg.ProduceResponseTopicPartition {
	r.t.Helper()
	const version = 9
	r.request(produceRequest(topic, partition, records, acks), version)
	resp := kmsg.NewPtrProduceResponse()
	r.response(resp, version)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		r.t.Fatalf("produce response has %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}
