package group

import (
	"fmt"
	"time"
)

// Config configures a Coordinator. Field names follow Kafka's broker
// settings; a zero field takes Kafka's default.
type Config struct {
	// GroupMinSessionTimeout is group.min.session.timeout.ms (6000 ms).
	GroupMinSessionTimeout time.Duration
	// GroupMaxSessionTimeout is group.max.session.timeout.ms (1800000 ms).
	GroupMaxSessionTimeout time.Duration
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms
	// (3000 ms): how long the first rebalance of an empty group waits for
	// more members. Set NoInitialRebalanceDelay for 0.
	GroupInitialRebalanceDelay time.Duration
	// NoInitialRebalanceDelay makes GroupInitialRebalanceDelay 0 (the zero
	// value of the duration means "default").
	NoInitialRebalanceDelay bool
	// OffsetsRetention is offsets.retention.minutes (10080 min = 7 days).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is
	// offsets.retention.check.interval.ms (600000 ms).
	OffsetsRetentionCheckInterval time.Duration
	// OffsetsTopicPartitions is offsets.topic.num.partitions (50).
	OffsetsTopicPartitions int
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (4096).
	OffsetMetadataMaxBytes int
	// TickInterval is how often the driver started by StartTicker calls
	// Tick to fire session, rebalance and retention timers (100 ms).
	TickInterval time.Duration
	// Now is the clock (time.Now). Tests inject a fake clock.
	Now func() time.Time
	// Topics resolves topic ids for OffsetCommit v10 and OffsetFetch v10;
	// nil makes every topic id unknown.
	Topics TopicResolver
	// Catalog lists topics for the consumer group protocol's server-side
	// assignors (KIP-848); nil: no topic exists for them.
	Catalog TopicCatalog
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms
	// (45000 ms): a consumer-protocol member that sends no heartbeat for
	// this long is removed and its partitions reassigned.
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms
	// (5000 ms), the interval consumer-protocol members are told to
	// heartbeat at.
	ConsumerHeartbeatInterval time.Duration
	// ShareSessionTimeout is group.share.session.timeout.ms (45000 ms): a
	// share group member that sends no heartbeat for this long is removed.
	ShareSessionTimeout time.Duration
	// ShareHeartbeatInterval is group.share.heartbeat.interval.ms (5000
	// ms), the interval share group members are told to heartbeat at.
	ShareHeartbeatInterval time.Duration
	// ConsumerTimeouts, if set, returns one group's session timeout and
	// heartbeat interval for the consumer protocol (the broker's group
	// configs consumer.session.timeout.ms and
	// consumer.heartbeat.interval.ms over the two above). It is called
	// under the group's lock: it must be cheap and must not call the
	// coordinator. Nil: the two above for every group.
	ConsumerTimeouts func(group string) (session, heartbeat time.Duration)
	// OnRebalance, if set, is called once per generation started (a join
	// phase completed), under the group's lock: it must be cheap and must
	// not call the coordinator. The broker counts rebalances with it.
	OnRebalance func()
}

// TopicResolver maps topic ids to names and back (KIP-516).
type TopicResolver interface {
	TopicName(id [16]byte) (string, bool)
	TopicID(name string) ([16]byte, bool)
}

// withDefaults returns cfg with Kafka's defaults filled in, or an error for
// an inconsistent configuration.
func (cfg Config) withDefaults() (Config, error) {
	setDuration(&cfg.GroupMinSessionTimeout, 6*time.Second)
	setDuration(&cfg.GroupMaxSessionTimeout, 30*time.Minute)
	setDuration(&cfg.GroupInitialRebalanceDelay, 3*time.Second)
	if cfg.NoInitialRebalanceDelay {
		cfg.GroupInitialRebalanceDelay = 0
	}
	setDuration(&cfg.OffsetsRetention, 7*24*time.Hour)
	setDuration(&cfg.OffsetsRetentionCheckInterval, 10*time.Minute)
	setDuration(&cfg.TickInterval, 100*time.Millisecond)
	setDuration(&cfg.ConsumerSessionTimeout, 45*time.Second)
	setDuration(&cfg.ConsumerHeartbeatInterval, 5*time.Second)
	setDuration(&cfg.ShareSessionTimeout, 45*time.Second)
	setDuration(&cfg.ShareHeartbeatInterval, 5*time.Second)
	if cfg.OffsetsTopicPartitions == 0 {
		cfg.OffsetsTopicPartitions = 50
	}
	if cfg.OffsetMetadataMaxBytes == 0 {
		cfg.OffsetMetadataMaxBytes = 4096
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch {
	case cfg.GroupMinSessionTimeout < 0 || cfg.GroupMaxSessionTimeout < cfg.GroupMinSessionTimeout:
		return cfg, fmt.Errorf("group session timeout bounds [%v, %v] are invalid", cfg.GroupMinSessionTimeout, cfg.GroupMaxSessionTimeout)
	case cfg.GroupInitialRebalanceDelay < 0:
		return cfg, fmt.Errorf("group.initial.rebalance.delay %v is negative", cfg.GroupInitialRebalanceDelay)
	case cfg.OffsetsRetention < 0 || cfg.OffsetsRetentionCheckInterval < 0 || cfg.TickInterval < 0:
		return cfg, fmt.Errorf("negative retention (%v), retention check (%v) or tick interval (%v)", cfg.OffsetsRetention, cfg.OffsetsRetentionCheckInterval, cfg.TickInterval)
	case cfg.ConsumerSessionTimeout < 0 || cfg.ConsumerHeartbeatInterval < 0:
		return cfg, fmt.Errorf("negative consumer session timeout (%v) or heartbeat interval (%v)", cfg.ConsumerSessionTimeout, cfg.ConsumerHeartbeatInterval)
	case cfg.OffsetsTopicPartitions < 1:
		return cfg, fmt.Errorf("offsets.topic.num.partitions %d must be at least 1", cfg.OffsetsTopicPartitions)
	case cfg.OffsetMetadataMaxBytes < 0:
		return cfg, fmt.Errorf("offset.metadata.max.bytes %d is negative", cfg.OffsetMetadataMaxBytes)
	}
	return cfg, nil
}

// consumerTimeouts returns group's consumer-protocol session timeout and
// heartbeat interval (Config.ConsumerTimeouts).
func (c *Coordinator) consumerTimeouts(group string) (session, heartbeat time.Duration) {
	if c.cfg.ConsumerTimeouts == nil {
		return c.cfg.ConsumerSessionTimeout, c.cfg.ConsumerHeartbeatInterval
	}
	return c.cfg.ConsumerTimeouts(group)
}

// consumerSessionTimeout is the group's consumer-protocol session timeout.
func (g *group) consumerSessionTimeout() time.Duration {
	session, _ := g.coordinator.consumerTimeouts(g.id)
	return session
}

func setDuration(field *time.Duration, fallback time.Duration) {
	if *field == 0 {
		*field = fallback
	}
}
