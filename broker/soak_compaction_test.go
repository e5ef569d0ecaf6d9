package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The compaction soak: transactions committed every 10 ms (each with a
// TxnOffsetCommit, as a consume-transform-produce worker does, one in ten
// aborted) and a consumer group committing its offsets every 100 ms,
// against a broker whose internal topics have small segments and a fast
// cleaner. __transaction_state and __consumer_offsets must stay below a
// fixed size on disk, and a restart's load time must stay flat.
//
// EXACTLY_SOAK_DURATION sets the length (default 40s, so the test costs
// about a minute; 5m or 1h by hand); -short skips it.

// soakSegmentBytes is the internal topics' segment size in the soak.
const soakSegmentBytes = 64 << 10

// soakPartitions is the partition count of each internal topic.
const soakPartitions = 3

// soakSizeBound is the most bytes each internal topic may hold on disk:
// per partition an active segment, a sealed one waiting to be cleaned and
// the cleaned remainder, with their index files.
const soakSizeBound = soakPartitions * 3 * soakSegmentBytes

func soakDuration(t *testing.T) time.Duration {
	value := os.Getenv("EXACTLY_SOAK_DURATION")
	if value == "" {
		return 40 * time.Second
	}
	d, err := time.ParseDuration(value)
	if err != nil || d < 2*time.Second {
		t.Fatalf("EXACTLY_SOAK_DURATION=%q: want a duration of at least 2s", value)
	}
	return d
}

func soakProperties() map[string]string {
	properties := txnTestProperties("0")
	properties["offsets.topic.num.partitions"] = fmt.Sprint(soakPartitions)
	properties["transaction.state.log.num.partitions"] = fmt.Sprint(soakPartitions)
	properties["offsets.topic.segment.bytes"] = fmt.Sprint(soakSegmentBytes)
	properties["transaction.state.log.segment.bytes"] = fmt.Sprint(soakSegmentBytes)
	properties["log.cleaner.backoff.ms"] = "200"
	properties["log.cleaner.delete.retention.ms"] = "1000"
	return properties
}

// dirBytes sums the sizes of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, entry fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a file swapped away meanwhile
			}
			return err
		}
		if entry.IsDir() {
			return nil
		}
		info, err := entry.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		total += info.Size()
		return nil
	})
	if err != nil {
		t.Fatalf("size of %s: %v", dir, err)
	}
	return total
}

// soakSizes are the internal topics' bytes on disk.
type soakSizes struct{ transactions, offsets int64 }

func measureSoak(t *testing.T, dataDir string) soakSizes {
	return soakSizes{transactions: topicBytes(t, dataDir, "__transaction_state"),
		offsets: topicBytes(t, dataDir, "__consumer_offsets")}
}

// topicBytes sums the sizes of the files of topic's partitions under the
// broker of data directory dataDir.
func topicBytes(t *testing.T, dataDir, topic string) int64 {
	dirs, err := filepath.Glob(filepath.Join(dataDir, brokerDirName, topic+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, dir := range dirs {
		total += dirBytes(t, dir)
	}
	return total
}

// soakWorkload runs the producers and the consumer group against b until
// ctx ends; it returns how many transactions committed.
func soakWorkload(ctx context.Context, t *testing.T, b *Broker, topicID [16]byte) (committed int, err error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	fail := func(e error) {
		mu.Lock()
		errs = append(errs, e)
		mu.Unlock()
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("soak-consumers"), kgo.ConsumeTopics("soak-data"),
		kgo.AutoCommitInterval(100*time.Millisecond), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return 0, err
	}
	defer consumer.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			fetches := consumer.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			if errs := fetches.Errors(); len(errs) > 0 {
				fail(fmt.Errorf("consume: %v", errs[0].Err))
				return
			}
		}
	}()
	counts := make([]int, 2)
	for i := range counts {
		id := fmt.Sprint("soak-", i)
		producer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID(id),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
		if err != nil {
			return 0, err
		}
		defer producer.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ticker := time.NewTicker(10 * time.Millisecond)
			defer ticker.Stop()
			// Bounded: at most one transaction per tick of the run.
			for n := 0; n < 1_000_000 && ctx.Err() == nil; n++ {
				commit := n%10 != 9
				if err := soakTransaction(ctx, producer, id, topicID, n, commit); err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("%s transaction %d: %w", id, n, err))
					}
					return
				}
				if commit {
					counts[i]++
				}
				select {
				case <-ctx.Done():
				case <-ticker.C:
				}
			}
		}()
	}
	wg.Wait()
	return counts[0] + counts[1], errors.Join(errs...)
}

// soakTransaction writes 5 records and commits an offset in one
// transaction, then commits or aborts it.
func soakTransaction(ctx context.Context, producer *kgo.Client, id string, topicID [16]byte, n int, commit bool) error {
	if err := producer.BeginTransaction(); err != nil {
		return err
	}
	records := make([]*kgo.Record, 5)
	for i := range records {
		records[i] = &kgo.Record{Topic: "soak-data", Partition: int32(n % 3), Key: fmt.Appendf(nil, "%s-%d", id, i), Value: fmt.Appendf(nil, "%d", n)}
	}
	if err := producer.ProduceSync(ctx, records...).FirstErr(); err != nil {
		return err
	}
	if err := txnOffsetCommit(ctx, producer, id, "soak-eos", "soak-data", topicID, int64(n)); err != nil {
		return err
	}
	return producer.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

// TestSoakInternalTopicsBounded is the soak described above.
func TestSoakInternalTopicsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: skipped with -short")
	}
	duration := soakDuration(t)
	dir := t.TempDir()
	start := func() (*Broker, time.Duration) {
		began := time.Now()
		b, err := Start(context.Background(), Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: dir, Properties: soakProperties()})
		if err != nil {
			t.Fatalf("start broker: %v", err)
		}
		return b, time.Since(began)
	}
	b, _ := start()
	defer func() { b.Close() }()
	createTopic(t, newTestClient(t, b), "soak-data", 3, nil)
	topicID := b.topicByName("soak-data").id
	initial := measureSoak(t, dir)
	t.Logf("start: __transaction_state %d bytes, __consumer_offsets %d bytes", initial.transactions, initial.offsets)
	var restarts []time.Duration
	var largest soakSizes
	committed := 0
	for phase := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), duration/2)
		done := make(chan struct{})
		var n int
		var workErr error
		go func() {
			defer close(done)
			n, workErr = soakWorkload(ctx, t, b, topicID)
		}()
		sampler := time.NewTicker(250 * time.Millisecond)
		for sampling := true; sampling; {
			select {
			case <-done:
				sampling = false
			case <-sampler.C:
				sizes := measureSoak(t, dir)
				largest.transactions, largest.offsets = max(largest.transactions, sizes.transactions), max(largest.offsets, sizes.offsets)
			}
		}
		sampler.Stop()
		cancel()
		if workErr != nil {
			t.Fatalf("phase %d: %v", phase, workErr)
		}
		committed += n
		sizes := measureSoak(t, dir)
		label := map[int]string{0: "middle", 1: "end"}[phase]
		t.Logf("%s (%v, %d transactions committed so far): __transaction_state %d bytes, __consumer_offsets %d bytes; largest seen %d and %d",
			label, time.Duration(phase+1)*duration/2, committed, sizes.transactions, sizes.offsets, largest.transactions, largest.offsets)

		admin := newTestClient(t, b)
		before := committedOffsets(t, admin, "soak-eos", "soak-data")
		admin.Close()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		var took time.Duration
		b, took = start()
		restarts = append(restarts, took)
		admin = newTestClient(t, b)
		if after := committedOffsets(t, admin, "soak-eos", "soak-data"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("soak-eos offsets after the restart %v, before %v", after, before)
		}
		admin.Close()
		t.Logf("restart %d took %v", phase+1, took)
	}
	if committed < int(duration/(100*time.Millisecond)) {
		t.Fatalf("only %d transactions committed in %v: the workload did not run", committed, duration)
	}
	if largest.transactions > soakSizeBound || largest.offsets > soakSizeBound {
		t.Fatalf("internal topics grew past %d bytes: __transaction_state %d, __consumer_offsets %d", soakSizeBound, largest.transactions, largest.offsets)
	}
	if restarts[1] > 2*restarts[0]+500*time.Millisecond {
		t.Fatalf("restart time grew: %v, then %v", restarts[0], restarts[1])
	}
}
