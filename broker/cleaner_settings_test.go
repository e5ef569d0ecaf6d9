package broker

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCleanerSettingsTable: the log cleaner's topic settings take Kafka's
// defaults, fall back to their log.cleaner.* broker keys, take topic
// overrides, and refuse what Kafka refuses.
func TestCleanerSettingsTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		broker    map[string]string
		overrides map[string]string
		check     func(*topicConfig) bool
		wantErr   bool
	}{
		{name: "defaults", check: func(tc *topicConfig) bool {
			return !tc.compact && tc.deleteRetained && tc.minCleanableRatio == 0.5 && tc.minCompactionLag == 0 &&
				tc.maxCompactionLag == time.Duration(math.MaxInt64) && tc.tombstoneRetention == 24*time.Hour
		}},
		{name: "broker fallbacks", broker: map[string]string{
			"log.cleanup.policy": "compact", "log.cleaner.min.cleanable.ratio": "0.1",
			"log.cleaner.min.compaction.lag.ms": "5", "log.cleaner.max.compaction.lag.ms": "60000",
			"log.cleaner.delete.retention.ms": "7",
		}, check: func(tc *topicConfig) bool {
			return tc.compact && !tc.deleteRetained && tc.minCleanableRatio == 0.1 && tc.minCompactionLag == 5*time.Millisecond &&
				tc.maxCompactionLag == time.Minute && tc.tombstoneRetention == 7*time.Millisecond
		}},
		{name: "topic overrides win", broker: map[string]string{"log.cleaner.min.cleanable.ratio": "0.1"},
			overrides: map[string]string{"cleanup.policy": "delete,compact", "min.cleanable.dirty.ratio": "0.9",
				"delete.retention.ms": "0", "min.compaction.lag.ms": "100", "max.compaction.lag.ms": "200"},
			check: func(tc *topicConfig) bool {
				return tc.compact && tc.deleteRetained && tc.minCleanableRatio == 0.9 && tc.tombstoneRetention == 0 &&
					tc.minCompactionLag == 100*time.Millisecond && tc.maxCompactionLag == 200*time.Millisecond
			}},
		{name: "compact,delete", overrides: map[string]string{"cleanup.policy": "compact, delete"},
			check: func(tc *topicConfig) bool { return tc.compact && tc.deleteRetained }},
		{name: "ratio above 1", overrides: map[string]string{"min.cleanable.dirty.ratio": "1.5"}, wantErr: true},
		{name: "ratio not a number", overrides: map[string]string{"min.cleanable.dirty.ratio": "half"}, wantErr: true},
		{name: "unknown policy", overrides: map[string]string{"cleanup.policy": "shred"}, wantErr: true},
		{name: "policy twice", overrides: map[string]string{"cleanup.policy": "compact,compact"}, wantErr: true},
		{name: "negative lag", overrides: map[string]string{"min.compaction.lag.ms": "-1"}, wantErr: true},
		{name: "zero max lag", overrides: map[string]string{"max.compaction.lag.ms": "0"}, wantErr: true},
		{name: "bad broker ratio", broker: map[string]string{"log.cleaner.min.cleanable.ratio": "-0.1"}, wantErr: true},
		{name: "bad broker rate", broker: map[string]string{"log.cleaner.io.max.bytes.per.second": "0"}, wantErr: true},
		{name: "bad thread count", broker: map[string]string{"log.cleaner.threads": "0"}, wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			config, err := newBrokerConfig(c.broker)
			if err == nil {
				err = validateTopicConfigs(c.overrides)
			}
			if c.wantErr {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc := config.newTopicConfig(c.overrides)
			if !c.check(tc) {
				t.Fatalf("topic config %+v", *tc)
			}
			options := config.storageOptions(tc)
			if !tc.deleteRetained && (options.RetentionAge != -1 || options.RetentionBytes != -1) {
				t.Fatalf("compact-only topic keeps retention: %+v", options)
			}
		})
	}

	config, err := newBrokerConfig(map[string]string{"log.cleaner.threads": "3",
		"log.cleaner.io.max.bytes.per.second": "1048576.5", "log.cleaner.backoff.ms": "20", "log.cleaner.enable": "false"})
	if err != nil {
		t.Fatal(err)
	}
	if s := config.settings; s.CleanerThreads != 3 || s.CleanerMaxBytesPerSecond != 1<<20 || s.CleanerBackoff != 20*time.Millisecond || s.CleanerEnable {
		t.Fatalf("cleaner settings %+v", s)
	}
}

// TestCleanerSettingsDescribeAndAlter: the settings are listed by
// DescribeConfigs with their broker synonyms and altered like the others.
func TestCleanerSettingsDescribeAndAlter(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"log.cleaner.delete.retention.ms": "1000"})
	client := newTestClient(t, b)
	createTopic(t, client, "compacted", 1, map[string]string{"cleanup.policy": "compact"})
	configs := describeTopicConfigs(t, client, "compacted")
	for name, want := range map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"cleanup.policy":            {"compact", kmsg.ConfigSourceDynamicTopicConfig},
		"min.cleanable.dirty.ratio": {"0.5", kmsg.ConfigSourceDefaultConfig},
		"min.compaction.lag.ms":     {"0", kmsg.ConfigSourceDefaultConfig},
		"max.compaction.lag.ms":     {"9223372036854775807", kmsg.ConfigSourceDefaultConfig},
		"delete.retention.ms":       {"1000", kmsg.ConfigSourceStaticBrokerConfig},
	} {
		c := configs[name]
		if c.Value == nil || *c.Value != want.value || c.Source != want.source {
			t.Errorf("%s: %+v, want %s from %v", name, c, want.value, want.source)
		}
	}
	if s := configs["min.cleanable.dirty.ratio"].ConfigSynonyms; len(s) != 1 || s[0].Name != "log.cleaner.min.cleanable.ratio" {
		t.Errorf("min.cleanable.dirty.ratio synonyms %+v", s)
	}
	if code := alterTopicConfig(t, client, "compacted", "min.cleanable.dirty.ratio", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("0.01")); code != 0 {
		t.Fatalf("set min.cleanable.dirty.ratio: error %d", code)
	}
	if code := alterTopicConfig(t, client, "compacted", "min.cleanable.dirty.ratio", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("2")); code != kerr.InvalidConfig.Code {
		t.Fatalf("set min.cleanable.dirty.ratio=2: error %d, want INVALID_CONFIG", code)
	}
	if c := describeTopicConfigs(t, client, "compacted")["min.cleanable.dirty.ratio"]; *c.Value != "0.01" {
		t.Fatalf("altered ratio %+v", c)
	}
	if tc := b.topicByName("compacted").config.Load(); tc.minCleanableRatio != 0.01 || !tc.compact {
		t.Fatalf("topic config after alter %+v", *tc)
	}
}
