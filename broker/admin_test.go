package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func listOffset(t *testing.T, client *kgo.Client, topic string, partition int32, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Straight to the broker: the client would refuse unknown partitions itself.
	raw, err := client.Broker(1).Request(testContext(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// TestTopicAdministration: names are validated as Kafka does, duplicates
// and replication factors other than 1 are refused, partitions grow,
// ListOffsets answers earliest/latest/by time, and a deleted topic is gone
// (and a new topic of the same name starts empty).
func TestTopicAdministration(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"auto.create.topics.enable": "false"})
	client := newTestClient(t, b)
	ctx := testContext(t, 20*time.Second)

	create := func(name string, partitions int32, replication int16) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, replication
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, client)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode
	}
	for name, want := range map[string]*kerr.Error{"bad/name": kerr.InvalidTopicException, "..": kerr.InvalidTopicException,
		string(make([]byte, 250)): kerr.InvalidTopicException} {
		if code := create(name, 1, 1); code != want.Code {
			t.Fatalf("create %q: error %d, want %v", name, code, want)
		}
	}
	if code := create("replicated", 1, 3); code != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("replication factor 3: error %d", code)
	}
	if code := create("admin", 2, -1); code != 0 {
		t.Fatalf("create: error %d", code)
	}
	if code := create("admin", 2, 1); code != kerr.TopicAlreadyExists.Code {
		t.Fatalf("create twice: error %d", code)
	}

	grow := kmsg.NewPtrCreatePartitionsRequest()
	growTopic := kmsg.NewCreatePartitionsRequestTopic()
	growTopic.Topic, growTopic.Count = "admin", 3
	grow.Topics = append(grow.Topics, growTopic)
	if resp, err := grow.RequestWith(ctx, client); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create partitions: %v %+v", err, resp)
	}
	if resp, err := grow.RequestWith(ctx, client); err != nil || resp.Topics[0].ErrorCode != kerr.InvalidPartitions.Code {
		t.Fatalf("create partitions to the same count: %v %+v", err, resp)
	}

	producer := newTestClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range 3 {
		record := &kgo.Record{Topic: "admin", Partition: 2, Value: []byte("v"), Timestamp: base.Add(time.Duration(i) * time.Minute)}
		if err := producer.ProduceSync(ctx, record).FirstErr(); err != nil {
			t.Fatalf("produce record %d to the new partition: %v", i, err)
		}
	}
	if got := listOffset(t, client, "admin", 2, -1); got.ErrorCode != 0 || got.Offset != 3 {
		t.Fatalf("latest: %+v", got)
	}
	if got := listOffset(t, client, "admin", 2, -2); got.ErrorCode != 0 || got.Offset != 0 {
		t.Fatalf("earliest: %+v", got)
	}
	if got := listOffset(t, client, "admin", 2, base.Add(90*time.Second).UnixMilli()); got.Offset != 2 || got.Timestamp != base.Add(2*time.Minute).UnixMilli() {
		t.Fatalf("by timestamp: %+v", got)
	}
	if got := listOffset(t, client, "admin", 2, -3); got.Offset != 2 {
		t.Fatalf("max timestamp: %+v", got)
	}
	if got := listOffset(t, client, "admin", 9, -1); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("missing partition: %+v", got)
	}

	remove := kmsg.NewPtrDeleteTopicsRequest()
	name := "admin"
	removeTopic := kmsg.NewDeleteTopicsRequestTopic()
	removeTopic.Topic = &name
	remove.Topics, remove.TopicNames = append(remove.Topics, removeTopic), []string{"admin"}
	if resp, err := remove.RequestWith(ctx, client); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %v %+v", err, resp)
	}
	if got := listOffset(t, client, "admin", 2, -1); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("deleted topic still listed: %+v", got)
	}
	if code := create("admin", 3, 1); code != 0 {
		t.Fatalf("re-create: error %d", code)
	}
	if got := listOffset(t, client, "admin", 2, -1); got.ErrorCode != 0 || got.Offset != 0 {
		t.Fatalf("re-created topic is not empty: %+v", got)
	}
}

// TestMetadataAutoCreate: Metadata creates a missing topic when the
// request allows it, with num.partitions partitions.
func TestMetadataAutoCreate(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"num.partitions": "4"})
	client := newTestClient(t, b)
	req := kmsg.NewPtrMetadataRequest()
	requested := kmsg.NewMetadataRequestTopic()
	requested.Topic = kmsg.StringPtr("auto")
	req.Topics = append(req.Topics, requested)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 4 {
		t.Fatalf("metadata auto-create: %v %+v", err, resp)
	}
	if p := resp.Topics[0].Partitions[3]; p.Leader != 1 || len(p.ISR) != 1 {
		t.Fatalf("partition metadata: %+v", p)
	}
	req.AllowAutoTopicCreation = false
	requested.Topic = kmsg.StringPtr("not-created")
	req.Topics[0] = requested
	resp, err = req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata without auto-create: %v %+v", err, resp)
	}
}
