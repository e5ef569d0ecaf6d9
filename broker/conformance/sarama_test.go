package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/exactly-eos/exactly/broker/clusternode"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// Compatibility tests with an unmodified third-party client: IBM sarama,
// configured as Kafka 2.8 (its default protocol level) and as Kafka 4.0.
// Every wait polls a condition against a deadline.

// saramaVersions are the protocol levels each sarama test runs at.
var saramaVersions = []struct {
	name    string
	version sarama.KafkaVersion
}{
	{"kafka-2.8", sarama.V2_8_0_0},
	{"kafka-4.0", sarama.V4_0_0_0},
}

// saramaConfig is a sarama configuration at version with acks=all and
// short retry backoffs, so that a test never waits out a long default.
func saramaConfig(version sarama.KafkaVersion) *sarama.Config {
	config := sarama.NewConfig()
	config.Version = version
	config.ClientID = "sarama-compat"
	config.Producer.RequiredAcks = sarama.WaitForAll
	config.Producer.Return.Successes = true
	config.Producer.Retry.Backoff = 20 * time.Millisecond
	config.Metadata.Retry.Backoff = 20 * time.Millisecond
	config.Consumer.Retry.Backoff = 20 * time.Millisecond
	config.Consumer.MaxWaitTime = 100 * time.Millisecond
	config.Consumer.Return.Errors = true
	return config
}

// newSaramaClient returns a sarama client of b, closed at the end of the
// test.
func newSaramaClient(t *testing.T, b *clusternode.Member, config *sarama.Config) sarama.Client {
	t.Helper()
	client, err := sarama.NewClient([]string{b.Addr()}, config)
	if err != nil {
		t.Fatalf("new sarama client: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// saramaCreateTopic creates topic through sarama's ClusterAdmin.
func saramaCreateTopic(t *testing.T, client sarama.Client, topic string, partitions int32) {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		t.Fatalf("new cluster admin: %v", err)
	}
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	partitionIDs, err := client.Partitions(topic)
	if err != nil {
		t.Fatalf("partitions of %s: %v", topic, err)
	}
	if int32(len(partitionIDs)) != partitions {
		t.Fatalf("topic %s has %d partitions after CreateTopic, want %d", topic, len(partitionIDs), partitions)
	}
}

// saramaRecord is one record as the producer placed it.
type saramaRecord struct {
	key, value string
	offset     int64
}

// saramaProduce sends count keyed records (key prefix-key-i%50, value
// prefix-value-i) in one SendMessages call and returns, per partition, the
// records in offset order as the producer's acks placed them.
func saramaProduce(t *testing.T, producer sarama.SyncProducer, topic, prefix string, count int) map[int32][]saramaRecord {
	t.Helper()
	messages := make([]*sarama.ProducerMessage, count)
	for i := range messages {
		messages[i] = &sarama.ProducerMessage{Topic: topic,
			Key:   sarama.StringEncoder(fmt.Sprintf("%s-key-%d", prefix, i%50)),
			Value: sarama.StringEncoder(fmt.Sprintf("%s-value-%d", prefix, i))}
	}
	if err := producer.SendMessages(messages); err != nil {
		t.Fatalf("send %d messages to %s: %v", count, topic, err)
	}
	placed := map[int32][]saramaRecord{}
	for _, m := range messages {
		key, _ := m.Key.Encode()
		value, _ := m.Value.Encode()
		placed[m.Partition] = append(placed[m.Partition], saramaRecord{string(key), string(value), m.Offset})
	}
	for partition, records := range placed {
		slices.SortFunc(records, func(a, b saramaRecord) int { return int(a.offset - b.offset) })
		placed[partition] = records
	}
	return placed
}

// saramaReadPartition reads want records of topic-partition from offset
// with a fresh consumer of config.
func saramaReadPartition(t *testing.T, b *clusternode.Member, config *sarama.Config, topic string, partition int32, offset int64, want int) []*sarama.ConsumerMessage {
	t.Helper()
	consumer, err := sarama.NewConsumer([]string{b.Addr()}, config)
	if err != nil {
		t.Fatalf("new consumer: %v", err)
	}
	defer func() { _ = consumer.Close() }()
	partitionConsumer, err := consumer.ConsumePartition(topic, partition, offset)
	if err != nil {
		t.Fatalf("consume %s-%d: %v", topic, partition, err)
	}
	defer func() { _ = partitionConsumer.Close() }()
	deadline := time.After(10 * time.Second)
	var got []*sarama.ConsumerMessage
	for len(got) < want {
		select {
		case m := <-partitionConsumer.Messages():
			got = append(got, m)
		case err := <-partitionConsumer.Errors():
			t.Fatalf("consume %s-%d: %v", topic, partition, err)
		case <-deadline:
			t.Fatalf("consumed %d of %d records of %s-%d before the deadline", len(got), want, topic, partition)
		}
	}
	return got
}

// checkSaramaRead fails the test unless got is exactly placed: same keys,
// values and offsets, in order.
func checkSaramaRead(t *testing.T, topic string, partition int32, placed []saramaRecord, got []*sarama.ConsumerMessage) {
	t.Helper()
	if len(got) != len(placed) {
		t.Fatalf("%s-%d: read %d records, produced %d", topic, partition, len(got), len(placed))
	}
	for i, m := range got {
		want := placed[i]
		if m.Offset != want.offset || string(m.Key) != want.key || string(m.Value) != want.value {
			t.Fatalf("%s-%d record %d: got offset %d key %q value %q, want offset %d key %q value %q",
				topic, partition, i, m.Offset, m.Key, m.Value, want.offset, want.key, want.value)
		}
	}
}

// A sync producer with acks=all writes 1,000 keyed records; a consumer
// reads every partition from the oldest offset back, in order and intact.
func TestSaramaProduceConsume(t *testing.T) {
	t.Parallel()
	for _, v := range saramaVersions {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, nil)
			config := saramaConfig(v.version)
			client := newSaramaClient(t, b, config)
			const topic = "sarama-records"
			saramaCreateTopic(t, client, topic, 3)
			producer, err := sarama.NewSyncProducerFromClient(client)
			if err != nil {
				t.Fatalf("new sync producer: %v", err)
			}
			defer func() { _ = producer.Close() }()
			placed := saramaProduce(t, producer, topic, "plain", 1000)
			if len(placed) != 3 {
				t.Fatalf("1,000 keyed records landed in %d partitions, want 3", len(placed))
			}
			for partition, records := range placed {
				for i, r := range records {
					if r.offset != int64(i) {
						t.Fatalf("%s-%d: acked offsets %v are not 0..%d", topic, partition, r.offset, len(records)-1)
					}
				}
				got := saramaReadPartition(t, b, config, topic, partition, sarama.OffsetOldest, len(records))
				checkSaramaRead(t, topic, partition, records, got)
			}
		})
	}
}

// An idempotent producer (one request in flight) writes 1,000 records once
// each, and the broker tracks it as a producer of every partition.
func TestSaramaIdempotentProducer(t *testing.T) {
	t.Parallel()
	for _, v := range saramaVersions {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, nil)
			config := saramaConfig(v.version)
			config.Producer.Idempotent = true
			config.Net.MaxOpenRequests = 1
			client := newSaramaClient(t, b, config)
			const topic = "sarama-idempotent"
			saramaCreateTopic(t, client, topic, 3)
			producer, err := sarama.NewSyncProducerFromClient(client)
			if err != nil {
				t.Fatalf("new idempotent producer: %v", err)
			}
			defer func() { _ = producer.Close() }()
			placed := saramaProduce(t, producer, topic, "idempotent", 1000)
			inspector := newClient(t, b)
			for partition, records := range placed {
				got := saramaReadPartition(t, b, config, topic, partition, sarama.OffsetOldest, len(records))
				checkSaramaRead(t, topic, partition, records, got)
				state := describeProducers(t, inspector, topic, partition)
				if err := kerr.ErrorForCode(state.ErrorCode); err != nil {
					t.Fatalf("describe producers %s-%d: %v", topic, partition, err)
				}
				if len(state.ActiveProducers) != 1 || state.ActiveProducers[0].ProducerID < 0 {
					t.Fatalf("%s-%d: active producers %+v, want the one idempotent producer", topic, partition, state.ActiveProducers)
				}
				if last := state.ActiveProducers[0].LastSequence; last != int32(len(records)-1) {
					t.Fatalf("%s-%d: last sequence %d, want %d", topic, partition, last, len(records)-1)
				}
			}
		})
	}
}

// A transactional producer commits two transactions around an aborted
// one; read_committed sees the committed records only, read_uncommitted
// sees all of them.
func TestSaramaTransactions(t *testing.T) {
	t.Parallel()
	for _, v := range saramaVersions {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, nil)
			config := saramaConfig(v.version)
			config.Producer.Idempotent = true
			config.Net.MaxOpenRequests = 1
			config.Producer.Transaction.ID = "sarama-txn-" + v.name
			config.Producer.Transaction.Retry.Backoff = 20 * time.Millisecond
			config.Producer.Partitioner = sarama.NewManualPartitioner
			client := newSaramaClient(t, b, config)
			const topic, partitions = "sarama-txn", 3
			saramaCreateTopic(t, client, topic, partitions)
			producer, err := sarama.NewSyncProducerFromClient(client)
			if err != nil {
				t.Fatalf("new transactional producer: %v", err)
			}
			defer func() { _ = producer.Close() }()
			if !producer.IsTransactional() {
				t.Fatal("producer is not transactional")
			}
			committed, all := map[int32][]string{}, map[int32][]string{}
			for _, txn := range []struct {
				name   string
				commit bool
			}{{"first", true}, {"aborted", false}, {"second", true}} {
				sent := saramaSendTransaction(t, producer, topic, partitions, txn.name, txn.commit)
				for partition, values := range sent {
					all[partition] = append(all[partition], values...)
					if txn.commit {
						committed[partition] = append(committed[partition], values...)
					}
				}
			}
			readCommitted := saramaConfig(v.version)
			readCommitted.Consumer.IsolationLevel = sarama.ReadCommitted
			readUncommitted := saramaConfig(v.version)
			readUncommitted.Consumer.IsolationLevel = sarama.ReadUncommitted
			for partition := range int32(partitions) {
				// The second committed transaction follows the aborted one
				// in every partition, so reading through it proves no
				// aborted record was delivered.
				checkSaramaValues(t, "read_committed", committed[partition],
					saramaReadPartition(t, b, readCommitted, topic, partition, sarama.OffsetOldest, len(committed[partition])))
				checkSaramaValues(t, "read_uncommitted", all[partition],
					saramaReadPartition(t, b, readUncommitted, topic, partition, sarama.OffsetOldest, len(all[partition])))
			}
		})
	}
}

// saramaSendTransaction sends ten records to each partition of topic in
// one transaction, committed or aborted, and returns the values sent per
// partition.
func saramaSendTransaction(t *testing.T, producer sarama.SyncProducer, topic string, partitions int32, name string, commit bool) map[int32][]string {
	t.Helper()
	if err := producer.BeginTxn(); err != nil {
		t.Fatalf("begin transaction %s: %v", name, err)
	}
	sent := map[int32][]string{}
	var messages []*sarama.ProducerMessage
	for i := range 10 * int(partitions) {
		partition := int32(i) % partitions
		value := fmt.Sprintf("%s-%d", name, i)
		sent[partition] = append(sent[partition], value)
		messages = append(messages, &sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.StringEncoder(value)})
	}
	if err := producer.SendMessages(messages); err != nil {
		t.Fatalf("send transaction %s: %v", name, err)
	}
	end := producer.CommitTxn
	if !commit {
		end = producer.AbortTxn
	}
	if err := end(); err != nil {
		t.Fatalf("end transaction %s (commit %v): %v", name, commit, err)
	}
	return sent
}

// checkSaramaValues fails the test unless got carries exactly the values
// want, in order.
func checkSaramaValues(t *testing.T, what string, want []string, got []*sarama.ConsumerMessage) {
	t.Helper()
	values := make([]string, len(got))
	for i, m := range got {
		values[i] = string(m.Value)
	}
	if !slices.Equal(values, want) {
		t.Fatalf("%s read %v, want %v", what, values, want)
	}
}

// saramaGroupLog is what the members of a sarama consumer group saw: the
// claims of each member's current session and every record delivered.
// Handlers run on sarama's goroutines; mu guards everything.
type saramaGroupLog struct {
	mu        sync.Mutex
	claims    map[string]map[string][]int32
	sessions  map[string]int32
	delivered map[string]int
	offsets   map[int32][]int64
	errs      []error
}

func newSaramaGroupLog() *saramaGroupLog {
	return &saramaGroupLog{claims: map[string]map[string][]int32{}, sessions: map[string]int32{},
		delivered: map[string]int{}, offsets: map[int32][]int64{}}
}

// saramaHandler is one member's sarama.ConsumerGroupHandler: it logs the
// session's claims and every record, and marks each record consumed.
type saramaHandler struct {
	name string
	log  *saramaGroupLog
}

func (h saramaHandler) Setup(session sarama.ConsumerGroupSession) error {
	h.log.mu.Lock()
	defer h.log.mu.Unlock()
	h.log.claims[h.name] = session.Claims()
	h.log.sessions[h.name] = session.GenerationID()
	return nil
}

func (h saramaHandler) Cleanup(sarama.ConsumerGroupSession) error {
	h.log.mu.Lock()
	defer h.log.mu.Unlock()
	delete(h.log.claims, h.name)
	return nil
}

func (h saramaHandler) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.log.mu.Lock()
		h.log.delivered[string(m.Value)]++
		h.log.offsets[m.Partition] = append(h.log.offsets[m.Partition], m.Offset)
		h.log.mu.Unlock()
		session.MarkMessage(m, "")
	}
	return nil
}

// shared reports whether members, all in one generation, claim every
// partition of topic exactly once between them.
func (l *saramaGroupLog) shared(topic string, members []string, partitions int32) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var claimed []int32
	generation := l.sessions[members[0]]
	for _, member := range members {
		if l.claims[member] == nil || l.sessions[member] != generation {
			return false, fmt.Sprintf("claims %v in generations %v", l.claims, l.sessions)
		}
		claimed = append(claimed, l.claims[member][topic]...)
	}
	slices.Sort(claimed)
	for i, partition := range claimed {
		if partition != int32(i) {
			return false, fmt.Sprintf("claims %v", l.claims)
		}
	}
	return len(claimed) == int(partitions), fmt.Sprintf("claims %v", l.claims)
}

// startSaramaMember runs a consumer group member; the returned stop
// closes it (leaving the group) and waits for its goroutine, and runs at
// the end of the test if the test did not call it.
func startSaramaMember(t *testing.T, b *clusternode.Member, config *sarama.Config, log *saramaGroupLog, name, groupID, topic string) (stop func()) {
	t.Helper()
	group, err := sarama.NewConsumerGroup([]string{b.Addr()}, groupID, config)
	if err != nil {
		t.Fatalf("new consumer group member %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	report := func(err error) {
		log.mu.Lock()
		log.errs = append(log.errs, fmt.Errorf("member %s: %w", name, err))
		log.mu.Unlock()
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			err := group.Consume(ctx, []string{topic}, saramaHandler{name, log})
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				return
			}
			if err != nil {
				report(err)
			}
		}
	}()
	go func() {
		for err := range group.Errors() {
			report(err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			if err := group.Close(); err != nil {
				t.Errorf("close member %s: %v", name, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// saramaGroupConfig is a consumer group configuration at version that
// starts from the oldest offset when nothing is committed, autocommits
// every 50 ms and reacts to rebalances within a fraction of a second.
func saramaGroupConfig(version sarama.KafkaVersion) *sarama.Config {
	config := saramaConfig(version)
	config.Consumer.Offsets.Initial = sarama.OffsetOldest
	config.Consumer.Offsets.AutoCommit.Enable = true
	config.Consumer.Offsets.AutoCommit.Interval = 50 * time.Millisecond
	config.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	config.Consumer.Group.Session.Timeout = 6 * time.Second
	config.Consumer.Group.Rebalance.Retry.Backoff = 50 * time.Millisecond
	return config
}

// saramaCommitted returns the group's committed offsets of topic's
// partitions through sarama's ClusterAdmin.
func saramaCommitted(t *testing.T, admin sarama.ClusterAdmin, groupID, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	ids := make([]int32, partitions)
	for i := range ids {
		ids[i] = int32(i)
	}
	resp, err := admin.ListConsumerGroupOffsets(groupID, map[string][]int32{topic: ids})
	if err != nil {
		t.Fatalf("list offsets of group %s: %v", groupID, err)
	}
	committed := map[int32]int64{}
	for _, partition := range ids {
		block := resp.GetBlock(topic, partition)
		if block == nil {
			t.Fatalf("group %s: no offset block for %s-%d", groupID, topic, partition)
		}
		if !errors.Is(block.Err, sarama.ErrNoError) {
			t.Fatalf("group %s offset of %s-%d: %v", groupID, topic, partition, block.Err)
		}
		committed[partition] = block.Offset
	}
	return committed
}

// saramaEnds returns the high watermark of every partition of topic.
func saramaEnds(t *testing.T, client sarama.Client, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	ends := map[int32]int64{}
	for partition := range partitions {
		end, err := client.GetOffset(topic, partition, sarama.OffsetNewest)
		if err != nil {
			t.Fatalf("end offset of %s-%d: %v", topic, partition, err)
		}
		ends[partition] = end
	}
	return ends
}

// checkDeliveredOnce fails the test unless log holds want records, each
// delivered once, every value starting with prefix, and each partition's
// offsets consecutive from first[partition].
func (l *saramaGroupLog) checkDeliveredOnce(t *testing.T, want int, prefix string, first map[int32]int64) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) > 0 {
		t.Fatalf("group members reported errors: %v", l.errs)
	}
	if len(l.delivered) != want {
		t.Fatalf("group delivered %d distinct records, want %d", len(l.delivered), want)
	}
	for value, count := range l.delivered {
		if count != 1 || !strings.HasPrefix(value, prefix) {
			t.Fatalf("record %q delivered %d times (want once, prefix %q)", value, count, prefix)
		}
	}
	for partition, offsets := range l.offsets {
		for i, offset := range offsets {
			if offset != first[partition]+int64(i) {
				t.Fatalf("partition %d delivered offsets %v, want consecutive from %d", partition, offsets, first[partition])
			}
		}
	}
}

// Two group members share a topic's partitions and consume 1,000 records
// exactly once, committing as they go; a new member of the group, started
// after both left, resumes at the committed offsets.
func TestSaramaConsumerGroup(t *testing.T) {
	t.Parallel()
	for _, v := range saramaVersions {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, groupTestProperties())
			config := saramaGroupConfig(v.version)
			client := newSaramaClient(t, b, config)
			const topic, partitions, groupID = "sarama-group", 3, "sarama-group"
			saramaCreateTopic(t, client, topic, partitions)
			admin, err := sarama.NewClusterAdminFromClient(client)
			if err != nil {
				t.Fatalf("new cluster admin: %v", err)
			}
			producer, err := sarama.NewSyncProducerFromClient(client)
			if err != nil {
				t.Fatalf("new sync producer: %v", err)
			}
			defer func() { _ = producer.Close() }()

			// Records are produced once both members hold their share, so
			// no rebalance happens while they consume.
			log := newSaramaGroupLog()
			stopA := startSaramaMember(t, b, config, log, "a", groupID, topic)
			stopB := startSaramaMember(t, b, config, log, "b", groupID, topic)
			testutil.Eventually(t, 10*time.Second, "a and b share the partitions", func() (bool, string) {
				return log.shared(topic, []string{"a", "b"}, partitions)
			})
			saramaProduce(t, producer, topic, "first", 1000)
			testutil.Eventually(t, 10*time.Second, "the group consumes 1,000 records", func() (bool, string) {
				log.mu.Lock()
				defer log.mu.Unlock()
				return len(log.delivered) >= 1000, fmt.Sprintf("%d delivered", len(log.delivered))
			})
			log.checkDeliveredOnce(t, 1000, "first-", map[int32]int64{})
			ends := saramaEnds(t, client, topic, partitions)
			testutil.Eventually(t, 10*time.Second, "the group commits its position", func() (bool, string) {
				committed := saramaCommitted(t, admin, groupID, topic, partitions)
				return fmt.Sprint(committed) == fmt.Sprint(ends), fmt.Sprintf("committed %v, ends %v", committed, ends)
			})
			stopA()
			stopB()

			saramaProduce(t, producer, topic, "later", 100)
			later := newSaramaGroupLog()
			startSaramaMember(t, b, config, later, "c", groupID, topic)
			testutil.Eventually(t, 10*time.Second, "the new member consumes the 100 later records", func() (bool, string) {
				later.mu.Lock()
				defer later.mu.Unlock()
				return len(later.delivered) >= 100, fmt.Sprintf("%d delivered", len(later.delivered))
			})
			// Consecutive offsets from the committed ones: the new member
			// started exactly where the group left off.
			later.checkDeliveredOnce(t, 100, "later-", ends)
		})
	}
}
