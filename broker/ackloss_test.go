package broker

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/internal/testproxy"
	"github.com/exactly-eos/exactly/wire"
)

// The seed's failure class 2: the broker writes a batch but the
// acknowledgement is lost. A proxy in front of the broker forwards every
// Produce request but swallows a share of the responses and cuts the
// connection; the producer retries on a new connection. With idempotence
// the broker answers each retry of a written batch with its original
// offsets, so every record is in the log once, in order. Without it the
// retries are written again: duplicates, which proves the fault bit.

const (
	ackLossRecords    = 100_000
	ackLossDropShare  = 0.03
	ackLossValueBytes = 100
	ackLossBatchBytes = 8 << 10
)

// startBrokerBehindProxy starts a broker that advertises a proxy dropping
// the given share of Produce responses, and returns both (closed at the
// end of the test).
func startBrokerBehindProxy(t *testing.T, dropShare float64, seed int64) (*Broker, *testproxy.Proxy) {
	t.Helper()
	proxy, err := testproxy.Listen("") // the target is known once the broker listens
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	b, err := Start(context.Background(), Config{NodeID: 1, Listen: "127.0.0.1:0", Advertised: proxy.Addr(),
		DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		proxy.Close()
		t.Fatalf("start broker: %v", err)
	}
	proxy.Target = b.Addr()
	proxy.DropResponse = testproxy.Probability(wire.APIProduce, dropShare, seed)
	go proxy.Serve()
	t.Cleanup(func() {
		proxy.Close()
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return b, proxy
}

// ackLossValue is record i's value: its index, padded.
func ackLossValue(i int) []byte {
	value := make([]byte, ackLossValueBytes)
	for j := range value {
		value[j] = '.'
	}
	copy(value, strconv.Itoa(i))
	return value
}

// produceThrough sends count records round-robin over the partitions
// through the client and waits for every acknowledgement; a failed record
// fails the test.
func produceThrough(t *testing.T, client *kgo.Client, topic string, count int) {
	t.Helper()
	ctx := testContext(t, 90*time.Second)
	var failed atomic.Int64
	var firstErr atomic.Value
	for i := range count {
		record := &kgo.Record{Topic: topic, Partition: int32(i % testPartitions), Key: []byte(strconv.Itoa(i)), Value: ackLossValue(i)}
		client.Produce(ctx, record, func(_ *kgo.Record, err error) {
			if err != nil && failed.Add(1) == 1 {
				firstErr.Store(err)
			}
		})
	}
	if err := client.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d records failed, first: %v", n, firstErr.Load())
	}
}

// consumeToEnd reads every partition of topic from the start up to its
// current log end offset.
func consumeToEnd(t *testing.T, b *Broker, topic string) map[int32][]*kgo.Record {
	t.Helper()
	ends := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	for _, p := range b.partitionsOf(b.topicByName(topic)) {
		ends[p.Index()] = p.Log().LogEndOffset()
		offsets[p.Index()] = kgo.NewOffset().AtStart()
	}
	client := newTestClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(100*time.Millisecond))
	defer client.Close()
	ctx := testContext(t, 60*time.Second)
	got := map[int32][]*kgo.Record{}
	done := func() bool {
		for partition, end := range ends {
			if records := got[partition]; end > 0 && (len(records) == 0 || records[len(records)-1].Offset+1 < end) {
				return false
			}
		}
		return true
	}
	for !done() {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: deadline passed", topic)
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			t.Fatalf("fetch %s-%d: %v", topic, partition, err)
		})
		fetches.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r) })
	}
	return got
}

// deliveryCounts tallies what a consumer found: how many times each record
// index appeared, and whether each partition held its indices in order.
type deliveryCounts struct {
	seen       map[int]int
	duplicates int
	outOfOrder int
}

func countDeliveries(t *testing.T, got map[int32][]*kgo.Record) deliveryCounts {
	t.Helper()
	counts := deliveryCounts{seen: map[int]int{}}
	for partition, records := range got {
		last := -1
		for _, r := range records {
			index, err := strconv.Atoi(string(r.Key))
			if err != nil || int32(index%testPartitions) != partition {
				t.Fatalf("partition %d offset %d: unexpected key %q", partition, r.Offset, r.Key)
			}
			if string(r.Value) != string(ackLossValue(index)) {
				t.Fatalf("partition %d offset %d: value does not match key %d", partition, r.Offset, index)
			}
			counts.seen[index]++
			if counts.seen[index] > 1 {
				counts.duplicates++
			}
			if index <= last {
				counts.outOfOrder++
			}
			last = max(last, index)
		}
	}
	return counts
}

// TestAckLossIdempotentExactlyOnce: 100k records to 6 partitions through
// a proxy that loses 3% of Produce acknowledgements; franz-go retries with
// idempotence (its default) and every record is in the log exactly once,
// in order.
func TestAckLossIdempotentExactlyOnce(t *testing.T) {
	t.Parallel()
	b, proxy := startBrokerBehindProxy(t, ackLossDropShare, 1)
	producer := newAckLossProducer(t, proxy.Addr(), true)
	createTopic(t, producer, "acked-once", testPartitions, nil)
	produceThrough(t, producer, "acked-once", ackLossRecords)
	if proxy.Dropped() == 0 {
		t.Fatal("the proxy dropped no Produce response; the fault did not happen")
	}
	counts := countDeliveries(t, consumeToEnd(t, b, "acked-once"))
	if len(counts.seen) != ackLossRecords || counts.duplicates != 0 || counts.outOfOrder != 0 {
		t.Fatalf("%d distinct of %d records, %d duplicates, %d out of order; want all once, in order",
			len(counts.seen), ackLossRecords, counts.duplicates, counts.outOfOrder)
	}
	t.Logf("%d responses dropped; %d records, each exactly once, in order", proxy.Dropped(), ackLossRecords)
}

// TestAckLossWithoutIdempotenceDuplicates is the control: the same run with
// idempotence disabled writes retried batches twice.
func TestAckLossWithoutIdempotenceDuplicates(t *testing.T) {
	t.Parallel()
	b, proxy := startBrokerBehindProxy(t, ackLossDropShare, 1)
	producer := newAckLossProducer(t, proxy.Addr(), false)
	createTopic(t, producer, "acked-twice", testPartitions, nil)
	produceThrough(t, producer, "acked-twice", ackLossRecords)
	counts := countDeliveries(t, consumeToEnd(t, b, "acked-twice"))
	if len(counts.seen) != ackLossRecords {
		t.Fatalf("%d distinct of %d records: acknowledged records were lost", len(counts.seen), ackLossRecords)
	}
	if counts.duplicates == 0 {
		t.Fatalf("no duplicates with %d responses dropped: the fault did not bite", proxy.Dropped())
	}
	t.Logf("%d responses dropped; %d duplicates, %d out of order without idempotence", proxy.Dropped(), counts.duplicates, counts.outOfOrder)
}

// newAckLossProducer is a producer through the proxy that pipelines
// requests (franz-go keeps up to 5 in flight when idempotent; the control
// run is given 5 too), sends small batches so that there are thousands of
// requests to lose acknowledgements of, and retries quickly.
func newAckLossProducer(t *testing.T, addr string, idempotent bool) *kgo.Client {
	t.Helper()
	options := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(ackLossBatchBytes),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }),
	}
	if !idempotent {
		options = append(options, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
	}
	client, err := kgo.NewClient(options...)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}
