package broker

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

func describeTopicConfigs(t *testing.T, client *kgo.Client, topic string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	req.IncludeDocumentation = true
	resource := kmsg.NewDescribeConfigsRequestResource()
	resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, resource)
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe configs: %v, %+v", err, resp)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

func alterTopicConfig(t *testing.T, client *kgo.Client, topic, name string, op kmsg.IncrementalAlterConfigOp, value *string) int16 {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	resource := kmsg.NewIncrementalAlterConfigsRequestResource()
	resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	config := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	config.Name, config.Op, config.Value = name, op, value
	resource.Configs = append(resource.Configs, config)
	req.Resources = append(req.Resources, resource)
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("incremental alter configs: %v", err)
	}
	return resp.Resources[0].ErrorCode
}

// TestDescribeAndAlterConfigs: sources and synonyms are reported as Kafka
// does, and an altered max.message.bytes is enforced (MESSAGE_TOO_LARGE),
// survives a restart, and is lifted by DELETE.
func TestDescribeAndAlterConfigs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	properties := map[string]string{"log.segment.bytes": "1048576"}
	b := startTestBroker(t, dir, properties)
	client := newTestClient(t, b, kgo.RecordRetries(0), kgo.DefaultProduceTopic("configured"))
	createTopic(t, client, "configured", 1, map[string]string{"retention.ms": "60000"})

	configs := describeTopicConfigs(t, client, "configured")
	checkConfig := func(name, value string, source kmsg.ConfigSource) {
		t.Helper()
		c, ok := configs[name]
		if !ok || c.Value == nil || *c.Value != value || c.Source != source {
			t.Fatalf("%s: %+v, want %s from %v", name, c, value, source)
		}
	}
	checkConfig("retention.ms", "60000", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig("segment.bytes", "1048576", kmsg.ConfigSourceStaticBrokerConfig)
	checkConfig("max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
	synonyms := configs["retention.ms"].ConfigSynonyms
	if len(synonyms) != 2 || synonyms[0].Name != "retention.ms" || synonyms[1].Name != "log.retention.hours" ||
		*synonyms[1].Value != "168" || synonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("retention.ms synonyms: %+v", synonyms)
	}

	// Random bytes, so the client's default compression cannot shrink them.
	large := &kgo.Record{Value: make([]byte, 4096)}
	rand.Read(large.Value)
	ctx := testContext(t, 20*time.Second)
	if err := client.ProduceSync(ctx, large).FirstErr(); err != nil {
		t.Fatalf("4 KiB record before lowering max.message.bytes: %v", err)
	}
	if code := alterTopicConfig(t, client, "configured", "max.message.bytes", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1024")); code != 0 {
		t.Fatalf("set max.message.bytes: error %d", code)
	}
	if code := alterTopicConfig(t, client, "configured", "max.message.bytes", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("lots")); code != kerr.InvalidConfig.Code {
		t.Fatalf("set max.message.bytes=lots: error %d, want INVALID_CONFIG", code)
	}
	if code := alterTopicConfig(t, client, "configured", "no.such.config", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1")); code != kerr.InvalidConfig.Code {
		t.Fatalf("unknown config: error %d, want INVALID_CONFIG", code)
	}
	checkTooLarge := func(client *kgo.Client) {
		t.Helper()
		err := client.ProduceSync(ctx, &kgo.Record{Topic: "configured", Value: large.Value}).FirstErr()
		if !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("4 KiB record with max.message.bytes=1024: %v, want MESSAGE_TOO_LARGE", err)
		}
	}
	checkTooLarge(client)
	configs = describeTopicConfigs(t, client, "configured")
	checkConfig("max.message.bytes", "1024", kmsg.ConfigSourceDynamicTopicConfig)

	// The override is persisted.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, properties)
	client = newTestClient(t, b, kgo.RecordRetries(0), kgo.DefaultProduceTopic("configured"))
	checkTooLarge(client)

	if code := alterTopicConfig(t, client, "configured", "max.message.bytes", kmsg.IncrementalAlterConfigOpDelete, nil); code != 0 {
		t.Fatalf("delete max.message.bytes: error %d", code)
	}
	if err := client.ProduceSync(ctx, &kgo.Record{Value: large.Value}).FirstErr(); err != nil {
		t.Fatalf("4 KiB record after deleting the override: %v", err)
	}
}

// TestMinInsyncReplicasEnforced: with min.insync.replicas=2 on a single
// broker, acks=all fails with NOT_ENOUGH_REPLICAS while acks=1 succeeds.
func TestMinInsyncReplicasEnforced(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	admin := newTestClient(t, b)
	createTopic(t, admin, "guarded", 1, map[string]string{"min.insync.replicas": "2"})
	ctx := testContext(t, 20*time.Second)
	all := newTestClient(t, b, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1), kgo.MetadataMinAge(10*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return time.Millisecond }))
	err := all.ProduceSync(ctx, &kgo.Record{Topic: "guarded", Value: []byte("v")}).FirstErr()
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	leader := newTestClient(t, b, kgo.RequiredAcks(kgo.LeaderAck()))
	if err := leader.ProduceSync(ctx, &kgo.Record{Topic: "guarded", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("acks=1: %v", err)
	}
}

// TestProperties: settings parse from key=value and server.properties
// files; unknown keys and bad values are refused with the key named.
func TestProperties(t *testing.T) {
	t.Parallel()
	got, err := ParseProperties([]string{"num.partitions=3", "log.fsync=interval:50ms"})
	if err != nil || got["num.partitions"] != "3" || got["log.fsync"] != "interval:50ms" {
		t.Fatalf("parse: %v, %v", got, err)
	}
	for _, bad := range []string{"no.such.key=1", "num.partitions=0", "log.fsync=sometimes", "auto.create.topics.enable=yes", "novalue"} {
		if _, err := ParseProperties([]string{bad}); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	path := filepath.Join(t.TempDir(), "server.properties")
	content := "# comment\n\nlog.retention.hours = 24\nmessage.max.bytes: 2048\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = LoadPropertiesFile(path)
	if err != nil || got["log.retention.hours"] != "24" || got["message.max.bytes"] != "2048" || len(got) != 2 {
		t.Fatalf("load: %v, %v", got, err)
	}
	if _, err := Start(testContext(t, time.Second), Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		Properties: map[string]string{"log.dirs": "/x"}}); err == nil {
		t.Fatalf("Start accepted an unknown setting")
	}
}

// TestBrokerConfigsAndAlterConfigs: the broker resource lists static and
// default settings read-only; AlterConfigs replaces a topic's overrides
// whole and refuses broker resources.
func TestBrokerConfigsAndAlterConfigs(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"message.max.bytes": "2000000"})
	client := newTestClient(t, b)
	createTopic(t, client, "altered", 1, map[string]string{"retention.ms": "1000", "segment.bytes": "100000"})
	ctx := testContext(t, 10*time.Second)

	describe := kmsg.NewPtrDescribeConfigsRequest()
	resource := kmsg.NewDescribeConfigsRequestResource()
	resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	resource.ConfigNames = []string{"message.max.bytes", "num.partitions", "log.retention.ms"}
	describe.Resources = append(describe.Resources, resource)
	resp, err := describe.RequestWith(ctx, client)
	if err != nil || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 3 {
		t.Fatalf("describe broker: %v %+v", err, resp)
	}
	for _, c := range resp.Resources[0].Configs {
		var want kmsg.ConfigSource = kmsg.ConfigSourceDefaultConfig
		if c.Name == "message.max.bytes" {
			want = kmsg.ConfigSourceStaticBrokerConfig
		}
		if c.Source != want || !c.ReadOnly {
			t.Fatalf("broker config %s: %+v", c.Name, c)
		}
		if c.Name == "log.retention.ms" && c.Value != nil {
			t.Fatalf("log.retention.ms is unset (null) by default, got %q", *c.Value)
		}
	}

	alter := kmsg.NewPtrAlterConfigsRequest()
	alterResource := kmsg.NewAlterConfigsRequestResource()
	alterResource.ResourceType, alterResource.ResourceName = kmsg.ConfigResourceTypeTopic, "altered"
	config := kmsg.NewAlterConfigsRequestResourceConfig()
	config.Name, config.Value = "max.message.bytes", kmsg.StringPtr("5000")
	alterResource.Configs = append(alterResource.Configs, config)
	alter.Resources = append(alter.Resources, alterResource)
	alterResp, err := alter.RequestWith(ctx, client)
	if err != nil || alterResp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter configs: %v %+v", err, alterResp)
	}
	configs := describeTopicConfigs(t, client, "altered")
	if c := configs["retention.ms"]; c.Source != kmsg.ConfigSourceDefaultConfig || *c.Value != "604800000" {
		t.Fatalf("retention.ms override survived a full AlterConfigs: %+v", c)
	}
	if c := configs["max.message.bytes"]; *c.Value != "5000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("max.message.bytes: %+v", c)
	}
	alter.Resources[0].ResourceType, alter.Resources[0].ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	if alterResp, err = alter.RequestWith(ctx, client); err != nil || alterResp.Resources[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("alter broker configs: %v %+v", err, alterResp)
	}
}

// TestLogAppendTime: with message.timestamp.type=LogAppendTime the broker
// stamps each batch with its clock and recomputes the CRC.
func TestLogAppendTime(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	client := newTestClient(t, b, kgo.DefaultProduceTopic("stamped"))
	createTopic(t, client, "stamped", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	before := time.Now().UnixMilli()
	old := &kgo.Record{Value: []byte("v"), Timestamp: time.Unix(1000, 0)}
	if err := client.ProduceSync(testContext(t, 10*time.Second), old).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := dialRaw(t, b)
	r.request(fetchRequest("stamped", 0, 0, 1, 1<<20), 11)
	resp := kmsg.NewPtrFetchResponse()
	r.response(resp, 11)
	batch, err := wire.ParseBatch(resp.Topics[0].Partitions[0].RecordBatches)
	if err != nil {
		t.Fatal(err)
	}
	if err := batch.Validate(); err != nil {
		t.Fatalf("stamped batch: %v", err)
	}
	if !batch.LogAppendTime() || batch.MaxTimestamp() < before || batch.MaxTimestamp() > time.Now().UnixMilli() {
		t.Fatalf("batch log-append-time %v, max timestamp %d, want the broker's clock after %d",
			batch.LogAppendTime(), batch.MaxTimestamp(), before)
	}
}
