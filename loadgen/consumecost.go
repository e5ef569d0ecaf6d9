package loadgen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// ConsumeTarget is one protocol whose consume cost is measured: its
// target (a listener, with its security) and how the broker sends fetched
// records over it ("sendfile", "copy (TLS)", or "" when not known).
type ConsumeTarget struct {
	Protocol  string
	Target    Target
	FetchPath string
}

// consumeRecordSize is the size of the records the consume measurement
// reads: large, so that the per-record work of the client is small
// against the bytes the broker sends.
const consumeRecordSize = 16 << 10

// consumeTimeout bounds each write and each read pass of the consume
// measurement.
const consumeTimeout = 2 * time.Minute

// ConsumeNote says what the consume CPU counts: the whole process, so an
// embedded broker's sending and the consumer's reading together.
const ConsumeNote = "CPU of the whole load generator process: with the embedded broker, the broker's sending and the consumer's reading (and, over TLS, both ends' encryption) together"

// MeasureConsumeCosts writes bytes of records to a fresh one-partition
// topic over each target (unmeasured), then reads each topic from its
// start with one consumer, passes times per target, the targets
// interleaved within each pass so that no protocol always runs first.
// Each pass's process CPU time (user + system, getrusage) is divided by
// the bytes read. A target that fails gets its Error; the others go on.
func MeasureConsumeCosts(ctx context.Context, targets []ConsumeTarget, bytes int64, passes int) []report.ConsumeCost {
	costs := make([]report.ConsumeCost, len(targets))
	records := max(1, bytes/consumeRecordSize)
	topics := make([]string, len(targets))
	suffix := fmt.Sprintf("%016x", rand.Uint64())
	cpu := make([][]float64, len(targets))
	rates := make([][]float64, len(targets))
	for i, target := range targets {
		costs[i] = report.ConsumeCost{Protocol: target.Protocol, FetchPath: target.FetchPath, Bytes: records * consumeRecordSize, Passes: passes}
		topics[i] = fmt.Sprintf("exactly.%s.consume-cost.%d.%s", suffix, i, topicNamePart(target.Protocol))
		if err := writeConsumeTopic(ctx, target.Target, topics[i], records); err != nil {
			costs[i].Error = err.Error()
		}
	}
	defer func() {
		cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for i, target := range targets {
			if admin, err := kgo.NewClient(targetOptions(target.Target)...); err == nil {
				_ = deleteTopics(cleanupCtx, admin, topics[i]) // best effort
				admin.Close()
			}
		}
	}()
	for pass := range passes {
		// Each pass starts one target further on, so that no target
		// always reads first (or right after another's writes).
		for turn := range targets {
			i := (turn + pass) % len(targets)
			target := targets[i]
			if costs[i].Error != "" || ctx.Err() != nil {
				continue
			}
			seconds, wall, err := readConsumeTopic(ctx, target.Target, topics[i], records)
			if err != nil {
				costs[i].Error = err.Error()
				continue
			}
			gigabytes := float64(costs[i].Bytes) / 1e9
			cpu[i] = append(cpu[i], seconds/gigabytes)
			rates[i] = append(rates[i], float64(costs[i].Bytes)/1e6/wall)
		}
	}
	for i := range targets {
		if costs[i].Error == "" && len(cpu[i]) == 0 {
			costs[i].Error = "not measured: interrupted"
		}
		if costs[i].Error != "" {
			continue
		}
		costs[i].PassCPUSecondsPerGB = cpu[i]
		costs[i].CPUSecondsPerGB = median(cpu[i])
		costs[i].MegabytesPerSecond = median(rates[i])
	}
	return costs
}

// writeConsumeTopic creates topic on target with one partition and
// writes records records of consumeRecordSize bytes to it.
func writeConsumeTopic(ctx context.Context, target Target, topic string, records int64) error {
	ctx, cancel := context.WithTimeout(ctx, consumeTimeout)
	defer cancel()
	client, err := kgo.NewClient(append(targetOptions(target), kgo.ClientID("exactly-loadgen-consume-cost-writer"),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20))...)
	if err != nil {
		return fmt.Errorf("consume cost writer: %w", err)
	}
	defer client.Close()
	if err := createTopic(ctx, client, topic, 1, 1); err != nil {
		return fmt.Errorf("consume cost topic: %w", err)
	}
	value := make([]byte, consumeRecordSize)
	var mu sync.Mutex // guards failed, set by the produce callbacks
	var failed error
	for range records {
		client.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			failed = cmp.Or(failed, err)
		})
	}
	if err := client.Flush(ctx); err != nil {
		return fmt.Errorf("write consume cost topic: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		return fmt.Errorf("write consume cost topic: %w", failed)
	}
	return nil
}

// readConsumeTopic reads records records of topic from its start with a
// new client and returns the process CPU seconds and the wall seconds the
// read took (from the client's start, connection and TLS handshake
// included, to its last record).
func readConsumeTopic(ctx context.Context, target Target, topic string, records int64) (cpu, wall float64, err error) {
	ctx, cancel := context.WithTimeout(ctx, consumeTimeout)
	defer cancel()
	startCPU, err := processCPU()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	client, err := kgo.NewClient(append(targetOptions(target), kgo.ClientID("exactly-loadgen-consume-cost-reader"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(16<<20))...)
	if err != nil {
		return 0, 0, fmt.Errorf("consume cost reader: %w", err)
	}
	defer client.Close()
	var read int64
	for read < records {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, 0, fmt.Errorf("read %d of %d records of %s: %w", read, records, topic, ctx.Err())
		}
		var fetchErr error
		fetches.EachError(func(_ string, _ int32, err error) { fetchErr = errors.Join(fetchErr, err) })
		if fetchErr != nil {
			return 0, 0, fmt.Errorf("read %s: %w", topic, fetchErr)
		}
		read += int64(fetches.NumRecords())
	}
	wall = time.Since(start).Seconds()
	endCPU, err := processCPU()
	if err != nil {
		return 0, 0, err
	}
	return endCPU - startCPU, wall, nil
}

// processCPU is this process's user + system CPU time so far, in seconds.
func processCPU() (float64, error) {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	seconds := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return seconds(usage.Utime) + seconds(usage.Stime), nil
}

// median is the middle of values (the mean of the middle two for an even
// count); values is not changed.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	middle := len(sorted) / 2
	if len(sorted)%2 == 0 {
		return (sorted[middle-1] + sorted[middle]) / 2
	}
	return sorted[middle]
}

// topicNamePart is text made fit for a topic name (letters, digits, '.',
// '_', '-'): lower case, anything else a '-' ("PLAINTEXT (A/A)" →
// "plaintext--a-a-").
func topicNamePart(text string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, text)
}
