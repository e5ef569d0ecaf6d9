package bench

// What transactions cost (issue 7): the same produce load — acks=all,
// 1 KiB values, 6 partitions, franz-go with 5 requests in flight, no
// compression — as at-least-once (no idempotence), idempotent, and
// transactional with a commit every 100 ms, against one embedded broker, in
// one run. The modes take turns in rounds (the first to go rotates) so the
// shared machine's noise falls on all alike. Reported: each mode's
// records/s, the ratios transactional/at-least-once (target ≥ 0.95; Kafka
// publishes about 3% overhead at 100 ms commits) and idempotent/
// at-least-once, and the commit latency p50/p99 (the EndTransaction call:
// EndTxn, markers to every partition, CompleteCommit; the flush of the
// transaction's last records before it is not counted) and flush+commit
// p50/p99 (what the producer waits at each commit).
//
//	go test ./bench/ -run '^$' -bench Transactions -benchtime 200000x

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	txnBenchPartitions     = idempotenceBenchPartitions
	txnBenchValueBytes     = 1024
	txnBenchRounds         = 10
	txnBenchCommitInterval = 100 * time.Millisecond
)

// txnBenchMode is one delivery mode of the comparison.
type txnBenchMode struct {
	name          string
	topic         string
	client        *kgo.Client
	transactional bool
	elapsed       time.Duration
	// commits and flushCommits record microseconds per commit.
	commits, flushCommits *hdrhistogram.Histogram
}

func newTxnBenchMode(b *testing.B, addr, name string) *txnBenchMode {
	options := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	switch name {
	case "at-least-once":
		options = append(options, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
	case "transactional":
		options = append(options, kgo.TransactionalID("bench-transactional"))
	}
	client, err := kgo.NewClient(options...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	return &txnBenchMode{name: name, topic: "bench-" + name, client: client, transactional: name == "transactional",
		commits: hdrhistogram.New(1, 60_000_000, 3), flushCommits: hdrhistogram.New(1, 60_000_000, 3)}
}

// produceRound sends count records round-robin over the partitions and
// waits for every acknowledgement; the transactional mode commits every
// txnBenchCommitInterval and at the end.
func (m *txnBenchMode) produceRound(ctx context.Context, value []byte, count int) error {
	start := time.Now()
	errs := make(chan error, 1)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			select {
			case errs <- err:
			default:
			}
		}
	}
	if m.transactional {
		if err := m.client.BeginTransaction(); err != nil {
			return fmt.Errorf("%s: begin: %w", m.name, err)
		}
	}
	began := time.Now()
	for i := range count {
		m.client.Produce(ctx, &kgo.Record{Topic: m.topic, Partition: int32(i % txnBenchPartitions), Value: value}, promise)
		if m.transactional && time.Since(began) >= txnBenchCommitInterval {
			if err := m.commit(ctx, true); err != nil {
				return err
			}
			began = time.Now()
		}
	}
	if m.transactional {
		if err := m.commit(ctx, false); err != nil {
			return err
		}
	} else if err := m.client.Flush(ctx); err != nil {
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

// commit flushes and commits the open transaction, recording both
// latencies, and begins the next one if again is set.
func (m *txnBenchMode) commit(ctx context.Context, again bool) error {
	flushStart := time.Now()
	if err := m.client.Flush(ctx); err != nil {
		return fmt.Errorf("%s: flush: %w", m.name, err)
	}
	commitStart := time.Now()
	if err := m.client.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("%s: commit: %w", m.name, err)
	}
	end := time.Now()
	m.commits.RecordValue(end.Sub(commitStart).Microseconds())
	m.flushCommits.RecordValue(end.Sub(flushStart).Microseconds())
	if again {
		if err := m.client.BeginTransaction(); err != nil {
			return fmt.Errorf("%s: begin: %w", m.name, err)
		}
	}
	return nil
}

// BenchmarkTransactions: one op is one 1 KiB record produced by each of
// the three modes.
func BenchmarkTransactions(b *testing.B) {
	ctx := context.Background()
	server, err := startSingleBroker(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	modes := []*txnBenchMode{
		newTxnBenchMode(b, server.Addr(), "at-least-once"),
		newTxnBenchMode(b, server.Addr(), "idempotent"),
		newTxnBenchMode(b, server.Addr(), "transactional"),
	}
	value := make([]byte, txnBenchValueBytes)
	rand.New(rand.NewSource(1)).Read(value)
	for _, m := range modes { // warm up: topics, connections, producer ids
		if err := createIdempotenceBenchTopic(ctx, m.client, m.topic); err != nil {
			b.Fatal(err)
		}
		if err := m.produceRound(ctx, value, 1000); err != nil {
			b.Fatal(err)
		}
		m.elapsed = 0
		m.commits.Reset()
		m.flushCommits.Reset()
	}
	b.SetBytes(int64(len(modes) * txnBenchValueBytes))
	atLeastOnce, idempotent, transactional := modes[0], modes[1], modes[2]
	var txnRatios []float64
	b.ResetTimer()
	for round := range txnBenchRounds {
		count := roundShare(b.N, txnBenchRounds, round)
		if count == 0 {
			continue
		}
		plainBefore, txnBefore := atLeastOnce.elapsed, transactional.elapsed
		for i := range modes {
			if err := modes[(round+i)%len(modes)].produceRound(ctx, value, count); err != nil {
				b.Fatal(err)
			}
		}
		txnRatios = append(txnRatios, (atLeastOnce.elapsed-plainBefore).Seconds()/(transactional.elapsed-txnBefore).Seconds())
	}
	b.StopTimer()
	rate := func(m *txnBenchMode) float64 { return float64(b.N) / m.elapsed.Seconds() }
	b.ReportMetric(rate(atLeastOnce), "at-least-once-records/s")
	b.ReportMetric(rate(idempotent), "idempotent-records/s")
	b.ReportMetric(rate(transactional), "transactional-records/s")
	b.ReportMetric(rate(transactional)/rate(atLeastOnce), "transactional/at-least-once")
	b.ReportMetric(rate(idempotent)/rate(atLeastOnce), "idempotent/at-least-once")
	slices.Sort(txnRatios)
	if len(txnRatios) > 0 {
		b.ReportMetric(txnRatios[len(txnRatios)/2], "median-round-txn-ratio")
	}
	b.ReportMetric(float64(transactional.commits.TotalCount()), "commits")
	b.ReportMetric(float64(transactional.commits.ValueAtQuantile(50))/1000, "commit-p50-ms")
	b.ReportMetric(float64(transactional.commits.ValueAtQuantile(99))/1000, "commit-p99-ms")
	b.ReportMetric(float64(transactional.flushCommits.ValueAtQuantile(50))/1000, "flush+commit-p50-ms")
	b.ReportMetric(float64(transactional.flushCommits.ValueAtQuantile(99))/1000, "flush+commit-p99-ms")
}
