package broker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// startTestBroker starts a broker on 127.0.0.1:0 over dir and closes it
// when the test ends.
func startTestBroker(t testing.TB, dir string, properties map[string]string) *Broker {
	t.Helper()
	level := slog.LevelWarn
	if os.Getenv("BROKER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	b, err := Start(context.Background(), Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: dir, Properties: properties, Logger: logger})
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

// newTestClient returns a franz-go client of the broker, closed at the end
// of the test. Idempotent writes are off so that options such as acks=0
// stay valid (franz-go's idempotence requires acks=all); the idempotence
// tests build their own producers.
func newTestClient(t testing.TB, b *Broker, options ...kgo.Opt) *kgo.Client {
	t.Helper()
	options = append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.DisableIdempotentWrite()}, options...)
	client, err := kgo.NewClient(options...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// testContext is a context bounded to keep a stuck test from hanging.
func testContext(t testing.TB, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates a topic through CreateTopics and fails the test on
// any error.
func createTopic(t testing.TB, client *kgo.Client, name string, partitions int32, configs map[string]string) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	for k, v := range configs {
		config := kmsg.NewCreateTopicsRequestTopicConfig()
		config.Name, config.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, config)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create topic %s: %v (%v)", name, err, resp.Topics[0].ErrorMessage)
	}
	return resp.Topics[0]
}

// consumeAll reads partitions of topic from the start until want records
// arrived or the deadline passes.
func consumeAll(t *testing.T, b *Broker, topic string, partitions int32, want int) map[int32][]*kgo.Record {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	client := newTestClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200*time.Millisecond))
	ctx := testContext(t, 30*time.Second)
	got := map[int32][]*kgo.Record{}
	count := 0
	for count < want {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", count, want)
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			t.Fatalf("fetch %s-%d: %v", topic, partition, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			count++
		})
	}
	client.Close()
	if count != want {
		t.Fatalf("consumed %d records, want %d", count, want)
	}
	return got
}

// versionedCall runs one per-API handler at a request version, for
// checkEveryVersionRoundTrips.
type versionedCall struct {
	name     string
	versions [2]int16 // first and last version, inclusive
	run      func(version int16) kmsg.Response
}

// checkEveryVersionRoundTrips runs every call at each of its versions and
// checks that the handler answers at that version, with a response kmsg
// decodes and encodes back to the same bytes.
func checkEveryVersionRoundTrips(t *testing.T, calls []versionedCall) {
	t.Helper()
	for _, c := range calls {
		for version := c.versions[0]; version <= c.versions[1]; version++ {
			resp := c.run(version)
			if resp.GetVersion() != version {
				t.Fatalf("%s v%d answered with version %d", c.name, version, resp.GetVersion())
			}
			encoded := resp.AppendTo(nil)
			fresh := kmsg.ResponseForKey(resp.Key())
			fresh.SetVersion(version)
			if err := fresh.ReadFrom(encoded); err != nil {
				t.Fatalf("%s v%d: response does not decode: %v", c.name, version, err)
			}
			if reencoded := fresh.AppendTo(nil); string(reencoded) != string(encoded) {
				t.Fatalf("%s v%d: response does not round-trip", c.name, version)
			}
		}
	}
}

// readyCoordinator readies this broker's coordinator of key, as a
// client's FindCoordinator would before its first coordinator request:
// the internal topic of kind is created through the quorum on first use,
// and the coordinator shard of key's partition loads on a goroutine of
// its own. It returns once that shard is loaded, so raw requests for key
// (JoinGroup, InitProducerId, ...) reach it.
func readyCoordinator(t *testing.T, b *Broker, kind coordinatorKind, key string) {
	t.Helper()
	ctx := testContext(t, 20*time.Second)
	loaded := func() bool {
		_, loaded, _ := b.replication.groups.lookup(b.offsetsPartition(key))
		return loaded
	}
	topic, partitions := group.OffsetsTopic, b.config.settings.OffsetsTopicPartitions
	if kind == coordinatorTransaction {
		topic, partitions = txn.TransactionStateTopic, b.config.settings.TransactionStatePartitions
		loaded = func() bool {
			_, loaded, _ := b.replication.txns.lookup(b.transactionStatePartition(key))
			return loaded
		}
	}
	if err := b.ensureInternalTopic(ctx, topic, partitions); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	testutil.UntilContext(t, ctx, fmt.Sprintf("coordinator of %q loaded", key), loaded)
}

// controllerCreateTopic creates a topic through the broker's quorum, as
// CreateTopics does, and returns its local replica (led here).
func controllerCreateTopic(t *testing.T, b *Broker, name string, partitions int32, configs map[string]string) *topic {
	t.Helper()
	if err := b.replication.config.Topics.CreateTopic(testContext(t, 20*time.Second), name, partitions, 1, configs); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	created := b.topicByName(name)
	if created == nil {
		t.Fatalf("topic %s created, not here", name)
	}
	return created
}

// withCoordinatorShards makes the bare broker b of a handler test (no
// listener, no partition) the leader of one-partition internal topics
// whose loaded coordinator shards are groups and transactions (either
// may be nil), as ApplyPartitionRoles and the shards' loads would: the
// handlers reach them through groupsFor and transactionsFor, and
// FindCoordinator names b.
func withCoordinatorShards(b *Broker, groups *group.Coordinator, transactions *txn.Coordinator) {
	b.config.settings.OffsetsTopicPartitions, b.config.settings.TransactionStatePartitions = 1, 1
	if b.replication == nil {
		b.replication = &replication{}
		b.replication.groups.topic, b.replication.txns.topic = group.OffsetsTopic, txn.TransactionStateTopic
	}
	view := &clusterView{brokers: []ClusterBroker{{ID: b.nodeID}}, topics: map[string][]PartitionRole{}}
	loaded := make(chan struct{})
	close(loaded)
	if groups != nil {
		view.topics[group.OffsetsTopic] = []PartitionRole{{Topic: group.OffsetsTopic, Leader: b.nodeID, Replicas: []int32{b.nodeID}, ISR: []int32{b.nodeID}}}
		b.replication.groups.shards = map[int32]*coordinatorShard[*group.Coordinator]{
			0: {coordinator: groups, loaded: true, published: loaded, ctx: context.Background()},
		}
	}
	if transactions != nil {
		view.topics[txn.TransactionStateTopic] = []PartitionRole{{Topic: txn.TransactionStateTopic, Leader: b.nodeID, Replicas: []int32{b.nodeID}, ISR: []int32{b.nodeID}}}
		b.replication.txns.shards = map[int32]*coordinatorShard[*txn.Coordinator]{
			0: {coordinator: transactions, loaded: true, published: loaded, ctx: context.Background()},
		}
	}
	b.replication.view.Store(view)
}
