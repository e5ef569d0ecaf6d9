package broker

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/wire"
)

const (
	testPartitions       = 6
	recordsPerProduceRun = 100_000
)

// produceRun sends count records round-robin over the partitions, value
// "<run>-<i>", and waits for every promise.
func produceRun(t *testing.T, client *kgo.Client, topic, run string, count int) {
	t.Helper()
	ctx := testContext(t, 60*time.Second)
	errs := make(chan error, 1)
	for i := range count {
		record := &kgo.Record{Topic: topic, Partition: int32(i % testPartitions),
			Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "%s-%d", run, i)}
		client.Produce(ctx, record, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := client.Flush(ctx); err != nil {
		t.Fatalf("flush %s: %v", run, err)
	}
	select {
	case err := <-errs:
		t.Fatalf("produce %s: %v", run, err)
	default:
	}
}

// checkRuns verifies each partition holds, in order, its share of every
// run, with consecutive offsets from 0.
func checkRuns(t *testing.T, got map[int32][]*kgo.Record, runs []string, count int) {
	t.Helper()
	for partition := range int32(testPartitions) {
		records := got[partition]
		next := 0
		for _, run := range runs {
			for i := int(partition); i < count; i += testPartitions {
				if next >= len(records) {
					t.Fatalf("partition %d: only %d records", partition, len(records))
				}
				r := records[next]
				want := fmt.Sprintf("%s-%d", run, i)
				if string(r.Value) != want || string(r.Key) != strconv.Itoa(i) || r.Offset != int64(next) {
					t.Fatalf("partition %d record %d: offset %d key %q value %q, want offset %d key %d value %q",
						partition, next, r.Offset, r.Key, r.Value, next, i, want)
				}
				next++
			}
		}
		if next != len(records) {
			t.Fatalf("partition %d: %d records, want %d", partition, len(records), next)
		}
	}
}

// TestProduceConsumeRestart: 100k records with acks=all and 100k with
// acks=0 over 6 partitions come back complete and in order per partition,
// through sendfile, and again after the broker restarts on its data.
func TestProduceConsumeRestart(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	admin := newTestClient(t, b)
	createTopic(t, admin, "events", testPartitions, nil)

	all := newTestClient(t, b, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceRun(t, all, "events", "all", recordsPerProduceRun)
	none := newTestClient(t, b, kgo.RequiredAcks(kgo.NoAck()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceRun(t, none, "events", "none", recordsPerProduceRun)

	sentBefore, copiedBefore := sendfileBytes.Load(), copiedRegionBytes.Load()
	got := consumeAll(t, b, "events", testPartitions, 2*recordsPerProduceRun)
	checkRuns(t, got, []string{"all", "none"}, recordsPerProduceRun)
	var valueBytes int64
	for _, records := range got {
		for _, r := range records {
			valueBytes += int64(len(r.Value))
		}
	}
	sent := sendfileBytes.Load() - sentBefore
	if sent < valueBytes {
		t.Fatalf("sendfile sent %d bytes, less than the %d value bytes consumed", sent, valueBytes)
	}
	if copied := copiedRegionBytes.Load() - copiedBefore; copied != 0 {
		t.Fatalf("%d record bytes were copied through user space", copied)
	}
	t.Logf("sendfile sent %d bytes for %d value bytes", sent, valueBytes)

	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	restarted := startTestBroker(t, dir, nil)
	got = consumeAll(t, restarted, "events", testPartitions, 2*recordsPerProduceRun)
	checkRuns(t, got, []string{"all", "none"}, recordsPerProduceRun)
}

// TestCompressionCodecs: batches compressed with every codec are stored as
// sent and consumed back intact. The client sends a batch uncompressed when
// its codec would not shrink it (kgo keeps the compressed form only if it is
// shorter), so the check compares what was stored, batch for batch, with what
// the client reports it wrote: same record counts and the same codec.
func TestCompressionCodecs(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	wantCodec := map[string]wire.Compression{"gzip": wire.CompressionGzip, "snappy": wire.CompressionSnappy,
		"lz4": wire.CompressionLZ4, "zstd": wire.CompressionZstd}
	codecs := map[string]kgo.CompressionCodec{
		"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "compressed-" + name
			sent := &writtenBatches{byPartition: map[int32][]string{}}
			client := newTestClient(t, b, kgo.ProducerBatchCompression(codec),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithHooks(sent))
			createTopic(t, client, topic, testPartitions, nil)
			const count = 6000
			produceRun(t, client, topic, name, count)
			sent.waitForRecords(t, count)
			got := consumeAll(t, b, topic, testPartitions, count)
			checkRuns(t, got, []string{name}, count)
			// The broker stored the producer's batches as sent: compressed
			// ones with their codec, never recompressed or expanded.
			compressedBatches := 0
			for _, p := range b.partitionsOf(b.topicByName(topic)) {
				var stored []string
				err := p.Log().ScanHeaders(0, func(batch wire.BatchView) error {
					codec := batch.Compression()
					if codec != wantCodec[name] && codec != wire.CompressionNone {
						return fmt.Errorf("batch at %d has codec %v", batch.BaseOffset(), codec)
					}
					if codec == wantCodec[name] {
						compressedBatches++
					}
					stored = append(stored, batchSummary(batch.RecordCount(), uint8(codec)))
					return nil
				})
				if err != nil || len(stored) == 0 {
					t.Fatalf("%s: %d batches, %v", p.Name(), len(stored), err)
				}
				written := sent.of(p.Index())
				slices.Sort(stored)
				slices.Sort(written)
				if !slices.Equal(stored, written) {
					t.Fatalf("%s: stored batches %v, the client wrote %v", p.Name(), stored, written)
				}
			}
			if compressedBatches == 0 {
				t.Fatalf("%s: no batch was stored with codec %v", topic, wantCodec[name])
			}
		})
	}
}

// writtenBatches is a kgo hook recording each produced batch's record count
// and codec per partition. kgo calls it from a goroutine it starts after the
// produce response, so it can run after the records' promises have finished:
// waitForRecords waits for the reports to add up.
type writtenBatches struct {
	mu          sync.Mutex
	byPartition map[int32][]string
	records     int
}

// waitForRecords waits, up to 10 s, until the hook has reported batches
// holding want records in all.
func (w *writtenBatches) waitForRecords(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		got := w.records
		w.mu.Unlock()
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the produce hook reported %d of %d records written", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// OnProduceBatchWritten records one batch the broker acknowledged.
func (w *writtenBatches) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, partition int32, m kgo.ProduceBatchMetrics) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.byPartition[partition] = append(w.byPartition[partition], batchSummary(int32(m.NumRecords), m.CompressionType))
	w.records += m.NumRecords
}

// batchSummary is how a batch is compared between the client's report and
// the stored log: its record count and codec number (the wire attribute
// bits, which kgo's CompressionType also uses).
func batchSummary(records int32, codec uint8) string {
	return fmt.Sprintf("%d records codec %d", records, codec)
}

func (w *writtenBatches) of(partition int32) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.byPartition[partition])
}
