package broker

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/storage"
)

// BenchmarkProduceWithCleaner: produce latency with the log cleaner
// compacting other partitions of the same broker, against the same
// broker with the cleaner idle, in interleaved rounds (idle, cleaning,
// idle, cleaning, ...) so that drift of a shared machine hits both alike.
// The idle rounds split in two (odd and even) give an A/A pair: their p99
// difference is the noise floor the cleaning-vs-idle difference is read
// against.
//
// One op is the whole run (use -benchtime=1x). Each round produces
// benchRoundRecords 1 KiB records one at a time (ProduceSync, acks=all,
// log.fsync=never) to a partition of its own; in a cleaning round the
// broker's cleaner (its scheduling code, cleanOne, on one goroutine as
// log.cleaner.threads=1) cleans the dirtiest of the prepared compacted
// partitions, each benchChurnBytes of 1 KiB values over 1000 keys, one
// after another until the round ends. Metrics: p99-idle-us,
// p99-cleaning-us, p99-idle-A/A-diff-% (odd vs even idle rounds),
// p99-cleaning-vs-idle-%, cleaner-busy-% (share of the cleaning rounds'
// time a clean was running) and cleaned-input-MB/s (values of the
// partitions cleaned whole over the time cleans ran).
func BenchmarkProduceWithCleaner(b *testing.B) {
	for range b.N {
		benchProduceWithCleaner(b)
	}
}

const (
	benchRounds       = 8 // idle and cleaning alternately
	benchRoundRecords = 5000
	benchChurnBytes   = 24 << 20
	benchChurnTopics  = 8
)

func benchProduceWithCleaner(b *testing.B) {
	brk, err := Start(context.Background(), Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: b.TempDir(),
		Properties: map[string]string{"log.cleaner.enable": "false"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer brk.Close()
	admin, err := kgo.NewClient(kgo.SeedBrokers(brk.Addr()))
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	ctx := context.Background()
	// The compacted partitions the cleaner works on, filled before the
	// rounds: every record a key's overwrite, all of it dirty.
	churn, err := kgo.NewClient(kgo.SeedBrokers(brk.Addr()), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DisableIdempotentWrite())
	if err != nil {
		b.Fatal(err)
	}
	defer churn.Close()
	value := make([]byte, 1024)
	for i := range value {
		value[i] = byte(rand.IntN(256))
	}
	for topic := range benchChurnTopics {
		name := fmt.Sprint("churn-", topic)
		if err := createBenchTopic(ctx, admin, name, map[string]string{"cleanup.policy": "compact", "segment.bytes": "1048576"}); err != nil {
			b.Fatal(err)
		}
		var failed atomic.Value
		for i := range benchChurnBytes / len(value) {
			churn.Produce(ctx, &kgo.Record{Topic: name, Key: fmt.Appendf(nil, "key-%d", i%1000), Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Store(err)
				}
			})
		}
		if err := churn.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		p, err := brk.partitionOf(brk.topicByName(name), 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Log().Roll(); err != nil {
			b.Fatal(err)
		}
		if err := p.Log().Flush(); err != nil { // the recovery point past every sealed segment
			b.Fatal(err)
		}
	}
	churn.Close()

	producer, err := kgo.NewClient(kgo.SeedBrokers(brk.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer producer.Close()
	if err := createBenchTopic(ctx, admin, "measured", map[string]string{}); err != nil {
		b.Fatal(err)
	}
	var idle, cleaning [][]time.Duration
	var busy, roundTime time.Duration
	var cleanedBytes int64
	b.ResetTimer()
	for round := range benchRounds {
		withCleaner := round%2 == 1
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var cleanerBusy time.Duration
		if withCleaner {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					began := time.Now()
					if !brk.cleaner.cleanOne() {
						return // nothing left to clean
					}
					cleanerBusy += time.Since(began)
				}
			}()
		}
		began := time.Now()
		latencies := make([]time.Duration, 0, benchRoundRecords)
		for range benchRoundRecords {
			sent := time.Now()
			record := &kgo.Record{Topic: "measured", Partition: 0, Value: value}
			if err := producer.ProduceSync(ctx, record).FirstErr(); err != nil {
				b.Fatal(err)
			}
			latencies = append(latencies, time.Since(sent))
		}
		elapsed := time.Since(began)
		close(stop)
		wg.Wait()
		if withCleaner {
			cleaning = append(cleaning, latencies)
			busy += min(cleanerBusy, elapsed)
			roundTime += elapsed
		} else {
			idle = append(idle, latencies)
		}
	}
	b.StopTimer()
	for _, target := range brk.cleanTargets() {
		stats, err := target.log.CleanableStats(cleanOptionsForStats(target))
		if err == nil && stats.DirtyBytes == 0 && stats.CleanBytes > 0 {
			cleanedBytes += benchChurnBytes // a prepared partition cleaned whole
		}
	}
	var oddIdle, evenIdle []time.Duration
	for i, round := range idle {
		if i%2 == 0 {
			evenIdle = append(evenIdle, round...)
		} else {
			oddIdle = append(oddIdle, round...)
		}
	}
	p99Idle, p99Cleaning := p99(slices.Concat(idle...)), p99(slices.Concat(cleaning...))
	b.ReportMetric(float64(p99Idle.Microseconds()), "p99-idle-us")
	b.ReportMetric(float64(p99Cleaning.Microseconds()), "p99-cleaning-us")
	b.ReportMetric(percentDiff(p99(oddIdle), p99(evenIdle)), "p99-idle-A/A-diff-%")
	b.ReportMetric(percentDiff(p99Cleaning, p99Idle), "p99-cleaning-vs-idle-%")
	b.ReportMetric(100*busy.Seconds()/roundTime.Seconds(), "cleaner-busy-%")
	if busy > 0 {
		b.ReportMetric(float64(cleanedBytes)/busy.Seconds()/(1<<20), "cleaned-input-MB/s")
	}
}

// cleanOptionsForStats are a target's scheduling options (upper bound
// estimate, lag), for the benchmark's count of cleaned bytes.
func cleanOptionsForStats(target cleanTarget) storage.CleanOptions {
	return storage.CleanOptions{UpperBound: target.estimate(), MinCompactionLag: target.config.minCompactionLag}
}

// p99 is the 99th percentile of latencies.
func p99(latencies []time.Duration) time.Duration {
	if len(latencies) == 0 {
		return 0
	}
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	return sorted[len(sorted)*99/100]
}

// percentDiff is (a-b)/b in percent.
func percentDiff(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return 100 * (a.Seconds() - b.Seconds()) / b.Seconds()
}

// createBenchTopic creates a one-partition topic.
func createBenchTopic(ctx context.Context, client *kgo.Client, name string, configs map[string]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = name, 1, 1
	for key, value := range configs {
		config := kmsg.NewCreateTopicsRequestTopicConfig()
		config.Name, config.Value = key, kmsg.StringPtr(value)
		topic.Configs = append(topic.Configs, config)
	}
	req.Topics = append(req.Topics, topic)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, client)
	if err != nil {
		return err
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		return fmt.Errorf("create %s: error %d", name, code)
	}
	return nil
}
