package broker

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/broker/storage"
)

// This file turns the broker settings (the brokerSettings table, by Kafka's
// names) into typed values once, when the broker starts: the rest of the
// broker reads a field of settings, never a setting by name, so a
// misspelt name is an error at start rather than a silent zero.

// settings are the broker-wide settings the broker acts on, parsed by
// parseSettings. The broker defaults of topic settings (log.retention.*,
// log.roll.*, log.segment.bytes, message.max.bytes, min.insync.replicas,
// log.cleanup.policy, log.message.timestamp.type) are not here: topics
// resolve them per topic (brokerConfig.topicDefault), because
// DescribeConfigs reports which key each value came from.
type settings struct {
	// AutoCreateTopics is auto.create.topics.enable.
	AutoCreateTopics bool
	// NumPartitions is num.partitions: partitions of an auto-created topic.
	NumPartitions int32
	// MaxRequestBytes is socket.request.max.bytes: the largest request frame.
	MaxRequestBytes int32
	// IndexIntervalBytes is log.index.interval.bytes.
	IndexIntervalBytes int
	// RetentionCheckInterval is log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// Fsync is log.fsync.
	Fsync storage.FsyncPolicy
	// CleanerEnable is log.cleaner.enable (startLogCleaner).
	CleanerEnable bool
	// CleanerThreads is log.cleaner.threads.
	CleanerThreads int32
	// CleanerMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second,
	// 0 when unbounded (the default, Double.MAX_VALUE, and anything at
	// or above 2^63).
	CleanerMaxBytesPerSecond int64
	// CleanerBackoff is log.cleaner.backoff.ms.
	CleanerBackoff time.Duration
	// ReplicaLagTimeMax is replica.lag.time.max.ms (replication only).
	ReplicaLagTimeMax time.Duration
	// HighWatermarkCheckpointInterval is
	// replica.high.watermark.checkpoint.interval.ms (replication only).
	HighWatermarkCheckpointInterval time.Duration

	// Listeners are listeners, listener.security.protocol.map,
	// advertised.listeners and each TLS listener's ssl.* settings
	// (parseListenerSpecs, tlsSettings); nil when listeners is unset (Start
	// then listens on Config.Listen alone).
	Listeners []listenerSpec
	// InterBrokerListener is inter.broker.listener.name, upper case; ""
	// when unset (interBrokerListener chooses).
	InterBrokerListener string

	// Limits are the connection limits: max.connections,
	// max.connections.per.ip, max.connections.per.ip.overrides,
	// queued.max.request.bytes and
	// max.inflight.request.bytes.per.connection (connectionLimiter).
	Limits connectionLimits
	// SASL is sasl.enabled.mechanisms, connections.max.reauth.ms and
	// sasl.server.max.receive.size (saslSession; connection.saslFrameLimit).
	SASL saslSettings

	// Authorizer is authorizer.class.name, super.users and
	// allow.everyone.if.no.acl.found (openAuthorizer).
	Authorizer authorizerSettings

	// GroupMinSessionTimeout is group.min.session.timeout.ms.
	GroupMinSessionTimeout time.Duration
	// GroupMaxSessionTimeout is group.max.session.timeout.ms.
	GroupMaxSessionTimeout time.Duration
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms.
	GroupInitialRebalanceDelay time.Duration
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms.
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms.
	ConsumerHeartbeatInterval time.Duration
	// GroupConfigs are the broker-level defaults and bounds of the
	// per-group configs (groupConfigSpecs) that ConsumerSessionTimeout
	// and ConsumerHeartbeatInterval do not hold.
	GroupConfigs groupConfigSettings
	// OffsetsRetention is offsets.retention.minutes.
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms.
	OffsetsRetentionCheckInterval time.Duration
	// OffsetsTopicPartitions is offsets.topic.num.partitions.
	OffsetsTopicPartitions int32
	// OffsetsSegmentBytes is offsets.topic.segment.bytes.
	OffsetsSegmentBytes int32
	// TransactionStateSegmentBytes is transaction.state.log.segment.bytes.
	TransactionStateSegmentBytes int32

	// ProducerIDExpiration is producer.id.expiration.ms.
	ProducerIDExpiration time.Duration
	// ProducerIDExpirationCheckInterval is producer.id.expiration.check.interval.ms.
	ProducerIDExpirationCheckInterval time.Duration

	// TransactionMaxTimeout is transaction.max.timeout.ms.
	TransactionMaxTimeout time.Duration
	// TransactionalIDExpiration is transactional.id.expiration.ms.
	TransactionalIDExpiration time.Duration
	// TransactionStatePartitions is transaction.state.log.num.partitions.
	TransactionStatePartitions int32
	// TransactionCleanupInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms.
	TransactionCleanupInterval time.Duration
	// TransactionVersion is transaction.version (0–2; 2 is KIP-890 part 2).
	TransactionVersion int16

	// FollowerReplicationThrottledRate is
	// follower.replication.throttled.rate (reassign_throttle.go).
	FollowerReplicationThrottledRate int64

	// LeaderRebalance is auto.leader.rebalance.enable,
	// leader.imbalance.check.interval.seconds and
	// leader.imbalance.per.broker.percentage, for the quorum's controller.
	LeaderRebalance quorum.LeaderRebalance

	// RequestHistograms is metrics.request.histograms
	// (settingsParser.requestHistograms).
	RequestHistograms metrics.RequestHistograms
}

// acceptedUnread are broker settings accepted for compatibility that no
// field of settings reads: default.replication.factor only validates
// (a single broker serves 1), and idle transactional ids expire on the
// abort-cleanup tick.
var acceptedUnread = []string{
	"default.replication.factor",
	"transaction.remove.expired.transaction.cleanup.interval.ms",
}

// parseSettings reads every field of settings from c (explicit values and
// the table's defaults, already validated by newBrokerConfig). An error
// names the setting: one the table does not have, or whose table kind does
// not fit the field.
func parseSettings(c brokerConfig) (settings, error) {
	s, _, err := parseSettingsRead(c)
	return s, err
}

// parseSettingsRead is parseSettings that also returns the names it read
// (for the test that every table entry is read by someone).
func parseSettingsRead(c brokerConfig) (settings, map[string]bool, error) {
	p := &settingsParser{config: c, read: map[string]bool{}}
	s := settings{
		AutoCreateTopics:                 p.boolean("auto.create.topics.enable"),
		NumPartitions:                    p.int32("num.partitions"),
		FollowerReplicationThrottledRate: p.int64("follower.replication.throttled.rate"),
		LeaderRebalance: quorum.LeaderRebalance{Enabled: p.boolean("auto.leader.rebalance.enable"),
			Interval: p.duration("leader.imbalance.check.interval.seconds", time.Second),
			Percent:  int(p.int32("leader.imbalance.per.broker.percentage"))},
		MaxRequestBytes:                 p.int32("socket.request.max.bytes"),
		IndexIntervalBytes:              int(p.int32("log.index.interval.bytes")),
		RetentionCheckInterval:          p.duration("log.retention.check.interval.ms", time.Millisecond),
		Fsync:                           p.fsync("log.fsync"),
		CleanerEnable:                   p.boolean("log.cleaner.enable"),
		CleanerThreads:                  p.int32("log.cleaner.threads"),
		CleanerMaxBytesPerSecond:        p.bytesPerSecond("log.cleaner.io.max.bytes.per.second"),
		CleanerBackoff:                  p.duration("log.cleaner.backoff.ms", time.Millisecond),
		ReplicaLagTimeMax:               p.duration("replica.lag.time.max.ms", time.Millisecond),
		HighWatermarkCheckpointInterval: p.duration("replica.high.watermark.checkpoint.interval.ms", time.Millisecond),

		Listeners:           p.listeners(),
		InterBrokerListener: strings.ToUpper(p.string("inter.broker.listener.name")),

		Limits: connectionLimits{
			MaxConnections:           p.int32("max.connections"),
			MaxConnectionsPerIP:      p.int32("max.connections.per.ip"),
			PerIPOverrides:           p.overrides("max.connections.per.ip.overrides"),
			MaxQueuedBytes:           p.int64("queued.max.request.bytes"),
			MaxConnectionQueuedBytes: p.int64("max.inflight.request.bytes.per.connection"),
		},
		SASL: saslSettings{
			Mechanisms:     p.mechanisms("sasl.enabled.mechanisms"),
			MaxReauth:      p.duration("connections.max.reauth.ms", time.Millisecond),
			MaxReceiveSize: p.int32("sasl.server.max.receive.size"),
		},

		Authorizer: authorizerSettings{
			ClassName:                 p.string("authorizer.class.name"),
			SuperUsers:                p.superUsers("super.users"),
			AllowEveryoneIfNoACLFound: p.boolean("allow.everyone.if.no.acl.found"),
		},

		GroupMinSessionTimeout:        p.duration("group.min.session.timeout.ms", time.Millisecond),
		GroupMaxSessionTimeout:        p.duration("group.max.session.timeout.ms", time.Millisecond),
		GroupInitialRebalanceDelay:    p.duration("group.initial.rebalance.delay.ms", time.Millisecond),
		ConsumerSessionTimeout:        p.duration("group.consumer.session.timeout.ms", time.Millisecond),
		ConsumerHeartbeatInterval:     p.duration("group.consumer.heartbeat.interval.ms", time.Millisecond),
		GroupConfigs:                  p.groupConfigSettings(),
		OffsetsRetention:              p.duration("offsets.retention.minutes", time.Minute),
		OffsetsRetentionCheckInterval: p.duration("offsets.retention.check.interval.ms", time.Millisecond),
		OffsetsTopicPartitions:        p.int32("offsets.topic.num.partitions"),
		OffsetsSegmentBytes:           p.int32("offsets.topic.segment.bytes"),
		TransactionStateSegmentBytes:  p.int32("transaction.state.log.segment.bytes"),

		ProducerIDExpiration:              p.duration("producer.id.expiration.ms", time.Millisecond),
		ProducerIDExpirationCheckInterval: p.duration("producer.id.expiration.check.interval.ms", time.Millisecond),

		TransactionMaxTimeout:      p.duration("transaction.max.timeout.ms", time.Millisecond),
		TransactionalIDExpiration:  p.duration("transactional.id.expiration.ms", time.Millisecond),
		TransactionStatePartitions: p.int32("transaction.state.log.num.partitions"),
		TransactionCleanupInterval: p.duration("transaction.abort.timed.out.transaction.cleanup.interval.ms", time.Millisecond),
		TransactionVersion:         p.int16("transaction.version"),

		RequestHistograms: p.requestHistograms("metrics.request.histograms"),
	}
	if err := errors.Join(p.errs...); err != nil {
		return settings{}, nil, err
	}
	return s, p.read, nil
}

// groupConfigSettings are the broker settings behind the group configs
// (Kafka's GroupCoordinatorConfig and ShareGroupConfig): the defaults of
// the share-group configs, and every group config's bounds, in the
// config's own unit (milliseconds, or a count). Kafka refuses to start
// with a default outside its bounds; here the bounds only limit what a
// group config may set (validateGroupConfigs) and clamp what one holds
// (Broker.groupSettings), so a test broker may keep short defaults.
type groupConfigSettings struct {
	// ShareSessionTimeout is group.share.session.timeout.ms.
	ShareSessionTimeout time.Duration
	// ShareHeartbeatInterval is group.share.heartbeat.interval.ms.
	ShareHeartbeatInterval time.Duration
	// ShareRecordLockDuration is group.share.record.lock.duration.ms.
	ShareRecordLockDuration time.Duration
	// ShareDeliveryCountLimit is group.share.delivery.count.limit.
	ShareDeliveryCountLimit int32
	// SharePartitionMaxRecordLocks is
	// group.share.partition.max.record.locks.
	SharePartitionMaxRecordLocks int32

	// ConsumerSessionTimeoutBounds are group.consumer.min.session.timeout.ms
	// and group.consumer.max.session.timeout.ms.
	ConsumerSessionTimeoutBounds bounds
	// ConsumerHeartbeatIntervalBounds are
	// group.consumer.{min,max}.heartbeat.interval.ms.
	ConsumerHeartbeatIntervalBounds bounds
	// ShareSessionTimeoutBounds are group.share.{min,max}.session.timeout.ms.
	ShareSessionTimeoutBounds bounds
	// ShareHeartbeatIntervalBounds are
	// group.share.{min,max}.heartbeat.interval.ms.
	ShareHeartbeatIntervalBounds bounds
	// ShareRecordLockDurationBounds are
	// group.share.{min,max}.record.lock.duration.ms.
	ShareRecordLockDurationBounds bounds
	// ShareDeliveryCountLimitBounds are
	// group.share.{min,max}.delivery.count.limit.
	ShareDeliveryCountLimitBounds bounds
}

// bounds are an inclusive range [Min, Max].
type bounds struct{ Min, Max int64 }

func (p *settingsParser) groupConfigSettings() groupConfigSettings {
	bounded := func(prefix, suffix string) bounds {
		return bounds{Min: int64(p.int32(prefix + ".min." + suffix)), Max: int64(p.int32(prefix + ".max." + suffix))}
	}
	return groupConfigSettings{
		ShareSessionTimeout:          p.duration("group.share.session.timeout.ms", time.Millisecond),
		ShareHeartbeatInterval:       p.duration("group.share.heartbeat.interval.ms", time.Millisecond),
		ShareRecordLockDuration:      p.duration("group.share.record.lock.duration.ms", time.Millisecond),
		ShareDeliveryCountLimit:      p.int32("group.share.delivery.count.limit"),
		SharePartitionMaxRecordLocks: p.int32("group.share.partition.max.record.locks"),

		ConsumerSessionTimeoutBounds:    bounded("group.consumer", "session.timeout.ms"),
		ConsumerHeartbeatIntervalBounds: bounded("group.consumer", "heartbeat.interval.ms"),
		ShareSessionTimeoutBounds:       bounded("group.share", "session.timeout.ms"),
		ShareHeartbeatIntervalBounds:    bounded("group.share", "heartbeat.interval.ms"),
		ShareRecordLockDurationBounds:   bounded("group.share", "record.lock.duration.ms"),
		ShareDeliveryCountLimitBounds:   bounded("group.share", "delivery.count.limit"),
	}
}

// settingsParser reads typed values out of a brokerConfig, collecting
// errors (each naming its setting) instead of stopping at the first.
type settingsParser struct {
	config brokerConfig
	// read are the names asked for.
	read map[string]bool
	errs []error
}

// value returns the setting's value (explicit or default) after checking
// that the table has it with one of kinds.
func (p *settingsParser) value(name string, kinds ...settingKind) (string, bool) {
	entry, ok := findBrokerSetting(name)
	if !ok {
		p.errs = append(p.errs, fmt.Errorf("broker setting %q: not in the settings table", name))
		return "", false
	}
	if !slices.Contains(kinds, entry.kind) {
		p.errs = append(p.errs, fmt.Errorf("broker setting %s: read as kind %v, but the table says kind %d", name, kinds, entry.kind))
		return "", false
	}
	p.read[name] = true
	v, _ := p.config.lookup(name)
	return v, true
}

func (p *settingsParser) integer(name string, bits int, kinds ...settingKind) int64 {
	v, ok := p.value(name, kinds...)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("broker setting %s: %q is not a %d-bit integer", name, v, bits))
		return 0
	}
	return n
}

func (p *settingsParser) int16(name string) int16 {
	return int16(p.integer(name, 16, kindShort))
}

func (p *settingsParser) int32(name string) int32 {
	return int32(p.integer(name, 32, kindInt))
}

func (p *settingsParser) int64(name string) int64 {
	return p.integer(name, 64, kindLong)
}

// string reads a string setting as it is.
func (p *settingsParser) string(name string) string {
	v, _ := p.value(name, kindString)
	return v
}

// superUsers reads super.users.
func (p *settingsParser) superUsers(name string) []string {
	v, ok := p.value(name, kindString)
	if !ok {
		return nil
	}
	parsed, err := parseSuperUsers(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("broker setting %s: %w", name, err))
	}
	return parsed
}

// overrides reads max.connections.per.ip.overrides.
func (p *settingsParser) overrides(name string) []connectionOverride {
	v, ok := p.value(name, kindString)
	if !ok {
		return nil
	}
	parsed, err := parseConnectionOverrides(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("broker setting %s: %w", name, err))
	}
	return parsed
}

// listeners reads the listener settings and the ssl.* settings of the
// TLS listeners (a listener.name.<name>.ssl.* key over the unprefixed
// one). The ssl.* settings are read even without listeners, so the
// table test sees them read.
func (p *settingsParser) listeners() []listenerSpec {
	listeners, _ := p.value("listeners", kindString)
	protocolMap, _ := p.value("listener.security.protocol.map", kindString)
	advertised, _ := p.value("advertised.listeners", kindString)
	global := map[string]string{}
	for _, name := range tlsSettingNames {
		global[name], _ = p.value(name, kindString, kindPassword)
	}
	if _, set := p.config.lookup("listeners"); !set {
		if _, set := p.config.lookup("advertised.listeners"); set {
			p.errs = append(p.errs, errors.New("broker setting advertised.listeners: set without listeners"))
		}
		return nil
	}
	tlsFor := func(listener string) (tlsSettings, error) {
		value := func(name string) string {
			if v, ok := p.config.set[listenerSettingPrefix+strings.ToLower(listener)+"."+name]; ok {
				return v
			}
			return global[name]
		}
		return tlsSettings{
			KeystoreLocation:       value("ssl.keystore.location"),
			KeystoreChain:          value("ssl.keystore.certificate.chain"),
			KeystoreKey:            value("ssl.keystore.key"),
			TruststoreLocation:     value("ssl.truststore.location"),
			TruststoreCertificates: value("ssl.truststore.certificates"),
			ClientAuth:             value("ssl.client.auth"),
		}, nil
	}
	specs, err := parseListenerSpecs(listeners, protocolMap, advertised, tlsFor)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("broker setting %w", err))
		return nil
	}
	for key := range p.config.set {
		rest, ok := strings.CutPrefix(key, listenerSettingPrefix)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, ".")
		if specIndex(specs, strings.ToUpper(name)) < 0 {
			p.errs = append(p.errs, fmt.Errorf("broker setting %s: no listener is named %s", key, name))
		}
	}
	return specs
}

// duration reads an integer count of unit (a ".ms" or ".minutes" setting).
func (p *settingsParser) duration(name string, unit time.Duration) time.Duration {
	return time.Duration(p.integer(name, 64, kindInt, kindLong)) * unit
}

// bytesPerSecond reads a double rate as whole bytes per second; a rate
// that does not fit an int64 is unbounded (0).
func (p *settingsParser) bytesPerSecond(name string) int64 {
	v, ok := p.value(name, kindDouble)
	if !ok {
		return 0
	}
	rate, err := strconv.ParseFloat(v, 64)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("broker setting %s: %q is not a number", name, v))
		return 0
	}
	if rate >= math.MaxInt64 {
		return 0
	}
	return max(int64(rate), 1)
}

func (p *settingsParser) boolean(name string) bool {
	v, ok := p.value(name, kindBoolean)
	if ok && v != "true" && v != "false" {
		p.errs = append(p.errs, fmt.Errorf("broker setting %s: %q is not true or false", name, v))
	}
	return v == "true"
}

func (p *settingsParser) fsync(name string) storage.FsyncPolicy {
	v, ok := p.value(name, kindString)
	if !ok {
		return storage.FsyncPolicy{}
	}
	policy, err := storage.ParseFsyncPolicy(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("broker setting %s: %w", name, err))
	}
	return policy
}
