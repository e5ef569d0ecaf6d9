package broker

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/auth"
	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/broker/storage"
)

// TestSettingsDefaults: with nothing set, every typed field holds the
// table's (Kafka's) default, and every field is read from one setting.
func TestSettingsDefaults(t *testing.T) {
	t.Parallel()
	config, err := newBrokerConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := settings{
		AutoCreateTopics:                true,
		NumPartitions:                   1,
		MaxRequestBytes:                 104857600,
		IndexIntervalBytes:              4096,
		RetentionCheckInterval:          5 * time.Minute,
		Fsync:                           storage.FsyncPolicy{Mode: storage.FsyncNever},
		CleanerEnable:                   true,
		CleanerThreads:                  1,
		CleanerBackoff:                  15 * time.Second,
		ReplicaLagTimeMax:               30 * time.Second,
		HighWatermarkCheckpointInterval: 5 * time.Second,
		GroupMinSessionTimeout:          6 * time.Second,
		GroupMaxSessionTimeout:          30 * time.Minute,
		GroupInitialRebalanceDelay:      3 * time.Second,
		ConsumerSessionTimeout:          45 * time.Second,
		ConsumerHeartbeatInterval:       5 * time.Second,
		GroupConfigs: groupConfigSettings{
			ShareSessionTimeout: 45 * time.Second, ShareHeartbeatInterval: 5 * time.Second,
			ShareRecordLockDuration: 30 * time.Second, ShareDeliveryCountLimit: 5, SharePartitionMaxRecordLocks: 2000,
			ConsumerSessionTimeoutBounds: bounds{45000, 60000}, ConsumerHeartbeatIntervalBounds: bounds{5000, 15000},
			ShareSessionTimeoutBounds: bounds{45000, 60000}, ShareHeartbeatIntervalBounds: bounds{5000, 15000},
			ShareRecordLockDurationBounds: bounds{15000, 60000}, ShareDeliveryCountLimitBounds: bounds{2, 10},
		},
		OffsetsRetention:                  7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval:     10 * time.Minute,
		OffsetsTopicPartitions:            50,
		OffsetsSegmentBytes:               100 << 20,
		TransactionStateSegmentBytes:      100 << 20,
		ProducerIDExpiration:              24 * time.Hour,
		ProducerIDExpirationCheckInterval: 10 * time.Minute,
		TransactionMaxTimeout:             15 * time.Minute,
		TransactionalIDExpiration:         7 * 24 * time.Hour,
		TransactionStatePartitions:        50,
		TransactionCleanupInterval:        10 * time.Second,
		TransactionVersion:                2,
		LeaderRebalance:                   quorum.LeaderRebalance{Enabled: true, Interval: 300 * time.Second, Percent: 10},
		FollowerReplicationThrottledRate:  math.MaxInt64,
		Limits: connectionLimits{MaxConnections: 2147483647, MaxConnectionsPerIP: 2147483647,
			MaxQueuedBytes: -1, MaxConnectionQueuedBytes: -1},
		SASL: saslSettings{Mechanisms: []auth.Mechanism{auth.Plain, auth.ScramSHA256, auth.ScramSHA512}, MaxReceiveSize: 524288},
	}
	if !reflect.DeepEqual(config.settings, want) {
		t.Fatalf("default settings\n got %+v\nwant %+v", config.settings, want)
	}
	_, read, err := parseSettingsRead(config)
	if err != nil {
		t.Fatal(err)
	}
	// Limits, SASL, Authorizer and LeaderRebalance are fields holding one
	// setting per field of their own; Listeners holds the three listener
	// settings and the ssl.* ones; GroupConfigs one per field, two per
	// bounds.
	groupConfigs := 0
	for field := range reflect.TypeOf(groupConfigSettings{}).Fields() {
		groupConfigs++
		if field.Type == reflect.TypeOf(bounds{}) {
			groupConfigs++
		}
	}
	fields := reflect.TypeOf(settings{}).NumField() - 6 + reflect.TypeOf(connectionLimits{}).NumField() +
		reflect.TypeOf(saslSettings{}).NumField() + 3 + len(tlsSettingNames) +
		reflect.TypeOf(authorizerSettings{}).NumField() + reflect.TypeOf(quorum.LeaderRebalance{}).NumField() + groupConfigs
	if len(read) != fields {
		t.Fatalf("parseSettings reads %d settings for %d fields: a field is not parsed", len(read), fields)
	}
}

// TestSettingsExplicit: explicit values reach their typed fields.
func TestSettingsExplicit(t *testing.T) {
	t.Parallel()
	config, err := newBrokerConfig(map[string]string{
		"num.partitions":            "3",
		"log.fsync":                 "interval:50ms",
		"offsets.retention.minutes": "5",
		"transaction.version":       "1",
		"auto.create.topics.enable": "false",
		"producer.id.expiration.ms": "1500",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := config.settings
	if got.NumPartitions != 3 || got.Fsync != (storage.FsyncPolicy{Mode: storage.FsyncInterval, Interval: 50 * time.Millisecond}) ||
		got.OffsetsRetention != 5*time.Minute || got.TransactionVersion != 1 || got.AutoCreateTopics ||
		got.ProducerIDExpiration != 1500*time.Millisecond {
		t.Fatalf("settings %+v", got)
	}
}

// TestSettingsEveryEntryRead: every broker setting in the table is read
// by parseSettings, is the broker default of a topic setting, or is
// listed as accepted but unread; a setting nothing reads is caught here.
func TestSettingsEveryEntryRead(t *testing.T) {
	t.Parallel()
	config, err := newBrokerConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, read, err := parseSettingsRead(config)
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range brokerSettings {
		synonym := slices.ContainsFunc(topicSettings, func(ts topicSetting) bool {
			return slices.Contains(ts.brokerSynonyms, entry.name)
		})
		if !read[entry.name] && !synonym && !slices.Contains(acceptedUnread, entry.name) {
			t.Errorf("broker setting %s: nothing reads it", entry.name)
		}
	}
}

// TestSettingsErrorsNameTheSetting: a misspelt or invalid setting, given
// by an operator or asked for by the code, is an error naming it.
func TestSettingsErrorsNameTheSetting(t *testing.T) {
	t.Parallel()
	for properties, name := range map[string]string{
		"num.partition=3":           "num.partition",
		"num.partitions=0":          "num.partitions",
		"log.fsync=sometimes":       "log.fsync",
		"transaction.version=3":     "transaction.version",
		"socket.request.max.bytes=": "socket.request.max.bytes",
	} {
		key, value, _ := strings.Cut(properties, "=")
		_, err := newBrokerConfig(map[string]string{key: value})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v, want one naming %s", properties, err, name)
		}
	}

	// The code asking for a setting by a wrong name or as the wrong type.
	config, err := newBrokerConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &settingsParser{config: config, read: map[string]bool{}}
	if got := p.int32("num.partitoins"); got != 0 {
		t.Errorf("misspelt setting read as %d", got)
	}
	p.int16("num.partitions")          // an int read as a short
	p.duration("log.fsync", time.Hour) // a string read as a number
	if len(p.errs) != 3 {
		t.Fatalf("errors %v, want 3", p.errs)
	}
	for i, name := range []string{"num.partitoins", "num.partitions", "log.fsync"} {
		if !strings.Contains(p.errs[i].Error(), name) {
			t.Errorf("error %q does not name %s", p.errs[i], name)
		}
	}
}
