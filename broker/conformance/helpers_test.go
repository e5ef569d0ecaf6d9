// Package conformance_test drives the broker with unmodified Kafka
// clients other than franz-go — kcat (librdkafka), IBM sarama and
// segmentio's kafka-go — over loopback. It is a black-box package: it
// starts brokers through broker.Start (or the `exactly` binary) and checks
// what the clients see, with franz-go only to set up and inspect. Every
// test runs in parallel with the others: each owns its broker, data
// directory and 127.0.0.1:0 listeners.
package conformance_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/clusternode"
	"github.com/exactly-eos/exactly/internal/testenv"
)

// startBroker starts a broker on 127.0.0.1:0 over a fresh data directory,
// as `exactly broker` runs it without a quorum (a cluster of one, its
// metadata quorum in process), and closes it when the test ends. BROKER_TEST_LOG set makes it log at
// debug level to stderr.
func startBroker(t *testing.T, properties map[string]string) *clusternode.Member {
	t.Helper()
	level := slog.LevelWarn
	if os.Getenv("BROKER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	b, err := clusternode.Start(clusternode.Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		Properties: properties, Logger: logger})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return b
}

// groupTestProperties make group tests fast: no initial rebalance delay,
// short sessions allowed, few offsets partitions.
func groupTestProperties() map[string]string {
	return map[string]string{
		"group.initial.rebalance.delay.ms": "0",
		"group.min.session.timeout.ms":     "500",
		"offsets.topic.num.partitions":     "5",
	}
}

// newClient returns a franz-go client of b, closed at the end of the test,
// with idempotent writes off (as the broker package's own test client).
func newClient(t *testing.T, b *clusternode.Member, options ...kgo.Opt) *kgo.Client {
	t.Helper()
	client, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.DisableIdempotentWrite()}, options...)...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// testContext is a context bounded to keep a stuck test from hanging.
func testContext(t *testing.T, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates a topic with one replica per partition through
// CreateTopics and fails the test on any error.
func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	client, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer client.Close()
	request := kmsg.NewPtrCreateTopicsRequest()
	requestTopic := kmsg.NewCreateTopicsRequestTopic()
	requestTopic.Topic, requestTopic.NumPartitions, requestTopic.ReplicationFactor = topic, partitions, 1
	request.Topics = append(request.Topics, requestTopic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(response.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// produceNumbered writes count records whose values are their indexes,
// record i to partition i % partitions.
func produceNumbered(t *testing.T, b *clusternode.Member, topic string, partitions int32, count int) {
	t.Helper()
	producer := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	records := make([]*kgo.Record, count)
	for i := range records {
		records[i] = &kgo.Record{Partition: int32(i) % partitions, Value: []byte(strconv.Itoa(i))}
	}
	if err := producer.ProduceSync(testContext(t, 30*time.Second), records...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", count, topic, err)
	}
	producer.Close()
}

// committedOffsets returns the group's committed offsets of topic.
func committedOffsets(t *testing.T, client *kgo.Client, groupID, topic string) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = groupID
	req.Topics = nil // every committed offset
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("offset fetch %s: %v", groupID, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("offset fetch %s: %v", groupID, err)
	}
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		if rt.Topic != topic {
			continue
		}
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("offset fetch %s %s-%d: %v", groupID, topic, rp.Partition, err)
			}
			out[rp.Partition] = rp.Offset
		}
	}
	return out
}

// describeProducers returns DescribeProducers' answer for one partition.
func describeProducers(t *testing.T, client *kgo.Client, topic string, partition int32) kmsg.DescribeProducersResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("DescribeProducers %s-%d: %v", topic, partition, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeProducers response has %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// requireKcat returns kcat's path; without kcat the test skips with one
// line outside CI and fails in CI (ci/test.sh installs it).
func requireKcat(t *testing.T) string {
	t.Helper()
	return testenv.Program(t, "kcat", "librdkafka's command-line client: apt-get install kcat; ci/test.sh installs it")
}
