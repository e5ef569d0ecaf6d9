package bench

// The franz-go side of the benchmarks: one workload for every server, so
// the comparison is apples to apples: 1 KiB random values without keys,
// acks=all, idempotence off, no compression (franz-go's default snappy
// would shrink repetitive values and measure the codec instead), 10 000
// records buffered, six partitions, everything else at franz-go's
// defaults.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	recordBytes        = 1024
	benchPartitions    = 6
	maxBufferedRecords = 10_000
	benchTopic         = "bench"
)

// recordValue is the value of every produced record: random bytes, so
// nothing on the way can shrink it.
var recordValue = func() []byte {
	value := make([]byte, recordBytes)
	random := rand.New(rand.NewPCG(4, 4))
	for i := range value {
		value[i] = byte(random.Uint32())
	}
	return value
}()

// target is a server subprocess with the topic the benchmark uses and a
// producer client connected to it. It belongs to one benchmark goroutine.
type target struct {
	kind     string
	server   *serverProcess
	dataDir  string // removed by close; empty for kfake
	producer *kgo.Client
}

// startTarget starts a server of the given kind, creates the benchmark
// topic and connects a producer. If EXACTLY_BENCH_PROFILE_DIR is set, the
// server writes its CPU profile there as <name>.pprof, with the slashes of
// a sub-benchmark's name turned into underscores.
func startTarget(kind, name string) (*target, error) {
	return startTargetWith(kind, name, benchPartitions, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()))
}

// startTargetWith is startTarget with the topic's partition count and the
// producer's delivery options (acks, idempotence) given.
func startTargetWith(kind, name string, partitions int32, delivery ...kgo.Opt) (*target, error) {
	t := &target{kind: kind}
	if kind == serverExactly {
		dir, err := os.MkdirTemp("", "exactly-bench-")
		if err != nil {
			return nil, err
		}
		t.dataDir = dir
	}
	profilePath := ""
	if dir := os.Getenv("EXACTLY_BENCH_PROFILE_DIR"); dir != "" {
		profilePath = filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".pprof")
	}
	server, err := startServer(kind, t.dataDir, profilePath)
	if err != nil {
		t.close()
		return nil, err
	}
	t.server = server
	if err := createBenchTopic(server.addr, partitions); err != nil {
		t.close()
		return nil, err
	}
	options := append([]kgo.Opt{
		kgo.SeedBrokers(server.addr),
		kgo.DefaultProduceTopic(benchTopic),
		kgo.MaxBufferedRecords(maxBufferedRecords),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}, delivery...)
	t.producer, err = kgo.NewClient(options...)
	if err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// close stops the producer and the server and removes the data directory.
// It may be called more than once.
func (t *target) close() error {
	var errs []error
	if t.producer != nil {
		t.producer.Close()
		t.producer = nil
	}
	if t.server != nil {
		errs = append(errs, t.server.stop())
	}
	if t.dataDir != "" {
		errs = append(errs, os.RemoveAll(t.dataDir))
		t.dataDir = ""
	}
	return errors.Join(errs...)
}

// createBenchTopic creates the benchmark topic with CreateTopics.
func createBenchTopic(addr string, partitions int32) error {
	client, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer client.Close()
	request := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = benchTopic, partitions, 1
	request.Topics = append(request.Topics, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", benchTopic, err)
	}
	if err := kerr.ErrorForCode(response.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("create topic %s: %w", benchTopic, err)
	}
	return nil
}

// produce sends count records through the target's producer and waits
// until every one is acknowledged; it returns the first failure.
func (t *target) produce(ctx context.Context, count int) error {
	promise, firstErr := firstError()
	for range count {
		t.producer.Produce(ctx, &kgo.Record{Value: recordValue}, promise)
	}
	if err := t.producer.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := firstErr(); err != nil {
		return fmt.Errorf("produce to %s: %w", t.kind, err)
	}
	return nil
}

// firstError returns a produce promise that keeps the first failure, and
// a function returning it. The promise runs on kgo's goroutines.
func firstError() (promise func(*kgo.Record, error), first func() error) {
	var (
		mu       sync.Mutex // guards firstErr
		firstErr error
	)
	promise = func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	}
	first = func() error {
		mu.Lock()
		defer mu.Unlock()
		return firstErr
	}
	return promise, first
}

// consumeAll reads the benchmark topic from the start with a fresh client
// until want records arrived (the topic may hold more), checking each
// record's value size.
func (t *target) consumeAll(ctx context.Context, want int) error {
	client, err := kgo.NewClient(
		kgo.SeedBrokers(t.server.addr),
		kgo.ConsumeTopics(benchTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return err
	}
	defer client.Close()
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
		if fetchErr != nil {
			return fetchErr
		}
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

// selfCPUSeconds is the CPU time (user+system) this process has used: the
// client side of a benchmark.
func selfCPUSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
}

// megabytesFromEnv reads a size in MiB from an environment variable, or
// returns the default.
func megabytesFromEnv(name string, defaultMiB int) (int, error) {
	text := os.Getenv(name)
	if text == "" {
		return defaultMiB, nil
	}
	value, err := strconv.Atoi(text)
	if err != nil || value <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive number of MiB", name, text)
	}
	return value, nil
}
