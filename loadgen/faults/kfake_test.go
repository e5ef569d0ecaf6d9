package faults

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// connectHook records the address of every connection a client opens.
type connectHook struct {
	mu    sync.Mutex
	addrs []string
}

func (h *connectHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, conn net.Conn, err error) {
	if err != nil || conn == nil {
		return
	}
	h.mu.Lock()
	h.addrs = append(h.addrs, conn.RemoteAddr().String())
	h.mu.Unlock()
}

func (h *connectHook) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.addrs)
}

func newKfake(t *testing.T, brokers int, partitions int32, topic string) *kfake.Cluster {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	return cluster
}

func newClient(t *testing.T, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	// A connection cut right after its first request looks to kgo like a
	// missing SASL handshake and triggers a metadata refresh, which waits
	// for MetadataMinAge (5 s by default): keep tests fast.
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
		kgo.MetadataMinAge(20 * time.Millisecond),
	}, opts...)
	client, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

// consumeAll reads topic from the start until every partition is read up to
// its high watermark and at least want records arrived; it returns the
// values in arrival order.
func consumeAll(t *testing.T, client *kgo.Client, want int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var values []string
	caughtUp := map[int32]bool{}
	for {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d records, want at least %d: %v", len(values), want, ctx.Err())
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			t.Logf("fetch %s/%d: %v", topic, partition, err)
		})
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				values = append(values, string(r.Value))
				caughtUp[p.Partition] = r.Offset+1 >= p.HighWatermark
			}
		})
		done := len(values) >= want
		for _, ok := range caughtUp {
			done = done && ok
		}
		if done {
			return values
		}
	}
}

// A franz-go client seeded with one proxy address produces, joins a group
// (FindCoordinator) and consumes through the proxy: Metadata and
// FindCoordinator answers point it at proxy listeners, so it never opens a
// connection to a broker's own port.
func TestClientReachesBrokersOnlyThroughProxy(t *testing.T) {
	t.Parallel()
	const topic, records = "rewrite", 300
	cluster := newKfake(t, 3, 6, topic)
	brokerAddrs := cluster.ListenAddrs()
	proxy, err := New(Config{Upstreams: brokerAddrs[:1], Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })

	hook := &connectHook{}
	producer := newClient(t, proxy.Addrs(), kgo.WithHooks(hook), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range records {
		record := &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}
		producer.Produce(ctx, record, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	consumer := newClient(t, proxy.Addrs(), kgo.WithHooks(hook), kgo.ConsumeTopics(topic),
		kgo.ConsumerGroup("rewrite-group"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	values := consumeAll(t, consumer, records)
	if len(values) != records {
		t.Fatalf("consumed %d records, want %d", len(values), records)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit through the coordinator's proxy address: %v", err)
	}

	proxyAddrs := proxy.Addrs()
	for _, addr := range hook.seen() {
		if !slices.Contains(proxyAddrs, addr) {
			t.Errorf("client connected to %s, not a proxy address %v (brokers %v)", addr, proxyAddrs, brokerAddrs)
		}
	}
	stats := proxy.Stats()
	if len(stats) != 3 {
		t.Fatalf("proxy has %d listeners, want one per broker: %+v", len(stats), stats)
	}
	var nodes []int32
	for _, s := range stats {
		if !slices.Contains(brokerAddrs, s.Upstream) || s.Connections == 0 {
			t.Errorf("listener %+v: want a kfake broker with connections", s)
		}
		nodes = append(nodes, s.NodeID)
	}
	slices.Sort(nodes)
	if !slices.Equal(nodes, []int32{0, 1, 2}) {
		t.Errorf("listeners learned nodes %v, want [0 1 2]", nodes)
	}
	t.Logf("client connections: %d, all through %v", len(hook.seen()), proxyAddrs)

	// DescribeCluster answers are rewritten too.
	response, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, consumer)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range response.Brokers {
		if addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))); !slices.Contains(proxyAddrs, addr) {
			t.Errorf("DescribeCluster names %s, not a proxy address", addr)
		}
	}
}

// ackLossRun produces records one at a time (acks=all) through a proxy
// that drops 5% of Produce responses, consumes them back directly from the
// cluster and returns (drop-response events, records read, distinct values).
func ackLossRun(t *testing.T, idempotent bool) (drops int64, read, distinct int) {
	const topic, records = "ackloss", 300
	cluster := newKfake(t, 1, 1, topic)
	plan, err := LoadPlan("ack-loss") // drop 5% of Produce responses
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := New(Config{Upstreams: cluster.ListenAddrs(), Rules: plan.Rules, Seed: 7, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks())}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	producer := newClient(t, proxy.Addrs(), opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	startProduce := time.Now()
	for i := range records {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	t.Logf("produced in %v", time.Since(startProduce))
	consumer := newClient(t, cluster.ListenAddrs(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	values := consumeAll(t, consumer, records)
	unique := map[string]bool{}
	for _, v := range values {
		unique[v] = true
	}
	return proxy.Log().Count(KindDropResponse), len(values), len(unique)
}

// Seed §2.2, written but not acknowledged: without idempotence every lost
// ack of a one-record Produce becomes one duplicate; nothing is lost.
func TestAckLossDuplicatesWithoutIdempotence(t *testing.T) {
	t.Parallel()
	drops, read, distinct := ackLossRun(t, false)
	t.Logf("at-least-once: %d produce responses dropped, %d records read, %d distinct, %d duplicates", drops, read, distinct, read-distinct)
	if drops == 0 {
		t.Fatal("no drop-response events: the fault did not fire")
	}
	if distinct != 300 {
		t.Fatalf("%d distinct records, want 300 (acks=all with retries loses nothing)", distinct)
	}
	if int64(read-distinct) != drops {
		t.Fatalf("%d duplicates, want one per dropped ack (%d)", read-distinct, drops)
	}
}

// The same faults against an idempotent producer; what kfake does with the
// retried batches is reported, not asserted.
func TestAckLossIdempotentReport(t *testing.T) {
	t.Parallel()
	drops, read, distinct := ackLossRun(t, true)
	t.Logf("idempotent on kfake: %d produce responses dropped, %d records read, %d distinct, %d duplicates", drops, read, distinct, read-distinct)
	if drops == 0 {
		t.Fatal("no drop-response events: the fault did not fire")
	}
	if distinct != 300 {
		t.Fatalf("%d distinct records, want 300", distinct)
	}
}

// Failure class 4 with the shipped fetch-loss plan: Fetch responses are
// lost, the consumer refetches from its position, and every record is read
// exactly once, in order.
func TestFetchLossRefetches(t *testing.T) {
	t.Parallel()
	const topic, records = "fetchloss", 300
	cluster := newKfake(t, 1, 1, topic)
	producer := newClient(t, cluster.ListenAddrs(), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range records {
		// One record per batch, so a small fetch returns one batch.
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := LoadPlan("fetch-loss")
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := New(Config{Upstreams: cluster.ListenAddrs(), Rules: plan.Rules, Seed: plan.Seed, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	consumer := newClient(t, proxy.Addrs(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxPartitionBytes(1), kgo.FetchMaxBytes(1))
	values := consumeAll(t, consumer, records)
	drops := proxy.Log().Count(KindDropResponse)
	t.Logf("fetch-loss: %d Fetch responses dropped, %d records read", drops, len(values))
	if drops == 0 {
		t.Fatal("no Fetch response was dropped")
	}
	for i, v := range values {
		if v != fmt.Sprint(i) {
			t.Fatalf("record %d is %q: lost, duplicated or reordered (read %d)", i, v, len(values))
		}
	}
	if len(values) != records {
		t.Fatalf("read %d records, want %d", len(values), records)
	}
	for _, e := range proxy.Log().Events() {
		if e.APIKey != wire.APIFetch {
			t.Fatalf("event on %s, want Fetch only: %v", wire.APIName(e.APIKey), e)
		}
	}
}
