package broker_test

// BenchmarkProduceStalls measures how long one producer's records wait
// while the broker does disk I/O for someone else: other topics being
// auto-created (topic metadata lock), or the same partition rolling 1 MiB
// segments constantly under a second producer (partition append lock).
// It uses only the broker's exported API so the same file runs against an
// older commit for a before/after comparison (see bench/README.md).

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker"
)

// BenchmarkProduceStalls: one op is one 1 KiB record produced with
// acks=all by an idempotent producer and acknowledged (ProduceSync, one at
// a time), so its latency is the broker's answer time. Metrics: p50-us,
// p99-us, p99.9-us and max-us of those latencies, and background/s, the rate of the
// background load (topics auto-created, or records the second producer
// wrote, per second; the load runs a little before and after the timed
// loop, so the rate is slightly overstated).
func BenchmarkProduceStalls(b *testing.B) {
	b.Run("load=autocreate", func(b *testing.B) {
		benchProduceStalls(b, map[string]string{}, autoCreateLoad)
	})
	b.Run("load=roll", func(b *testing.B) {
		benchProduceStalls(b, map[string]string{"log.segment.bytes": "1048576"}, rollLoad)
	})
	// The control for load=roll: the same second producer, 1 GiB
	// segments, so nothing rolls during the run.
	b.Run("load=steady", func(b *testing.B) {
		benchProduceStalls(b, map[string]string{}, rollLoad)
	})
}

// backgroundLoad runs until ctx ends and returns how much it did.
type backgroundLoad func(ctx context.Context, b *testing.B, addr string) int64

func benchProduceStalls(b *testing.B, properties map[string]string, load backgroundLoad) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	brk, err := broker.Start(ctx, broker.Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: b.TempDir(),
		Properties: properties, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer brk.Close()
	client, err := kgo.NewClient(kgo.SeedBrokers(brk.Addr()), kgo.DefaultProduceTopic("measured"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.AllowAutoTopicCreation())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	value := make([]byte, 1024)
	produce := func() time.Duration {
		start := time.Now()
		if err := client.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for range 100 { // create the topic, warm the connection
		produce()
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var done atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { done.Store(load(loadCtx, b, brk.Addr())) })
	time.Sleep(50 * time.Millisecond) // let the load reach its pace
	latencies := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		latencies = append(latencies, produce())
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stopLoad()
	wg.Wait()
	slices.Sort(latencies)
	quantile := func(q float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(q*float64(len(latencies))))].Microseconds())
	}
	b.ReportMetric(quantile(0.50), "p50-us")
	b.ReportMetric(quantile(0.99), "p99-us")
	b.ReportMetric(quantile(0.999), "p99.9-us")
	b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds()), "max-us")
	b.ReportMetric(float64(done.Load())/elapsed.Seconds(), "background/s")
}

// autoCreateLoad auto-creates new topics one after another through
// Metadata requests, as a client producing to many new topics would.
func autoCreateLoad(ctx context.Context, b *testing.B, addr string) int64 {
	client, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Error(err)
		return 0
	}
	defer client.Close()
	var created int64
	for i := 0; ctx.Err() == nil; i++ {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr(fmt.Sprintf("auto-%d", i))
		req.Topics = append(req.Topics, topic)
		if _, err := req.RequestWith(ctx, client); err != nil {
			break
		}
		created++
	}
	return created
}

// rollRecordsPerSecond is the second producer's pace: 40 000 records of
// 1 KiB a second, so with 1 MiB segments about 40 rolls a second, the
// same load before and after a change (both sustain it on the 2-core
// machine with room to spare).
const rollRecordsPerSecond = 40000

// rollLoad produces 1 KiB records to the measured partition at
// rollRecordsPerSecond (at most 1000 unacknowledged), so with 1 MiB
// segments it rolls one about every thousand records; it returns the
// records produced.
func rollLoad(ctx context.Context, b *testing.B, addr string) int64 {
	client, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("measured"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		b.Error(err)
		return 0
	}
	defer client.Close()
	value := make([]byte, 1024)
	var produced atomic.Int64
	inFlight := make(chan struct{}, 1000)
	const tick = time.Millisecond
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for sent := 0; ctx.Err() == nil; {
		select {
		case <-ticker.C:
		case <-ctx.Done():
			continue
		}
		sent += rollRecordsPerSecond * int(tick) / int(time.Second)
		for ; sent > 0; sent-- {
			select {
			case inFlight <- struct{}{}:
			default:
				sent = 0 // behind: drop this tick's rest rather than burst later
				continue
			}
			client.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err == nil {
					produced.Add(1)
				}
				<-inFlight
			})
		}
	}
	client.Flush(context.Background())
	return produced.Load()
}
