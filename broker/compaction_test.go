package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/internal/testutil"
	"github.com/exactly-eos/exactly/wire"
)

// Tests of cleanup.policy=compact seen by clients (the broker's logCleaner): a
// compacted topic read by a franz-go consumer, Fetch and ListOffsets on
// its gaps, read_committed after aborted data is cleaned away, and an
// idempotent retry after a clean and a restart that replays the log.

// compactTestProperties are broker settings for fast cleaner tests.
func compactTestProperties() map[string]string {
	return map[string]string{"log.cleaner.backoff.ms": "20"}
}

// compactTopicConfig is a compacted topic with small segments whose
// tombstones go at the first clean, cleaned whenever it has dirt.
var compactTopicConfig = map[string]string{"cleanup.policy": "compact", "segment.bytes": "1024", "delete.retention.ms": "0",
	"min.cleanable.dirty.ratio": "0.01"}

// sealAndWaitCleaned rolls the log (the cleaner never touches the active
// segment), flushes it (nor a segment past the recovery point) and waits
// until the cleaner has cleaned everything below the log end.
func sealAndWaitCleaned(t *testing.T, b *Broker, log *storage.Log, upperBound func() int64) {
	t.Helper()
	if err := log.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := log.Flush(); err != nil {
		t.Fatal(err)
	}
	waitCleaned(t, b, log, upperBound)
}

// waitCleaned waits until the cleaner has cleaned log up to its cleanable
// end under upperBound (the last stable offset) and that end reaches
// upperBound — or, when it falls inside a segment, the segment before.
func waitCleaned(t *testing.T, b *Broker, log *storage.Log, upperBound func() int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b.cleanNow()
		bound := upperBound()
		stats, err := log.CleanableStats(storage.CleanOptions{UpperBound: bound})
		if err != nil {
			t.Fatal(err)
		}
		reached := stats.CleanableEnd == bound || bound < log.LogEndOffset() && stats.CleanableEnd > 0
		if reached && stats.DirtyBytes == 0 && stats.FirstDirtyOffset >= stats.CleanableEnd && !horizonPassed(b, log) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the cleaner to clean %s below %d (log end %d): %+v", log.Dir(), bound, log.LogEndOffset(), stats)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// horizonPassed reports whether log has a delete horizon from its last
// clean that has passed, or is being cleaned: the cleaner's next clean
// of it will remove tombstones or markers (with delete.retention.ms=0 the
// clean after the one that kept them).
func horizonPassed(b *Broker, log *storage.Log) bool {
	lc := b.cleaner
	lc.mu.Lock()
	defer lc.mu.Unlock()
	horizon, ok := lc.horizons[log]
	return lc.busy[log] || ok && !time.Now().Before(horizon)
}

// logRecord is a record as found in the log.
type logRecord struct {
	offset int64
	key    string
	value  *string
}

// logRecords reads every data record of log directly, with the number of
// batches (empty ones included).
func logRecords(t *testing.T, log *storage.Log) (records []logRecord, batches int) {
	t.Helper()
	for from := log.LogStartOffset(); from < log.LogEndOffset(); {
		data, err := log.ReadBatches(from, log.LogEndOffset(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			break
		}
		for len(data) > 0 {
			view, err := wire.ParseBatch(data)
			if err != nil {
				t.Fatal(err)
			}
			data, from = data[view.Size():], view.LastOffset()+1
			batches++
			if view.Control() {
				continue
			}
			iterator, err := view.RecordIterator()
			if err != nil {
				t.Fatal(err)
			}
			for iterator.Next() {
				record := iterator.Record()
				r := logRecord{offset: record.Offset, key: string(record.Key)}
				if record.Value != nil {
					v := string(record.Value)
					r.value = &v
				}
				records = append(records, r)
			}
		}
	}
	return records, batches
}

// consumeFrom reads topic-partition from offset until it has seen a record
// at or past lastOffset, and returns what it got.
func consumeFrom(t *testing.T, b *Broker, topic string, offset, lastOffset int64, level kgo.IsolationLevel) []*kgo.Record {
	t.Helper()
	client := newTestClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(offset)}}),
		kgo.FetchIsolationLevel(level))
	ctx := testContext(t, 20*time.Second)
	var got []*kgo.Record
	for len(got) == 0 || got[len(got)-1].Offset < lastOffset {
		fetches := client.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s from %d: got %d records before the deadline, last wanted offset %d", topic, offset, len(got), lastOffset)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			t.Fatalf("consume %s: %v", topic, errs)
		}
		got = append(got, fetches.Records()...)
	}
	return got
}

// rawFetchFirstBatch fetches topic-partition 0 at offset (Fetch v12, by
// name) and returns the base offset of the first batch answered.
func rawFetchFirstBatch(t *testing.T, b *Broker, topic string, offset int64) int64 {
	t.Helper()
	r := dialRaw(t, b)
	r.request(fetchRequest(topic, offset, 0, 0, 1<<20), 12)
	resp := kmsg.NewPtrFetchResponse()
	r.response(resp, 12)
	got := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(got.ErrorCode); err != nil {
		t.Fatalf("fetch %s at %d: %v", topic, offset, err)
	}
	view, err := wire.ParseBatch(got.RecordBatches)
	if err != nil {
		t.Fatalf("fetch %s at %d: no batch: %v", topic, offset, err)
	}
	return view.BaseOffset()
}

// listOffsetAt is ListOffsets for timestamp (-2 earliest, -1 latest).
func listOffsetAt(t *testing.T, client *kgo.Client, topic string, timestamp int64) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("list offsets %s at %d: %v %+v", topic, timestamp, err, resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

func partitionZero(t *testing.T, b *Broker, topic string) *topicPartition {
	t.Helper()
	p, err := b.partitionOf(b.topicByName(topic), 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCompactedTopicConsumeFetchListOffsets: keys overwritten ten times
// and one deleted, cleaned: a consumer from 0 sees only each key's latest
// value at its original offset (offsets strictly increasing, with gaps),
// a fetch from a removed offset returns the next batch, ListOffsets
// earliest and latest do not move, and the deleted key is gone.
func TestCompactedTopicConsumeFetchListOffsets(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), compactTestProperties())
	client := newTestClient(t, b, kgo.DefaultProduceTopic("compacted"), kgo.ProducerLinger(0))
	createTopic(t, client, "compacted", 1, compactTopicConfig)
	ctx := testContext(t, 30*time.Second)
	latest := map[string]int64{}
	values := map[string]string{}
	for round := range 10 {
		for key := range 5 {
			record := &kgo.Record{Key: fmt.Appendf(nil, "k%d", key), Value: fmt.Appendf(nil, "k%d-round%d", key, round)}
			if err := client.ProduceSync(ctx, record).FirstErr(); err != nil {
				t.Fatal(err)
			}
			latest[string(record.Key)], values[string(record.Key)] = record.Offset, string(record.Value)
		}
	}
	tombstone := &kgo.Record{Key: []byte("k4")}
	if err := client.ProduceSync(ctx, tombstone).FirstErr(); err != nil {
		t.Fatal(err)
	}
	delete(latest, "k4")
	end := tombstone.Offset + 1
	p := partitionZero(t, b, "compacted")
	if p.Log().SegmentCount() < 3 {
		t.Fatalf("%d segments: the test needs several", p.Log().SegmentCount())
	}
	sealAndWaitCleaned(t, b, p.Log(), p.LastStableOffset)

	var want []int64
	for _, offset := range latest {
		want = append(want, offset)
	}
	slices.Sort(want)
	got := consumeFrom(t, b, "compacted", 0, want[len(want)-1], kgo.ReadUncommitted())
	var offsets []int64
	for _, record := range got {
		offsets = append(offsets, record.Offset)
		if string(record.Value) != values[string(record.Key)] || latest[string(record.Key)] != record.Offset {
			t.Errorf("record %s=%s at %d: want %s at %d", record.Key, record.Value, record.Offset, values[string(record.Key)], latest[string(record.Key)])
		}
	}
	if !slices.Equal(offsets, want) {
		t.Fatalf("consumed offsets %v, want the latest of each key %v", offsets, want)
	}
	if records, _ := logRecords(t, p.Log()); len(records) != len(want) {
		t.Fatalf("the log holds %d records after the clean, want %d (the tombstone and its key gone): %+v", len(records), len(want), records)
	}
	if first := rawFetchFirstBatch(t, b, "compacted", 0); first != want[0] {
		t.Fatalf("fetch at removed offset 0: first batch at %d, want the next one, %d", first, want[0])
	}
	if first := rawFetchFirstBatch(t, b, "compacted", want[0]+1); first != want[1] {
		t.Fatalf("fetch at removed offset %d: first batch at %d, want %d", want[0]+1, first, want[1])
	}
	if earliest, latestOffset := listOffsetAt(t, client, "compacted", -2), listOffsetAt(t, client, "compacted", -1); earliest != 0 || latestOffset != end {
		t.Fatalf("ListOffsets earliest %d latest %d, want 0 and %d (unchanged by cleaning)", earliest, latestOffset, end)
	}
}

// TestCompactedTopicTransactions: a committed transaction, an aborted one
// and a later committed overwrite on a compacted topic: after cleaning,
// the aborted records are gone from the log and neither isolation level
// sees them; the committed ones survive (the latest per key).
func TestCompactedTopicTransactions(t *testing.T) {
	t.Parallel()
	properties := txnTestProperties("2")
	for k, v := range compactTestProperties() {
		properties[k] = v
	}
	b := startTestBroker(t, t.TempDir(), properties)
	admin := newTestClient(t, b)
	createTopic(t, admin, "compacted-txn", 1, compactTopicConfig)
	producer := newTxnProducer(t, b.Addr(), "compacting")
	ctx := testContext(t, 30*time.Second)
	record := func(key, value string) *kgo.Record {
		return &kgo.Record{Topic: "compacted-txn", Partition: 0, Key: []byte(key), Value: []byte(value)}
	}
	steps := []struct {
		records []*kgo.Record
		commit  bool
	}{
		{[]*kgo.Record{record("a", "a1"), record("b", "b1")}, true},
		{[]*kgo.Record{record("c", "aborted"), record("d", "aborted"), record("b", "aborted")}, false},
		{[]*kgo.Record{record("a", "a2")}, true},
	}
	for i, step := range steps {
		if err := runTransaction(ctx, producer, step.records, step.commit); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
	}
	p := partitionZero(t, b, "compacted-txn")
	testutil.Until(t, 10*time.Second, "the last stable offset to reach the log end", func() bool {
		return p.LastStableOffset() == p.Log().LogEndOffset()
	})
	sealAndWaitCleaned(t, b, p.Log(), p.LastStableOffset)

	records, _ := logRecords(t, p.Log())
	for _, r := range records {
		if r.value != nil && *r.value == "aborted" {
			t.Fatalf("aborted record %s at %d survived the clean: %+v", r.key, r.offset, records)
		}
	}
	want := map[string]string{"a": "a2", "b": "b1"}
	last := steps[2].records[0].Offset
	for _, level := range []kgo.IsolationLevel{kgo.ReadCommitted(), kgo.ReadUncommitted()} {
		got := map[string]string{}
		for _, r := range consumeFrom(t, b, "compacted-txn", 0, last, level) {
			got[string(r.Key)] = string(r.Value)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("isolation %v after the clean: %v, want %v", level, got, want)
		}
	}
}

// keyedIdempotentBatch is one record of key from a producer (id -1: not
// idempotent).
func keyedIdempotentBatch(t *testing.T, producerID int64, sequence int32, key, value string) []byte {
	t.Helper()
	options := wire.PlainBatchOptions()
	options.ProducerID, options.ProducerEpoch, options.BaseSequence = producerID, 0, sequence
	if producerID < 0 {
		options.BaseSequence = -1
	}
	batch, err := wire.BuildBatch(options, []wire.BuilderRecord{{TimestampMillis: time.Now().UnixMilli(), Key: []byte(key), Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// TestCompactedTopicIdempotentRetry: an idempotent producer's records are
// all superseded by another producer's and cleaned away, but its newest
// batch stays (emptied), so after a restart that rebuilds the producer
// state from the log alone (snapshots removed) its retry is still a
// duplicate answered with the original offset and a gap still refused.
func TestCompactedTopicIdempotentRetry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startTestBroker(t, dir, compactTestProperties())
	createTopic(t, newTestClient(t, b), "compacted-idem", 1, compactTopicConfig)
	r := dialRaw(t, b)
	pid := r.initProducerID(4)
	var last kmsg.ProduceResponseTopicPartition
	for sequence := range int32(5) {
		last = r.produceRaw("compacted-idem", 0, keyedIdempotentBatch(t, pid, sequence, "x", fmt.Sprint("idempotent", sequence)), 9)
		if last.ErrorCode != 0 {
			t.Fatalf("produce sequence %d: error %d", sequence, last.ErrorCode)
		}
	}
	for i := range 40 { // plain writes of the same key: the idempotent records are all superseded
		if got := r.produceRaw("compacted-idem", 0, keyedIdempotentBatch(t, -1, 0, "x", fmt.Sprint("plain", i)), 9); got.ErrorCode != 0 {
			t.Fatalf("plain produce: error %d", got.ErrorCode)
		}
	}
	p := partitionZero(t, b, "compacted-idem")
	sealAndWaitCleaned(t, b, p.Log(), p.LastStableOffset)
	records, batches := logRecords(t, p.Log())
	if len(records) != 1 || *records[0].value != "plain39" || batches != 2 {
		t.Fatalf("after the clean: %d batches, records %+v; want the producer's emptied last batch and plain39", batches, records)
	}
	dataDir := p.Log().Dir()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dataDir, partition.ProducerSnapshotDirName)); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, compactTestProperties())
	r = dialRaw(t, b)
	retry := r.produceRaw("compacted-idem", 0, keyedIdempotentBatch(t, pid, 4, "x", "idempotent4"), 9)
	if retry.ErrorCode != 0 || retry.BaseOffset != last.BaseOffset {
		t.Fatalf("retry of the last batch after clean and restart: error %d base %d, want the original %d", retry.ErrorCode, retry.BaseOffset, last.BaseOffset)
	}
	if gap := r.produceRaw("compacted-idem", 0, keyedIdempotentBatch(t, pid, 6, "x", "gap"), 9); gap.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap after clean and restart: error %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", gap.ErrorCode)
	}
}

// TestCompactedTopicOpenTransaction: the cleaner stops at the last stable
// offset. A key's committed value is followed by a write of an open
// transaction; a clean meanwhile must not take the open write as the
// latest (cleaning past the LSO would drop the committed value); once
// the transaction aborts, a clean removes the open write and the
// committed value is what remains.
func TestCompactedTopicOpenTransaction(t *testing.T) {
	t.Parallel()
	properties := txnTestProperties("2")
	for k, v := range compactTestProperties() {
		properties[k] = v
	}
	b := startTestBroker(t, t.TempDir(), properties)
	createTopic(t, newTestClient(t, b), "compacted-open", 1, compactTopicConfig)
	ctx := testContext(t, 30*time.Second)
	plain := newTestClient(t, b, kgo.DefaultProduceTopic("compacted-open"), kgo.ProducerLinger(0))
	for i := range 20 {
		if err := plain.ProduceSync(ctx, &kgo.Record{Key: []byte("b"), Value: fmt.Appendf(nil, "committed%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	producer := newTxnProducer(t, b.Addr(), "open-txn")
	if err := producer.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	open := &kgo.Record{Topic: "compacted-open", Partition: 0, Key: []byte("b"), Value: []byte("open")}
	if err := producer.ProduceSync(ctx, open).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p := partitionZero(t, b, "compacted-open")
	if lso := p.LastStableOffset(); lso != open.Offset {
		t.Fatalf("last stable offset %d, want the open transaction's first offset %d", lso, open.Offset)
	}
	for i := range 20 { // more segments past the open transaction
		if err := plain.ProduceSync(ctx, &kgo.Record{Key: []byte("c"), Value: fmt.Appendf(nil, "c%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sealAndWaitCleaned(t, b, p.Log(), p.LastStableOffset)
	if err := producer.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, 10*time.Second, "the abort to reach the partition", func() bool { return p.LastStableOffset() == p.Log().LogEndOffset() })
	sealAndWaitCleaned(t, b, p.Log(), p.LastStableOffset)
	got := map[string]string{}
	records, _ := logRecords(t, p.Log())
	for _, r := range records {
		got[r.key] = *r.value
	}
	if got["b"] != "committed19" || got["c"] != "c19" || len(records) != 2 {
		t.Fatalf("after the abort and a clean the log holds %+v, want b=committed19 and c=c19", records)
	}
}

// TestCleanerMarksFailingLogUncleanable: a log whose clean fails (a
// sealed segment damaged on disk) is marked uncleanable and skipped, and
// the cleaner goes on cleaning the other logs.
func TestCleanerMarksFailingLogUncleanable(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), compactTestProperties())
	client := newTestClient(t, b, kgo.ProducerLinger(0))
	ctx := testContext(t, 30*time.Second)
	for _, topic := range []string{"damaged", "healthy"} {
		createTopic(t, client, topic, 1, compactTopicConfig)
		for i := range 30 {
			if err := client.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	damaged, healthy := partitionZero(t, b, "damaged"), partitionZero(t, b, "healthy")
	// Cleaned first, so no clean runs while the file is damaged; then the
	// first segment holding a batch (a clean may leave empty ones).
	sealAndWaitCleaned(t, b, damaged.Log(), damaged.LastStableOffset)
	segments, err := filepath.Glob(filepath.Join(damaged.Log().Dir(), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	segment := ""
	for _, name := range segments {
		if info, err := os.Stat(name); err == nil && info.Size() > 0 {
			segment = name
			break
		}
	}
	file, err := os.OpenFile(segment, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.WriteAt([]byte{0x7f, 0xff, 0xff, 0xff}, 8); err != nil { // the first batch's length
		t.Fatal(err)
	}
	file.Close()
	for i := range 10 { // new dirt, so that a clean reads the log again from its first segment
		if err := client.ProduceSync(ctx, &kgo.Record{Topic: "damaged", Key: []byte("k"), Value: fmt.Appendf(nil, "later%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := damaged.Log().Roll(); err != nil {
		t.Fatal(err)
	}
	if err := damaged.Log().Flush(); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, 10*time.Second, "the damaged log marked uncleanable", func() bool {
		b.cleanNow()
		b.cleaner.mu.Lock()
		defer b.cleaner.mu.Unlock()
		return b.cleaner.uncleanable[damaged.Log()] != nil
	})
	b.cleaner.mu.Lock()
	t.Logf("uncleanable: %v", b.cleaner.uncleanable[damaged.Log()])
	b.cleaner.mu.Unlock()
	for i := range 10 { // the other log is still cleaned
		if err := client.ProduceSync(ctx, &kgo.Record{Topic: "healthy", Key: []byte("k"), Value: fmt.Appendf(nil, "later%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sealAndWaitCleaned(t, b, healthy.Log(), healthy.LastStableOffset)
	if records, _ := logRecords(t, healthy.Log()); len(records) != 1 {
		t.Fatalf("healthy log after cleaning: %+v", records)
	}
}

// TestCompactDeletePolicies: with cleanup.policy=compact,delete retention
// still deletes old segments (the log start moves) and the rest is
// compacted; with compact alone retention is off, however short
// retention.ms is.
func TestCompactDeletePolicies(t *testing.T) {
	t.Parallel()
	properties := compactTestProperties()
	properties["log.retention.check.interval.ms"] = "20"
	b := startTestBroker(t, t.TempDir(), properties)
	client := newTestClient(t, b, kgo.ProducerLinger(0))
	ctx := testContext(t, 30*time.Second)
	both := map[string]string{"retention.bytes": "2048"}
	compactOnly := map[string]string{"retention.ms": "1"}
	for k, v := range compactTopicConfig {
		both[k], compactOnly[k] = v, v
	}
	both["cleanup.policy"] = "compact,delete"
	createTopic(t, client, "compact-delete", 1, both)
	createTopic(t, client, "compact-only", 1, compactOnly)
	for _, topic := range []string{"compact-delete", "compact-only"} {
		for i := range 200 {
			record := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)} // all keys distinct
			if err := client.ProduceSync(ctx, record).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	deleting, keeping := partitionZero(t, b, "compact-delete"), partitionZero(t, b, "compact-only")
	testutil.Until(t, 10*time.Second, "retention to delete compact-delete's oldest segments", func() bool {
		return deleting.Log().LogStartOffset() > 0 && deleting.Log().Size() <= 2048+1024
	})
	sealAndWaitCleaned(t, b, keeping.Log(), keeping.LastStableOffset)
	if records, _ := logRecords(t, keeping.Log()); keeping.Log().LogStartOffset() != 0 || len(records) != 200 {
		t.Fatalf("compact-only with retention.ms=1: log start %d, %d records; want 0 and all 200 (distinct keys)", keeping.Log().LogStartOffset(), len(records))
	}
}

// TestMaxCompactionLagRollsActiveSegment: a compacted topic with a large
// segment.bytes and the default segment.ms keeps everything in its active
// segment, which the cleaner never touches; with max.compaction.lag.ms
// the first append after the lag has passed rolls the segment, as Kafka
// does, and the cleaner then cleans the old versions away.
func TestMaxCompactionLagRollsActiveSegment(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), compactTestProperties())
	client := newTestClient(t, b, kgo.ProducerLinger(0))
	ctx := testContext(t, 30*time.Second)
	const lag = 200 * time.Millisecond
	lagged := map[string]string{"max.compaction.lag.ms": strconv.Itoa(int(lag.Milliseconds()))}
	unlagged := map[string]string{}
	for k, v := range compactTopicConfig {
		lagged[k], unlagged[k] = v, v
	}
	lagged["segment.bytes"], unlagged["segment.bytes"] = "1048576", "1048576"
	createTopic(t, client, "lagged", 1, lagged)
	createTopic(t, client, "unlagged", 1, unlagged)
	produce := func(i int) {
		t.Helper()
		for _, topic := range []string{"lagged", "unlagged"} {
			record := &kgo.Record{Topic: topic, Key: []byte("k"), Value: fmt.Appendf(nil, "v%d", i)}
			if err := client.ProduceSync(ctx, record).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	for i := range 10 {
		produce(i)
	}
	// The roll is decided at append time from the first batch's
	// timestamp, so the next append must come after the lag has passed.
	time.Sleep(time.Until(start.Add(lag + 50*time.Millisecond)))
	produce(10)

	rolled, kept := partitionZero(t, b, "lagged"), partitionZero(t, b, "unlagged")
	if rolled.Log().SegmentCount() != 2 || kept.Log().SegmentCount() != 1 {
		t.Fatalf("segments: lagged %d (want 2: rolled by max.compaction.lag.ms), unlagged %d (want 1)",
			rolled.Log().SegmentCount(), kept.Log().SegmentCount())
	}
	testutil.Until(t, 10*time.Second, "the cleaner to clean the rolled segment", func() bool {
		b.cleanNow()
		records, _ := logRecords(t, rolled.Log())
		return len(records) == 2
	})
	records, _ := logRecords(t, rolled.Log())
	if *records[0].value != "v9" || *records[1].value != "v10" {
		t.Fatalf("lagged log after cleaning: %+v, want v9 (latest of the sealed segment) and v10 (active)", records)
	}
	if records, _ := logRecords(t, kept.Log()); len(records) != 11 {
		t.Fatalf("unlagged log holds %d records, want all 11 (its only segment is active)", len(records))
	}
}

// TestCompactedTombstoneDeleteHorizon is KIP-534 on a real broker: a tombstone
// whose producer gave it an hour-old timestamp survives the first clean
// that keeps it — its batch now carries a delete horizon of that clean's
// time plus delete.retention.ms, and a consumer still reads the record's
// own timestamp — and goes at the clean the cleaner schedules for the
// horizon, with no new record written.
func TestCompactedTombstoneDeleteHorizon(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), compactTestProperties())
	client := newTestClient(t, b, kgo.ProducerLinger(0))
	const retention = 600 * time.Millisecond
	config := map[string]string{}
	for k, v := range compactTopicConfig {
		config[k] = v
	}
	config["delete.retention.ms"] = strconv.Itoa(int(retention.Milliseconds()))
	createTopic(t, client, "horizon", 1, config)
	ctx := testContext(t, 30*time.Second)
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	records := []*kgo.Record{
		{Topic: "horizon", Key: []byte("gone"), Value: []byte("v")},
		{Topic: "horizon", Key: []byte("gone"), Timestamp: old}, // the tombstone
		{Topic: "horizon", Key: []byte("kept"), Value: []byte("v")},
	}
	for _, record := range records {
		if err := client.ProduceSync(ctx, record).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p := partitionZero(t, b, "horizon")
	cleanStarted := time.Now()
	sealAndWaitCleaned(t, b, p.Log(), p.LastStableOffset)

	tombstoneOffset := records[1].Offset
	data, err := p.Log().ReadBatches(tombstoneOffset, tombstoneOffset+1, 1<<20)
	if err != nil || len(data) == 0 {
		t.Fatalf("read the tombstone's batch: %v (%d bytes)", err, len(data))
	}
	view, err := wire.ParseBatch(data)
	if err != nil {
		t.Fatal(err)
	}
	horizon, ok := view.DeleteHorizon()
	if !ok || view.BaseOffset() != tombstoneOffset {
		t.Fatalf("batch at %d after the first clean: delete horizon %d (set %v), want the tombstone's batch at %d stamped",
			view.BaseOffset(), horizon, ok, tombstoneOffset)
	}
	if earliest, latest := cleanStarted.Add(retention).UnixMilli(), time.Now().Add(retention).UnixMilli(); horizon < earliest || horizon > latest {
		t.Fatalf("delete horizon %d outside [%d, %d]: the clean's time plus delete.retention.ms", horizon, earliest, latest)
	}
	got := consumeFrom(t, b, "horizon", 0, records[2].Offset, kgo.ReadUncommitted())
	if len(got) != 2 || got[0].Offset != tombstoneOffset || got[0].Value != nil || !got[0].Timestamp.Equal(old) {
		t.Fatalf("consumed %v after the first clean, want the tombstone at %d with its own timestamp %v, then kept", got, tombstoneOffset, old)
	}

	testutil.Until(t, 10*time.Second, "the cleaner to remove the tombstone after its delete horizon", func() bool {
		b.cleanNow()
		records, _ := logRecords(t, p.Log())
		return len(records) == 1 && records[0].key == "kept"
	})
	if now := time.Now().UnixMilli(); now < horizon {
		t.Fatalf("tombstone removed at %d, before its delete horizon %d", now, horizon)
	}
}
