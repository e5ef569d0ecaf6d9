package conformance_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/clusternode"
	"github.com/segmentio/kafka-go"
)

// Compatibility tests with an unmodified third-party client: segmentio's
// kafka-go, which speaks old API versions (ApiVersions v0, group APIs at
// v0 and v1). Every wait is bounded by a context deadline.

// kafkaGoCreateTopic creates topic through kafka.Client.CreateTopics and
// checks kafka.Client.Metadata and kafka.Conn's metadata calls agree with
// it.
func kafkaGoCreateTopic(t *testing.T, ctx context.Context, b *clusternode.Member, topic string, partitions int) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(b.Addr()), Timeout: 10 * time.Second}
	created, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}}})
	if err != nil {
		t.Fatalf("create topics: %v", err)
	}
	if err := created.Errors[topic]; err != nil || len(created.Errors) != 1 {
		t.Fatalf("create topic %s: errors %v", topic, created.Errors)
	}
	metadata, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	host, portText, _ := net.SplitHostPort(b.Addr())
	port, _ := strconv.Atoi(portText)
	if len(metadata.Brokers) != 1 || metadata.Brokers[0].Host != host || metadata.Brokers[0].Port != port {
		t.Fatalf("metadata brokers %+v, want one at %s", metadata.Brokers, b.Addr())
	}
	if len(metadata.Topics) != 1 || metadata.Topics[0].Name != topic || metadata.Topics[0].Error != nil ||
		len(metadata.Topics[0].Partitions) != partitions {
		t.Fatalf("metadata topics %+v, want %s with %d partitions", metadata.Topics, topic, partitions)
	}
	for _, p := range metadata.Topics[0].Partitions {
		if p.Leader.ID != metadata.Brokers[0].ID || p.Error != nil {
			t.Fatalf("partition %d: leader %+v, error %v", p.ID, p.Leader, p.Error)
		}
	}

	conn, err := kafka.DialContext(ctx, "tcp", b.Addr())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer func() { _ = conn.Close() }()
	brokers, err := conn.Brokers()
	if err != nil || len(brokers) != 1 || brokers[0].Port != port {
		t.Fatalf("conn brokers %+v, error %v", brokers, err)
	}
	controller, err := conn.Controller()
	if err != nil || controller.ID != brokers[0].ID {
		t.Fatalf("conn controller %+v (brokers %+v), error %v", controller, brokers, err)
	}
	read, err := conn.ReadPartitions(topic)
	if err != nil || len(read) != partitions {
		t.Fatalf("conn partitions of %s: %+v, error %v", topic, read, err)
	}
}

// kafkaGoWrite writes count keyed messages (value prefix-i) with acks=all.
func kafkaGoWrite(t *testing.T, ctx context.Context, b *clusternode.Member, topic, prefix string, count int) {
	t.Helper()
	writer := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: topic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond, BatchSize: 100}
	defer func() { _ = writer.Close() }()
	messages := make([]kafka.Message, count)
	for i := range messages {
		messages[i] = kafka.Message{Key: fmt.Appendf(nil, "key-%d", i%50), Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
	}
	if err := writer.WriteMessages(ctx, messages...); err != nil {
		t.Fatalf("write %d messages to %s: %v", count, topic, err)
	}
	if stats := writer.Stats(); stats.Errors != 0 || stats.Messages != int64(count) {
		t.Fatalf("writer stats: %d messages, %d errors, want %d messages", stats.Messages, stats.Errors, count)
	}
}

// kafkaGoEnds returns each partition's end offset through kafka.Conns
// dialled to the partition leaders.
func kafkaGoEnds(t *testing.T, ctx context.Context, b *clusternode.Member, topic string, partitions int) map[int]int64 {
	t.Helper()
	ends := map[int]int64{}
	for partition := range partitions {
		conn, err := kafka.DialLeader(ctx, "tcp", b.Addr(), topic, partition)
		if err != nil {
			t.Fatalf("dial leader of %s-%d: %v", topic, partition, err)
		}
		first, last, err := conn.ReadOffsets()
		_ = conn.Close()
		if err != nil || first != 0 {
			t.Fatalf("offsets of %s-%d: first %d last %d, error %v", topic, partition, first, last, err)
		}
		ends[partition] = last
	}
	return ends
}

// newKafkaGoReader is a group reader of topic that commits synchronously
// and starts at the first offset when the group has none committed.
func newKafkaGoReader(b *clusternode.Member, groupID, topic string) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, GroupID: groupID, Topic: topic,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond, StartOffset: kafka.FirstOffset,
		CommitInterval: 0, HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 6 * time.Second,
		RebalanceTimeout: 5 * time.Second, JoinGroupBackoff: 50 * time.Millisecond,
		ReadBackoffMin: 10 * time.Millisecond, ReadBackoffMax: 50 * time.Millisecond, ReadLagInterval: -1})
}

// kafkaGoReadGroup fetches count messages with reader, committing each,
// and checks every value has prefix and appears once, and each partition's
// offsets run consecutively from first[partition] with the values' indexes
// rising. It returns the next offset of every partition it read.
func kafkaGoReadGroup(t *testing.T, ctx context.Context, reader *kafka.Reader, count int, prefix string, first map[int]int64) map[int]int64 {
	t.Helper()
	seen := map[string]bool{}
	next := map[int]int64{}
	lastIndex := map[int]int{}
	for range count {
		m, err := reader.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("fetch after %d of %d messages: %v", len(seen), count, err)
		}
		value := string(m.Value)
		index, err := strconv.Atoi(strings.TrimPrefix(value, prefix+"-"))
		if err != nil || !strings.HasPrefix(value, prefix+"-") || seen[value] {
			t.Fatalf("partition %d offset %d: value %q is not a new %s- value", m.Partition, m.Offset, value, prefix)
		}
		seen[value] = true
		want, ok := next[m.Partition]
		if !ok {
			want = first[m.Partition]
		}
		if m.Offset != want {
			t.Fatalf("partition %d: got offset %d, want %d", m.Partition, m.Offset, want)
		}
		if previous, ok := lastIndex[m.Partition]; ok && index <= previous {
			t.Fatalf("partition %d: %q after index %d breaks the write order", m.Partition, value, previous)
		}
		next[m.Partition], lastIndex[m.Partition] = m.Offset+1, index
		if err := reader.CommitMessages(ctx, m); err != nil {
			t.Fatalf("commit partition %d offset %d: %v", m.Partition, m.Offset, err)
		}
	}
	return next
}

// A writer with acks=all writes 1,000 messages; a group reader consumes
// and commits them all; after it closes, a second reader of the group
// starts at the committed offsets.
func TestKafkaGoWriterAndGroupReader(t *testing.T) {
	t.Parallel()
	b := startBroker(t, groupTestProperties())
	ctx := testContext(t, 20*time.Second)
	const topic, partitions, groupID = "kafka-go", 3, "kafka-go-group"
	kafkaGoCreateTopic(t, ctx, b, topic, partitions)
	kafkaGoWrite(t, ctx, b, topic, "first", 1000)
	ends := kafkaGoEnds(t, ctx, b, topic, partitions)
	if total := ends[0] + ends[1] + ends[2]; total != 1000 {
		t.Fatalf("end offsets %v sum to %d, want 1000", ends, total)
	}

	reader := newKafkaGoReader(b, groupID, topic)
	next := kafkaGoReadGroup(t, ctx, reader, 1000, "first", map[int]int64{})
	if fmt.Sprint(next) != fmt.Sprint(ends) {
		t.Fatalf("reader stopped at %v, want the end offsets %v", next, ends)
	}
	if err := reader.Close(); err != nil {
		t.Fatalf("close reader: %v", err)
	}
	client := &kafka.Client{Addr: kafka.TCP(b.Addr()), Timeout: 10 * time.Second}
	fetched, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: groupID, Topics: map[string][]int{topic: {0, 1, 2}}})
	if err != nil || fetched.Error != nil {
		t.Fatalf("offset fetch: %v / %v", err, fetched.Error)
	}
	committed := map[int]int64{}
	for _, p := range fetched.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("offset fetch partition %d: %v", p.Partition, p.Error)
		}
		committed[p.Partition] = p.CommittedOffset
	}
	if fmt.Sprint(committed) != fmt.Sprint(ends) {
		t.Fatalf("committed offsets %v, want the end offsets %v", committed, ends)
	}

	kafkaGoWrite(t, ctx, b, topic, "later", 100)
	second := newKafkaGoReader(b, groupID, topic)
	defer func() { _ = second.Close() }()
	// Offsets consecutive from the committed ones and only later values:
	// the second reader resumed where the first committed.
	kafkaGoReadGroup(t, ctx, second, 100, "later", committed)
}
