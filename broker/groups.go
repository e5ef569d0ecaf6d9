package broker

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/exactly-eos/exactly/broker/group"
)

// This file wires the group coordinator (broker/group) into the broker:
// its configuration, the topic-id resolver it needs for
// OffsetCommit/OffsetFetch v10, and the [api.Groups] service the group
// API handlers (package api) see.
//
// Storage: committed offsets and group metadata live in Kafka's
// __consumer_offsets record format (see broker/group's package doc), in
// the partitions of the replicated topic __consumer_offsets, created
// through the controller on first use; the coordinator is sharded by them
// (syncGroupShards, groupsFor). Groups map to partitions by the topic's
// partition count (Broker.internalPartitions). As in Kafka the topic is
// compacted (cleanup.policy=compact, segments of
// offsets.topic.segment.bytes): the log cleaner (logCleaner) keeps the
// latest record of each key and drops tombstones after
// log.cleaner.delete.retention.ms; retention is off, since a shard's
// replay needs every live key. The replay reads the compacted log, gaps
// and all.
//
// Goroutines: the coordinator runs none of its own; the thin driver
// (group.StartTicker) moves its time, firing session and rebalance
// timers, and ends when the coordinator is closed. JoinGroup and SyncGroup
// park until their rebalance step completes, so they run on their own
// goroutine (goAsync): the connection's reader keeps reading, sees a
// client that goes away (which cancels the parked call) and serves the
// connection's other requests. Every other group API runs in the reader
// goroutine, so one connection's commits and fetches of offsets take
// effect in request order, as in Kafka.

// groupConfig is the group coordinator's configuration from the settings.
func (b *Broker) groupConfig() group.Config {
	settings := b.config.settings
	config := group.Config{
		GroupMinSessionTimeout:        settings.GroupMinSessionTimeout,
		GroupMaxSessionTimeout:        settings.GroupMaxSessionTimeout,
		GroupInitialRebalanceDelay:    settings.GroupInitialRebalanceDelay,
		OffsetsRetention:              settings.OffsetsRetention,
		OffsetsRetentionCheckInterval: settings.OffsetsRetentionCheckInterval,
		OffsetsTopicPartitions:        int(settings.OffsetsTopicPartitions),
		Topics:                        topicResolver{b},
		Catalog:                       topicResolver{b},
		ConsumerSessionTimeout:        settings.ConsumerSessionTimeout,
		ConsumerHeartbeatInterval:     settings.ConsumerHeartbeatInterval,
		ShareSessionTimeout:           settings.GroupConfigs.ShareSessionTimeout,
		ShareHeartbeatInterval:        settings.GroupConfigs.ShareHeartbeatInterval,
	}
	config.NoInitialRebalanceDelay = config.GroupInitialRebalanceDelay == 0
	config.ConsumerTimeouts = func(group string) (session, heartbeat time.Duration) {
		gs := b.groupSettings(group)
		return gs.ConsumerSessionTimeout, gs.ConsumerHeartbeatInterval
	}
	if b.metrics != nil {
		config.OnRebalance = b.metrics.GroupRebalance
	}
	return config
}

// topicResolver maps topic ids to names and back for the coordinator,
// from the cluster's metadata as last applied (every topic of the
// cluster, also those this broker holds no replica of: the coordinator of
// a group need not host its topics), else from the local topics (a broker
// without roles).
type topicResolver struct{ broker *Broker }

// clusterTopics returns the applied view's topics, nil without one.
func (r topicResolver) clusterTopics() map[string][]PartitionRole {
	if r.broker.replication == nil {
		return nil
	}
	if view := r.broker.replication.view.Load(); view != nil {
		return view.topics
	}
	return nil
}

// TopicName returns the name of the topic with this id.
func (r topicResolver) TopicName(id [16]byte) (string, bool) {
	if t := r.broker.topicByID(id); t != nil {
		return t.name, true
	}
	for name, roles := range r.clusterTopics() {
		if len(roles) > 0 && roles[0].TopicID == id {
			return name, true
		}
	}
	return "", false
}

// TopicID returns the id of the named topic.
func (r topicResolver) TopicID(name string) ([16]byte, bool) {
	if roles := r.clusterTopics()[name]; len(roles) > 0 {
		return roles[0].TopicID, true
	}
	if t := r.broker.topicByName(name); t != nil {
		return t.id, true
	}
	return [16]byte{}, false
}

// TopicPartitions returns the id and partition count of the named topic
// (the consumer group protocol's assignors).
func (r topicResolver) TopicPartitions(name string) ([16]byte, int32, bool) {
	if roles := r.clusterTopics()[name]; len(roles) > 0 {
		return roles[0].TopicID, int32(len(roles)), true
	}
	t := r.broker.topicByName(name)
	if t == nil {
		return [16]byte{}, 0, false
	}
	return t.id, int32(len(r.broker.partitionsOf(t))), true
}

// TopicNames lists every topic (regular expression subscriptions), the
// internal ones included: as in Kafka, a regular expression that matches
// __consumer_offsets gets it assigned.
func (r topicResolver) TopicNames() []string {
	if topics := r.clusterTopics(); topics != nil {
		return slices.Sorted(maps.Keys(topics))
	}
	topics := r.broker.sortedTopics()
	names := make([]string, 0, len(topics))
	for _, t := range topics {
		names = append(names, t.name)
	}
	return names
}

// shuttingDown reports whether the broker is closing; parked JoinGroup and
// SyncGroup calls then answer NOT_COORDINATOR so clients look for the
// coordinator again instead of rejoining here.
func (b *Broker) shuttingDown() bool { return b.ctx.Err() != nil }

// duringShutdown turns a REBALANCE_IN_PROGRESS answer into NOT_COORDINATOR
// while the broker shuts down (see shuttingDown).
func (b *Broker) duringShutdown(err error) error {
	if errors.Is(err, group.ErrRebalanceInProgress) && b.shuttingDown() {
		return fmt.Errorf("broker shutting down: %w", group.ErrNotCoordinator)
	}
	return err
}
