package bench

// Fetch throughput (issue 11): franz-go consumers read records an
// in-process broker already stores; the broker sends the record bytes from
// the segment files with sendfile(2). The volume is produced once, untimed
// (EXACTLY_BENCH_FETCH_MB, default 128 MiB of 1 KiB records over six
// partitions); each pass is a fresh consumer reading the topic from the
// start, and passes repeat until b.N records were read, so the benchmark
// calibrates itself with -benchtime 1s as well as with Nx.
//
//	go test -run '^$' -bench Fetch -benchtime 1048576x ./bench/   # 1 GiB per sub-benchmark

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const fetchBenchTopic = "fetched"

// BenchmarkFetch: one op is one 1 KiB record consumed. Sub-benchmarks read
// the same stored records with each isolation level (read_committed stops
// at the last stable offset, which equals the high watermark here: the
// records were produced without transactions).
func BenchmarkFetch(b *testing.B) {
	storedMiB, err := megabytesFromEnv("EXACTLY_BENCH_FETCH_MB", 128)
	if err != nil {
		b.Fatal(err)
	}
	stored := storedMiB << 20 / recordBytes
	server := startModesBroker(b)
	producer := newModeProducer(b, server.Addr(), idempotentMode, fetchBenchTopic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := producer.produceRound(ctx, recordValue, stored, true); err != nil {
		b.Fatal(err)
	}
	for _, isolation := range []struct {
		name  string
		level kgo.IsolationLevel
	}{{"read_uncommitted", kgo.ReadUncommitted()}, {"read_committed", kgo.ReadCommitted()}} {
		b.Run("isolation="+isolation.name, func(b *testing.B) {
			b.SetBytes(recordBytes)
			consumed := 0
			for consumed < b.N {
				pass := min(stored, b.N-consumed)
				if err := fetchPass(ctx, b, server.Addr(), isolation.level, pass); err != nil {
					b.Fatal(err)
				}
				consumed += pass
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// fetchPass times a fresh consumer reading want records from the start of
// the topic (client set-up untimed), checking each record's value size.
func fetchPass(ctx context.Context, b *testing.B, addr string, isolation kgo.IsolationLevel, want int) error {
	b.StopTimer()
	client, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumeTopics(fetchBenchTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(isolation),
	)
	if err != nil {
		return err
	}
	defer client.Close()
	b.StartTimer()
	defer b.StopTimer()
	got := 0
	for got < want {
		fetches := client.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consumed %d of %d records: %w", got, want, err)
		}
		var fetchErr error
		fetches.EachError(func(topic string, partition int32, err error) {
			fetchErr = errors.Join(fetchErr, fmt.Errorf("fetch %s-%d: %w", topic, partition, err))
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != recordBytes && fetchErr == nil {
				fetchErr = fmt.Errorf("record %s-%d@%d has %d value bytes, want %d",
					r.Topic, r.Partition, r.Offset, len(r.Value), recordBytes)
			}
			got++
		})
		if fetchErr != nil {
			return fetchErr
		}
	}
	return nil
}
