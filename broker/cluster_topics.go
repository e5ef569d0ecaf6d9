package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Clustered topic administration: the client APIs that create, delete or
// configure topics (CreateTopics, DeleteTopics, CreatePartitions,
// AlterConfigs, auto-creation by Metadata and Produce) ask the controller
// (ReplicationConfig.Topics), and the local replicas appear, change or go
// when the controller's decision comes back through ApplyPartitionRoles,
// ApplyTopicConfigs and RemoveTopics (createTopicWithID, addPartitions,
// setTopicConfigs, deleteTopic).

// TopicController creates and deletes topics in the cluster's metadata.
// Each method returns once this broker has applied the change
// (ApplyPartitionRoles has run with roles that hold it), so the caller can
// answer from the roles. An error may wrap a *kerr.Error to choose the
// Kafka error code the client gets (errorCode honours it).
type TopicController interface {
	// CreateTopic creates a topic of partitions partitions and
	// replicationFactor replicas each (-1: the cluster's default).
	CreateTopic(ctx context.Context, name string, partitions, replicationFactor int32, configs map[string]string) error
	// CreatePartitions raises the topic's partition count to count.
	CreatePartitions(ctx context.Context, name string, count int32) error
	// DeleteTopic deletes the topic.
	DeleteTopic(ctx context.Context, name string) error
	// TopicConfigs returns the topic's config overrides as the cluster's
	// metadata holds them; false when the metadata has no such topic.
	TopicConfigs(name string) (map[string]string, bool)
	// SetTopicConfigs replaces the topic's config overrides; every
	// replica applies them (ApplyTopicConfigs).
	SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error
}

// clusterAdminTimeout bounds one controller call of a client request.
const clusterAdminTimeout = 30 * time.Second

// clusterTopics returns the topic controller.
func (b *Broker) clusterTopics() TopicController { return b.replication.config.Topics }

// AdvertisedAddr returns the host:port of the inter-broker listener
// (inter.broker.listener.name) as advertised: Config.Advertised, or the
// listener's address (an unspecified IP replaced by the host name). A
// cluster member registers it for the other brokers.
func (b *Broker) AdvertisedAddr() string {
	return net.JoinHostPort(b.advertisedHost, strconv.Itoa(int(b.advertisedPort)))
}

// ListenerEndpoint is one named listener of a broker as advertised.
type ListenerEndpoint struct {
	Name string
	Host string
	Port int32
}

// AdvertisedListeners returns every listener of the broker with the
// address it advertises, in the listeners setting's order. A cluster
// member registers them, so that a client is told each broker's endpoint
// of the listener it came in on.
func (b *Broker) AdvertisedListeners() []ListenerEndpoint {
	out := make([]ListenerEndpoint, len(b.listeners))
	for i, l := range b.listeners {
		out[i] = ListenerEndpoint{Name: l.name, Host: l.advertisedHost, Port: l.advertisedPort}
	}
	return out
}

// endpointFor is the address of broker cb a client connected through the
// listener named listener ("" for a connection made without one, in
// tests: PLAINTEXT) is told: that listener's own address for this broker,
// else cb's endpoint of the listener of that name; ok is false when cb has
// no listener of that name (Kafka leaves such a broker out). A
// registration without listeners serves its one address to everyone.
func (b *Broker) endpointFor(listener string, cb ClusterBroker) (host string, port int32, ok bool) {
	if cb.ID == b.nodeID {
		host, port = b.advertised(listener)
		return host, port, true
	}
	if len(cb.Listeners) == 0 {
		return cb.Host, cb.Port, true
	}
	name := "PLAINTEXT"
	if listener != "" {
		name = listener
	}
	for _, e := range cb.Listeners {
		if e.Name == name {
			return e.Host, e.Port, true
		}
	}
	return "", -1, false
}

// RemoveTopics closes and deletes the local replicas of the named topics
// (ones the controller deleted); names not present here are skipped.
// Internal topics are never removed. It is for the glue that applies the
// controller's metadata, alongside ApplyPartitionRoles.
func (b *Broker) RemoveTopics(names []string) error {
	var errs []error
	for _, name := range names {
		if isInternalTopicName(name) {
			continue
		}
		t := b.topicByName(name)
		if t == nil {
			continue
		}
		if err := b.deleteTopic(t); err != nil && !errors.Is(err, errUnknownTopic) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// clusterCreateTopic is CreateTopics for one topic in a cluster: checks,
// the controller's create (unless validateOnly), and the answer from the
// roles. Explicit replica assignments are not supported.
func (b *Broker) clusterCreateTopic(ctx context.Context, rt kmsg.CreateTopicsRequestTopic, validateOnly bool) (kmsg.CreateTopicsResponseTopic, error) {
	created := kmsg.NewCreateTopicsResponseTopic()
	created.Topic = rt.Topic
	if len(rt.ReplicaAssignment) > 0 {
		return created, fmt.Errorf("%w: explicit replica assignments are not supported in a cluster; give partitions and replication factor", errInvalidAssignment)
	}
	if err := validateTopicName(rt.Topic); err != nil {
		return created, err
	}
	if isInternalTopicName(rt.Topic) {
		return created, fmt.Errorf("%w: %s is an internal topic", errTopicExists, rt.Topic)
	}
	partitions := rt.NumPartitions
	if partitions == -1 {
		partitions = b.config.settings.NumPartitions
	}
	if partitions < 1 {
		return created, fmt.Errorf("%w: %d (must be at least 1)", errInvalidPartitions, partitions)
	}
	if rt.ReplicationFactor == 0 || rt.ReplicationFactor < -1 {
		return created, fmt.Errorf("%w: %d", errInvalidReplication, rt.ReplicationFactor)
	}
	overrides := map[string]string{}
	for _, config := range rt.Configs {
		if config.Value != nil {
			overrides[config.Name] = *config.Value
		}
	}
	if err := validateTopicConfigs(overrides); err != nil {
		return created, fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	created.NumPartitions, created.ReplicationFactor = partitions, rt.ReplicationFactor
	if !validateOnly {
		ctx, cancel := context.WithTimeout(ctx, clusterAdminTimeout)
		defer cancel()
		if err := b.clusterTopics().CreateTopic(ctx, rt.Topic, partitions, int32(rt.ReplicationFactor), overrides); err != nil {
			return created, err
		}
		if roles := b.topicRoles(rt.Topic); len(roles) > 0 {
			created.TopicID = roles[0].TopicID
			created.NumPartitions = int32(len(roles))
			created.ReplicationFactor = int16(len(roles[0].Replicas))
		}
	}
	for _, entry := range b.describeTopicConfigs(b.config.newTopicConfig(overrides), func(string) bool { return true }, false, false) {
		config := kmsg.NewCreateTopicsResponseTopicConfig()
		config.Name, config.Value, config.ReadOnly = entry.Name, entry.Value, entry.ReadOnly
		config.Source, config.IsSensitive = int8(entry.Source), entry.IsSensitive
		created.Configs = append(created.Configs, config)
	}
	return created, nil
}

// clusterCreatePartitions is CreatePartitions for one topic in a cluster.
func (b *Broker) clusterCreatePartitions(ctx context.Context, rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	if rt.Assignment != nil {
		return fmt.Errorf("%w: explicit replica assignments are not supported in a cluster", errInvalidAssignment)
	}
	if isInternalTopicName(rt.Topic) {
		return fmt.Errorf("%w: keys map to %s's partitions by their count; it cannot change", errInternalTopic, rt.Topic)
	}
	roles := b.topicRoles(rt.Topic)
	if roles == nil {
		return fmt.Errorf("%w: %s", errUnknownTopic, rt.Topic)
	}
	if rt.Count <= int32(len(roles)) {
		return fmt.Errorf("%w: topic %s has %d partitions; the new count %d must be larger", errInvalidPartitions, rt.Topic, len(roles), rt.Count)
	}
	if validateOnly {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, clusterAdminTimeout)
	defer cancel()
	return b.clusterTopics().CreatePartitions(ctx, rt.Topic, rt.Count)
}

// clusterDeleteTopic is DeleteTopics for one topic (by name, or by id
// when name is empty) in a cluster; it returns the topic's name and id.
func (b *Broker) clusterDeleteTopic(ctx context.Context, name string, id [16]byte) (string, [16]byte, error) {
	if name == "" {
		found := false
		if name, found = b.clusterTopicByID(id); !found {
			return "", id, errUnknownTopicID
		}
	}
	if isInternalTopicName(name) {
		return name, id, fmt.Errorf("%w: %s belongs to a coordinator; clients cannot delete it", errInternalTopic, name)
	}
	roles := b.topicRoles(name)
	if roles == nil {
		return name, id, fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	id = roles[0].TopicID
	ctx, cancel := context.WithTimeout(ctx, clusterAdminTimeout)
	defer cancel()
	return name, id, b.clusterTopics().DeleteTopic(ctx, name)
}

// clusterAutoCreate makes sure the named topic exists in the cluster:
// when the roles do not know it and auto-creation is allowed, the
// controller creates it with the defaults. It reports whether the topic
// exists afterwards.
func (b *Broker) clusterAutoCreate(name string, allowed bool) error {
	if b.topicRoles(name) != nil {
		return nil
	}
	if b.replication.view.Load() == nil {
		// A broker that (re)started and has not had the controller's
		// roles yet cannot tell whether the topic exists. Its topics may be
		// on disk and the cluster's Metadata may already name it leader,
		// so UNKNOWN_TOPIC_OR_PARTITION would be wrong, and clients count
		// it (kgo fails a partition's buffered records after 4 in a row,
		// which breaks an idempotent producer's sequence: the next batch
		// is OUT_OF_ORDER_SEQUENCE_NUMBER). NOT_LEADER_OR_FOLLOWER sends
		// the client to refresh its metadata and retry.
		return fmt.Errorf("%w: %s: this broker has not learned the cluster's partition roles yet", errNotLeader, name)
	}
	if !allowed || !b.config.settings.AutoCreateTopics || isInternalTopicName(name) {
		return fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	ctx, cancel := context.WithTimeout(b.ctx, clusterAdminTimeout)
	defer cancel()
	err := b.clusterTopics().CreateTopic(ctx, name, b.config.settings.NumPartitions, -1, nil)
	if err != nil && errorCode(err) != kerr.TopicAlreadyExists.Code {
		return err
	}
	if b.topicRoles(name) == nil {
		// The controller has the topic (just created, or this broker's
		// view lags it, as right after a restart): retriable, for the
		// reason above.
		return fmt.Errorf("%w: %s exists, not yet known here", errNotLeader, name)
	}
	return nil
}

// clusterProduceTopic resolves a Produce topic in a cluster: the local
// replica, or NOT_LEADER_OR_FOLLOWER when the topic exists (or was just
// auto-created) but has no replica here, so the client looks again.
func (b *Broker) clusterProduceTopic(name string, allowCreate bool) (*topic, error) {
	if err := b.clusterAutoCreate(name, allowCreate); err != nil {
		return nil, err
	}
	if t := b.topicByName(name); t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("%w: no replica of %s here", errNotLeader, name)
}

// clusterMetadataTopics describes every topic of the cluster's roles,
// sorted by name.
func (b *Broker) clusterMetadataTopics() []kmsg.MetadataResponseTopic {
	var out []kmsg.MetadataResponseTopic
	if view := b.replication.view.Load(); view != nil {
		names := make([]string, 0, len(view.topics))
		for name := range view.topics {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			roles := view.topics[name]
			out = append(out, metadataTopicFromRoles(name, roles[0].TopicID, roles))
		}
	}
	return out
}

// clusterMetadataTopic describes one requested topic in a cluster,
// auto-creating it when allowed.
func (b *Broker) clusterMetadataTopic(name string, allowCreate bool) kmsg.MetadataResponseTopic {
	if err := b.clusterAutoCreate(name, allowCreate); err != nil {
		failed := b.metadataTopic(nil, err)
		failed.Topic = &name
		if errors.Is(err, errNotLeader) {
			// The topic exists but this broker's view does not have it
			// yet: Kafka's answer for a topic still being created.
			failed.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		return failed
	}
	roles := b.topicRoles(name)
	return metadataTopicFromRoles(name, roles[0].TopicID, roles)
}

// clusterTopicByID returns the name of the cluster topic with that id.
func (b *Broker) clusterTopicByID(id [16]byte) (string, bool) {
	if view := b.replication.view.Load(); view != nil {
		for name, roles := range view.topics {
			if len(roles) > 0 && roles[0].TopicID == id {
				return name, true
			}
		}
	}
	return "", false
}

// ApplyTopicConfigs sets the config overrides of the named local topics
// (the controller's configs of topics this broker replicates); a topic not
// here, or whose overrides already are those, is skipped. It is for the
// glue that applies the controller's metadata, after ApplyPartitionRoles.
func (b *Broker) ApplyTopicConfigs(configs map[string]map[string]string) error {
	var errs []error
	for name, want := range configs {
		t := b.topicByName(name)
		if t == nil || isInternalTopicName(name) {
			continue
		}
		if have := t.config.Load().overrides; len(have) == len(want) && maps.Equal(have, want) {
			continue
		}
		if err := validateTopicConfigs(want); err != nil {
			errs = append(errs, fmt.Errorf("configs of topic %s: %w", name, err))
			continue
		}
		if err := b.setTopicConfigs(t, maps.Clone(want)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
