package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
)

// internalTestProperties gives the internal topics small, distinct
// partition counts, so the test sees that Metadata reports each one's own.
func internalTestProperties() map[string]string {
	return map[string]string{
		"offsets.topic.num.partitions":         "3",
		"transaction.state.log.num.partitions": "2",
	}
}

// metadataOf asks for the named topics (nil: all topics) without allowing
// auto-creation and returns the answer by topic name.
func metadataOf(t *testing.T, client *kgo.Client, names []string, allowCreate bool) map[string]kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = allowCreate
	for _, name := range names {
		requested := kmsg.NewMetadataRequestTopic()
		requested.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, requested)
	}
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	out := map[string]kmsg.MetadataResponseTopic{}
	for _, topic := range resp.Topics {
		if topic.Topic != nil {
			out[*topic.Topic] = topic
		}
	}
	return out
}

// TestInternalTopicsInMetadata: __consumer_offsets and
// __transaction_state are created on first use (the first FindCoordinator
// of each), as in Kafka, never by Metadata's auto-creation, even when the
// request allows it. Once created, Metadata lists them with IsInternal set
// and their configured partition counts — among all topics, by name and
// by id, the id the same after a restart. A user topic is never internal,
// even one starting with "__".
func TestInternalTopicsInMetadata(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startTestBroker(t, dir, internalTestProperties())
	client := newTestClient(t, b)
	createTopic(t, client, "__user", 1, nil)
	createTopic(t, client, "orders", 2, nil)

	for name, listed := range metadataOf(t, client, []string{group.OffsetsTopic, txn.TransactionStateTopic}, true) {
		if listed.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("before first use: %s error %d, want UNKNOWN_TOPIC_OR_PARTITION", name, listed.ErrorCode)
		}
	}
	if b.topicRoles(group.OffsetsTopic) != nil || b.topicRoles(txn.TransactionStateTopic) != nil {
		t.Fatal("an allowed auto-creation created an internal topic")
	}
	if all := metadataOf(t, client, nil, false); len(all) != 2 {
		t.Fatalf("before first use: all topics lists %d, want the 2 user topics", len(all))
	}
	readyCoordinator(t, b, coordinatorGroup, "first-group")
	readyCoordinator(t, b, coordinatorTransaction, "first-transaction")

	wantPartitions := map[string]int{group.OffsetsTopic: 3, txn.TransactionStateTopic: 2, "__user": 1, "orders": 2}
	all := metadataOf(t, client, nil, false)
	if len(all) != len(wantPartitions) {
		t.Fatalf("all topics: %d listed, want %v", len(all), wantPartitions)
	}
	for name, partitions := range wantPartitions {
		listed, ok := all[name]
		if !ok || listed.ErrorCode != 0 || len(listed.Partitions) != partitions {
			t.Fatalf("all topics: %s listed %v, error %d, %d partitions; want %d", name, ok, listed.ErrorCode, len(listed.Partitions), partitions)
		}
		if internal := isInternalTopicName(name); listed.IsInternal != internal {
			t.Fatalf("all topics: %s IsInternal %v, want %v", name, listed.IsInternal, internal)
		}
		for i, p := range listed.Partitions {
			if p.Partition != int32(i) || p.Leader != 1 || !slices.Equal(p.Replicas, []int32{1}) || !slices.Equal(p.ISR, []int32{1}) {
				t.Fatalf("all topics: %s partition %d: %+v", name, i, p)
			}
		}
	}

	byName := metadataOf(t, client, []string{group.OffsetsTopic, txn.TransactionStateTopic}, true)
	ids := map[string][16]byte{}
	for _, name := range []string{group.OffsetsTopic, txn.TransactionStateTopic} {
		listed := byName[name]
		if listed.ErrorCode != 0 || !listed.IsInternal || len(listed.Partitions) != wantPartitions[name] {
			t.Fatalf("by name: %s error %d, internal %v, %d partitions", name, listed.ErrorCode, listed.IsInternal, len(listed.Partitions))
		}
		if listed.TopicID != all[name].TopicID || listed.TopicID == [16]byte{} {
			t.Fatalf("by name: %s id %x, all topics said %x", name, listed.TopicID, all[name].TopicID)
		}
		ids[name] = listed.TopicID
	}
	if ids[group.OffsetsTopic] == ids[txn.TransactionStateTopic] {
		t.Fatalf("both internal topics have id %x", ids[group.OffsetsTopic])
	}

	b.Close()
	restarted := startTestBroker(t, dir, internalTestProperties())
	client = newTestClient(t, restarted)
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{group.OffsetsTopic, txn.TransactionStateTopic} {
		requested := kmsg.NewMetadataRequestTopic()
		requested.TopicID = ids[name]
		req.Topics = append(req.Topics, requested)
	}
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("metadata by id: %v", err)
	}
	for i, name := range []string{group.OffsetsTopic, txn.TransactionStateTopic} {
		listed := resp.Topics[i]
		if listed.ErrorCode != 0 || listed.Topic == nil || *listed.Topic != name || !listed.IsInternal {
			t.Fatalf("by id after restart: %x answered %+v, want %s", ids[name], listed, name)
		}
	}
}

// TestInternalTopicsRefuseClientChanges: once the internal topics exist
// (created on first use), a client cannot produce to one
// (INVALID_TOPIC_EXCEPTION, as Kafka answers), by name or by id; cannot
// create one (TOPIC_ALREADY_EXISTS); and cannot delete it, grow it or
// change its configs (INVALID_TOPIC_EXCEPTION: the logs belong to the
// coordinators). DescribeConfigs shows the settings the logs are opened
// with, and the coordinators' partitions are still there afterwards.
func TestInternalTopicsRefuseClientChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startTestBroker(t, dir, internalTestProperties())
	readyCoordinator(t, b, coordinatorGroup, "first-group")
	readyCoordinator(t, b, coordinatorTransaction, "first-transaction")
	ctx := testContext(t, 30*time.Second)

	// Produce v13 names topics by id; Kafka 3.0 clients (Produce v9) by name.
	for _, client := range []*kgo.Client{
		newTestClient(t, b),
		newTestClient(t, b, kgo.MaxVersions(kversion.V3_0_0())),
	} {
		for _, name := range []string{group.OffsetsTopic, txn.TransactionStateTopic} {
			err := client.ProduceSync(ctx, &kgo.Record{Topic: name, Value: []byte("not an offset commit")}).FirstErr()
			if !errors.Is(err, kerr.InvalidTopicException) {
				t.Fatalf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", name, err)
			}
		}
	}

	client := newTestClient(t, b)
	create := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{group.OffsetsTopic, txn.TransactionStateTopic} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		create.Topics = append(create.Topics, rt)
	}
	created, err := create.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range created.Topics {
		if topic.ErrorCode != kerr.TopicAlreadyExists.Code {
			t.Fatalf("create %s: error %d, want TOPIC_ALREADY_EXISTS", topic.Topic, topic.ErrorCode)
		}
	}

	offsetsID := metadataOf(t, client, []string{group.OffsetsTopic}, false)[group.OffsetsTopic].TopicID
	remove := kmsg.NewPtrDeleteTopicsRequest()
	byName := kmsg.NewDeleteTopicsRequestTopic()
	byName.Topic = kmsg.StringPtr(txn.TransactionStateTopic)
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = offsetsID
	remove.Topics = append(remove.Topics, byName, byID)
	removed, err := remove.RequestWith(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range removed.Topics {
		if topic.ErrorCode != kerr.InvalidTopicException.Code || topic.Topic == nil {
			t.Fatalf("delete %v (%x): error %d, want INVALID_TOPIC_EXCEPTION", topic.Topic, topic.TopicID, topic.ErrorCode)
		}
	}

	grow := kmsg.NewPtrCreatePartitionsRequest()
	growTopic := kmsg.NewCreatePartitionsRequestTopic()
	growTopic.Topic, growTopic.Count = group.OffsetsTopic, 10
	grow.Topics = append(grow.Topics, growTopic)
	grown, err := grow.RequestWith(ctx, client)
	if err != nil || grown.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("create partitions: %v %+v, want INVALID_TOPIC_EXCEPTION", err, grown)
	}

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	resource := kmsg.NewIncrementalAlterConfigsRequestResource()
	resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeTopic, group.OffsetsTopic
	change := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	change.Name, change.Value = "retention.ms", kmsg.StringPtr("60000")
	resource.Configs = append(resource.Configs, change)
	alter.Resources = append(alter.Resources, resource)
	altered, err := alter.RequestWith(ctx, client)
	if err != nil || altered.Resources[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("incremental alter configs: %v %+v, want INVALID_TOPIC_EXCEPTION", err, altered)
	}

	describe := kmsg.NewPtrDescribeConfigsRequest()
	described := kmsg.NewDescribeConfigsRequestResource()
	described.ResourceType, described.ResourceName = kmsg.ConfigResourceTypeTopic, group.OffsetsTopic
	describe.Resources = append(describe.Resources, described)
	configs, err := describe.RequestWith(ctx, client)
	if err != nil || configs.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe configs: %v %+v", err, configs)
	}
	values := map[string]string{}
	for _, entry := range configs.Resources[0].Configs {
		if entry.Value != nil {
			values[entry.Name] = *entry.Value
		}
	}
	if values["retention.ms"] != "-1" || values["retention.bytes"] != "-1" || values["segment.bytes"] != "104857600" {
		t.Fatalf("describe configs of %s: retention.ms %q, retention.bytes %q, segment.bytes %q",
			group.OffsetsTopic, values["retention.ms"], values["retention.bytes"], values["segment.bytes"])
	}

	for name, partitions := range map[string]int{group.OffsetsTopic: 3, txn.TransactionStateTopic: 2} {
		for i := range partitions {
			if info, err := os.Stat(filepath.Join(dir, brokerDirName, partitionDirName(name, int32(i)))); err != nil || !info.IsDir() {
				t.Fatalf("%s-%d log directory after the refused requests: %v", name, i, err)
			}
		}
		if listed := metadataOf(t, client, []string{name}, false)[name]; listed.ErrorCode != 0 || !listed.IsInternal || len(listed.Partitions) != partitions {
			t.Fatalf("%s after the refused requests: %+v", name, listed)
		}
	}
}

// TestRegexConsumerSkipsInternalTopics is franz-go's TestConsumeRegex in
// small: a regex consumer whose pattern also matches __consumer_offsets
// consumes the user topic only, because Metadata marks the other internal.
func TestRegexConsumerSkipsInternalTopics(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), internalTestProperties())
	readyCoordinator(t, b, coordinatorGroup, "regex-group") // __consumer_offsets exists
	client := newTestClient(t, b)
	createTopic(t, client, "regex-include", 1, nil)
	ctx := testContext(t, 30*time.Second)
	if err := client.ProduceSync(ctx, &kgo.Record{Topic: "regex-include", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	consumer := newTestClient(t, b,
		kgo.ConsumeTopics("regex-.*", "__consumer_offsets"),
		kgo.ConsumeRegex(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	// A fetched record means metadata was read and the patterns were
	// evaluated against every topic it listed.
	for {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record from regex-include: %v", err)
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			t.Fatalf("fetch %s-%d: %v", topic, partition, err)
		})
		if fetches.NumRecords() > 0 {
			break
		}
	}
	if topics := consumer.GetConsumeTopics(); !slices.Equal(topics, []string{"regex-include"}) {
		t.Fatalf("regex consumer consumes %v, want only regex-include", topics)
	}
	if !metadataOf(t, client, []string{group.OffsetsTopic}, false)[group.OffsetsTopic].IsInternal {
		t.Fatalf("%s is not internal", group.OffsetsTopic)
	}
}

// TestEarlierLayoutRefused: a data directory written by a single broker
// of before a single broker ran as a cluster of one — topics.json at its
// top, here with a user topic named __consumer_offsets, which an older
// broker let clients create — is refused at start, saying what to do,
// rather than served empty beside the topics it holds.
func TestEarlierLayoutRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := `{"cluster_id": "AAAAAAAAAAAAAAAAAAAAAA", "topics": [{"name": "__consumer_offsets", "id": "0123456789abcdef0123456789abcdef", "partitions": 1}]}`
	if err := os.WriteFile(filepath.Join(dir, topicsFile), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", DataDir: dir})
	if err == nil {
		b.Close()
		t.Fatal("started over a data directory of the earlier layout")
	}
	if !strings.Contains(err.Error(), "holds the topics of a single broker of an earlier version") || !strings.Contains(err.Error(), "mv "+dir) {
		t.Fatalf("start: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, quorumDirName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused start left a quorum directory: %v", err)
	}
}
