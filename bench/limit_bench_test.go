package bench

// Produce at the physical limit (issue 37): how close the broker comes to
// the client's ceiling — a Kafka-protocol server that acknowledges without
// storing (kfake with BlackholeProduce) — as the partitions grow, and what
// the broker's CPU costs per GB. Client and broker share the machine's
// cores, so every CPU-second the broker saves goes to the client: the
// ratio to the ceiling is the broker's CPU per byte seen from outside.
//
//	go test -run '^$' -bench 'ProduceLimit' -benchtime 500000x -timeout 60m ./bench/
//
// Sub-benchmarks partitions=<n>/delivery=<d>/server=<kind>: n is 6, 600
// or 3000 partitions of one topic; d is idempotent (acks=all, the
// idempotent producer), acks1 (acks=1, no idempotence) or
// transactional (the idempotent producer in transactions committed every
// 100 ms; null and ceiling take no transactions, so it has no ratios).
// The servers run in this order in a fresh subprocess each: null (the
// null server: reads the frames, answers from the batch headers; the
// physical limit's stand-in), ceiling (kfake discarding), kfake, exactly;
// later ones report x-null and x-ceiling (records/s over theirs in the
// same run) and cpu-x-null and cpu-x-ceiling (server CPU per GB over
// theirs), besides records/s and server-cpu-s/GB. One op is one 1 KiB record. To
// compare commits, interleave runs of two test binaries with an A/A pair
// (README.md, "Produce at the limit").

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// limitPartitions are the partition counts of issue 37's table.
var limitPartitions = []int32{6, 600, 3000}

// limitDelivery is one way of producing: its client options and, for
// transactions, the commit interval.
type limitDelivery struct {
	name           string
	options        []kgo.Opt
	commitInterval time.Duration // 0: no transactions
}

var limitDeliveries = []limitDelivery{
	{name: "idempotent", options: []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}},
	{name: "acks1", options: []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}},
	{name: "transactional", options: []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionalID("bench-limit")},
		commitInterval: 100 * time.Millisecond},
}

func BenchmarkProduceLimit(b *testing.B) {
	for _, partitions := range limitPartitions {
		b.Run(fmt.Sprintf("partitions=%d", partitions), func(b *testing.B) {
			for _, delivery := range limitDeliveries {
				b.Run("delivery="+delivery.name, func(b *testing.B) {
					for _, kind := range []string{serverNull, serverCeiling, serverKfake, serverExactly} {
						if (kind == serverCeiling || kind == serverNull) && delivery.commitInterval > 0 {
							continue // acknowledge produce, keep no transactions
						}
						benchmarkProduceLimit(b, kind, partitions, delivery)
					}
				})
			}
		})
	}
}

func benchmarkProduceLimit(b *testing.B, kind string, partitions int32, delivery limitDelivery) {
	b.Run("server="+kind, func(b *testing.B) {
		b.StopTimer()
		t, err := startTargetWith(kind, b.Name(), partitions, delivery.options...)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := t.close(); err != nil {
				b.Error(err)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		// Warm up untimed: producer id, partition leaders, connections.
		warm := min(b.N, 10*int(partitions))
		if err := t.produceIn(ctx, warm, delivery.commitInterval); err != nil {
			b.Fatal(err)
		}
		key := fmt.Sprintf("limit/partitions=%d/delivery=%s", partitions, delivery.name)
		timeRound(b, t, key, func() error { return t.produceIn(ctx, b.N, delivery.commitInterval) })
		m, _ := lookupResult(key, kind)
		if ceiling, ok := lookupResult(key, serverCeiling); ok && kind != serverCeiling && ceiling.serverCPUSecondsPerGB > 0 {
			b.ReportMetric(m.serverCPUSecondsPerGB/ceiling.serverCPUSecondsPerGB, "cpu-x-ceiling")
		}
		if null, ok := lookupResult(key, serverNull); ok && kind != serverNull && null.recordsPerSecond > 0 {
			b.ReportMetric(m.recordsPerSecond/null.recordsPerSecond, "x-null")
			if null.serverCPUSecondsPerGB > 0 {
				b.ReportMetric(m.serverCPUSecondsPerGB/null.serverCPUSecondsPerGB, "cpu-x-null")
			}
		}
	})
}

// produceIn produces count records, in transactions committed every
// commitInterval when it is not 0.
func (t *target) produceIn(ctx context.Context, count int, commitInterval time.Duration) error {
	if commitInterval == 0 {
		return t.produce(ctx, count)
	}
	promise, firstErr := firstError()
	for sent := 0; sent < count; {
		if err := t.producer.BeginTransaction(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		deadline := time.Now().Add(commitInterval)
		for ; sent < count && (sent%256 != 0 || time.Now().Before(deadline)); sent++ {
			t.producer.Produce(ctx, &kgo.Record{Value: recordValue}, promise)
		}
		if err := t.producer.Flush(ctx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		if err := t.producer.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		if err := firstErr(); err != nil {
			return fmt.Errorf("produce to %s: %w", t.kind, err)
		}
	}
	return nil
}
