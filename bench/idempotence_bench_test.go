package bench

// What idempotence costs (issue 5): the same produce load — acks=all,
// 1 KiB values, 6 partitions, franz-go with 5 requests in flight — with and
// without idempotence, against one embedded broker, in one run. The two
// modes alternate in rounds so that noise from the shared machine falls on
// both alike; the benchmark reports each mode's throughput and their ratio
// (target: idempotent/plain >= 0.97). BenchmarkProducerStateCheck measures
// the broker's per-batch producer-state work alone (allocs/op).
//
//	go test ./bench/ -run '^$' -bench 'Idempotence|ProducerStateCheck' -benchtime 1000000x -count 3

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/producers"
)

const (
	idempotenceBenchPartitions = 6
	idempotenceBenchValueBytes = 1024
	// idempotenceBenchRounds is how many times each mode takes its turn.
	idempotenceBenchRounds = 20
)

// idempotenceBenchMode is one side of the comparison.
type idempotenceBenchMode struct {
	name    string
	topic   string
	client  *kgo.Client
	elapsed time.Duration
}

// produceRound sends count records round-robin over the partitions and
// waits for every acknowledgement.
func (m *idempotenceBenchMode) produceRound(ctx context.Context, value []byte, count int) error {
	start := time.Now()
	errs := make(chan error, 1)
	for i := range count {
		record := &kgo.Record{Topic: m.topic, Partition: int32(i % idempotenceBenchPartitions), Value: value}
		m.client.Produce(ctx, record, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := m.client.Flush(ctx); err != nil {
		return fmt.Errorf("%s: flush: %w", m.name, err)
	}
	m.elapsed += time.Since(start)
	select {
	case err := <-errs:
		return fmt.Errorf("%s: produce: %w", m.name, err)
	default:
		return nil
	}
}

func newIdempotenceBenchMode(b *testing.B, addr, name string, idempotent bool) *idempotenceBenchMode {
	options := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		// Records go to the broker as 1 KiB each, uncompressed.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	if !idempotent {
		// franz-go keeps up to 5 requests in flight when idempotent; give
		// the plain producer the same pipeline.
		options = append(options, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
	}
	client, err := kgo.NewClient(options...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	return &idempotenceBenchMode{name: name, topic: "bench-" + name, client: client}
}

// BenchmarkIdempotence: one op is one 1 KiB record produced by each mode.
func BenchmarkIdempotence(b *testing.B) {
	ctx := context.Background()
	server, err := startSingleBroker(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	modes := []*idempotenceBenchMode{
		newIdempotenceBenchMode(b, server.Addr(), "idempotent", true),
		newIdempotenceBenchMode(b, server.Addr(), "plain", false),
	}
	value := make([]byte, idempotenceBenchValueBytes)
	rand.New(rand.NewSource(1)).Read(value) // incompressible, like real payloads
	// Warm up: topics created, connections open, producer id assigned.
	for _, m := range modes {
		if err := createIdempotenceBenchTopic(ctx, m.client, m.topic); err != nil {
			b.Fatal(err)
		}
		if err := m.produceRound(ctx, value, 1000); err != nil {
			b.Fatal(err)
		}
		m.elapsed = 0
	}
	b.SetBytes(int64(len(modes) * idempotenceBenchValueBytes))
	idempotent, plain := modes[0], modes[1]
	var roundRatios []float64
	b.ResetTimer()
	for round := range idempotenceBenchRounds {
		count := roundShare(b.N, idempotenceBenchRounds, round)
		if count == 0 {
			continue
		}
		idempotentBefore, plainBefore := idempotent.elapsed, plain.elapsed
		for i := range modes {
			m := modes[(round+i)%len(modes)] // alternate who goes first
			if err := m.produceRound(ctx, value, count); err != nil {
				b.Fatal(err)
			}
		}
		// Same record count: the throughput ratio is the inverse time ratio.
		roundRatios = append(roundRatios, (plain.elapsed-plainBefore).Seconds()/(idempotent.elapsed-idempotentBefore).Seconds())
	}
	b.StopTimer()
	idempotentRate := float64(b.N) / idempotent.elapsed.Seconds()
	plainRate := float64(b.N) / plain.elapsed.Seconds()
	b.ReportMetric(idempotentRate, "idempotent-records/s")
	b.ReportMetric(plainRate, "plain-records/s")
	b.ReportMetric(idempotentRate/plainRate, "idempotent/plain")
	// The median of the back-to-back rounds' ratios resists the bursts of
	// a shared machine better than the totals do.
	slices.Sort(roundRatios)
	if len(roundRatios) > 0 {
		b.ReportMetric(roundRatios[len(roundRatios)/2], "median-round-ratio")
	}
}

// createIdempotenceBenchTopic creates topic with the benchmark's partitions.
func createIdempotenceBenchTopic(ctx context.Context, client *kgo.Client, topic string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, idempotenceBenchPartitions, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, client)
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	return nil
}

// BenchmarkProducerStateCheck is the broker's per-batch producer-state
// work for an in-order batch (Check, then Update after the append), over
// 100 producers on one partition: the allocs/op the idempotent path adds.
func BenchmarkProducerStateCheck(b *testing.B) {
	const producerCount = 100
	state := producers.NewPartitionState(producers.Options{})
	next := make([]int32, producerCount)
	var offset int64
	step := func(producerID int) {
		batch := producers.Batch{ProducerID: int64(producerID), BaseSequence: next[producerID],
			LastSequence: producers.LastSequence(next[producerID], 10), MaxTimestamp: offset}
		verdict, err := state.Check(batch)
		if err != nil || verdict.Duplicate {
			b.Fatalf("in-order batch refused: %+v %v", verdict, err)
		}
		batch.FirstOffset, batch.LastOffset = offset, offset+9
		state.Update(batch)
		next[producerID] = producers.LastSequence(next[producerID], 11)
		offset += 10
	}
	for producerID := range producerCount { // entries exist, as in a steady state
		step(producerID)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		step(i % producerCount)
	}
}
