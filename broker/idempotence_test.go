package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/wire"
)

// Scenario tests of idempotent produce, written the way the seed tells
// them: a producer writes, the ack is lost, it retries, and there is one
// copy. They speak the protocol by hand (rawConnection) so that every
// sequence number and epoch is chosen by the test.

// producerBatch builds an idempotent batch of count records.
func idempotentBatch(t *testing.T, producerID int64, epoch int16, sequence int32, count int) []byte {
	t.Helper()
	records := make([]wire.BuilderRecord, count)
	for i := range records {
		records[i] = wire.BuilderRecord{TimestampMillis: 1000 + int64(sequence) + int64(i),
			Value: fmt.Appendf(nil, "p%d-e%d-s%d", producerID, epoch, int(sequence)+i)}
	}
	options := wire.PlainBatchOptions()
	options.ProducerID, options.ProducerEpoch, options.BaseSequence = producerID, epoch, sequence
	batch, err := wire.BuildBatch(options, records)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return batch
}

// produceRequest is a Produce of records to one partition with acks and
// a 5 s timeout.
func produceRequest(topic string, partition int32, records []byte, acks int16) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceRaw sends records to topic-partition at version with acks=all and
// returns the partition's response.
func (r *rawConnection) produceRaw(topic string, partition int32, records []byte, version int16) kmsg.ProduceResponseTopicPartition {
	r.t.Helper()
	r.request(produceRequest(topic, partition, records, -1), version)
	resp := kmsg.NewPtrProduceResponse()
	r.response(resp, version)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		r.t.Fatalf("produce response has %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// initProducerID asks for a producer id without a transactional id.
func (r *rawConnection) initProducerID(version int16) int64 {
	r.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = 60000
	r.request(req, version)
	resp := kmsg.NewPtrInitProducerIDResponse()
	r.response(resp, version)
	if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
		r.t.Fatalf("InitProducerId v%d: error %d, id %d, epoch %d", version, resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch)
	}
	return resp.ProducerID
}

// describeProducers returns DescribeProducers' answer for one partition.
func (r *rawConnection) describeProducers(topic string, partition int32) kmsg.DescribeProducersResponseTopicPartition {
	r.t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	r.request(req, 0)
	resp := kmsg.NewPtrDescribeProducersResponse()
	r.response(resp, 0)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		r.t.Fatalf("DescribeProducers response has %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// produceStep is one Produce of a scenario and what must come back.
type produceStep struct {
	what           string
	epoch          int16
	sequence       int32
	count          int
	version        int16
	wantError      *kerr.Error
	wantBaseOffset int64
	// wantLogEnd is the partition's log end offset afterwards.
	wantLogEnd int64
}

func runProduceSteps(t *testing.T, b *Broker, r *rawConnection, topic string, producerID int64, steps []produceStep) {
	t.Helper()
	for _, step := range steps {
		got := r.produceRaw(topic, 0, idempotentBatch(t, producerID, step.epoch, step.sequence, step.count), step.version)
		wantCode := int16(0)
		if step.wantError != nil {
			wantCode = step.wantError.Code
		}
		if got.ErrorCode != wantCode {
			t.Fatalf("%s: error %v (%v), want %v", step.what, kerr.ErrorForCode(got.ErrorCode), got.ErrorMessage, step.wantError)
		}
		if step.wantError == nil && got.BaseOffset != step.wantBaseOffset {
			t.Fatalf("%s: base offset %d, want %d", step.what, got.BaseOffset, step.wantBaseOffset)
		}
		p, err := b.partitionOf(b.topicByName(topic), 0)
		if err != nil {
			t.Fatalf("%s: partition: %v", step.what, err)
		}
		if end := p.Log().LogEndOffset(); end != step.wantLogEnd {
			t.Fatalf("%s: log end offset %d, want %d", step.what, end, step.wantLogEnd)
		}
	}
}

// TestIdempotentProduceScenarios walks the sequence rules through the
// Produce handler: duplicates answered with the original offsets and not
// written, gaps and fenced epochs refused with nothing written.
func TestIdempotentProduceScenarios(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	r := dialRaw(t, b)
	pid := r.initProducerID(4)
	runProduceSteps(t, b, r, "idem", pid, []produceStep{
		{what: "first batch", sequence: 0, count: 3, version: 9, wantBaseOffset: 0, wantLogEnd: 3},
		{what: "ack lost, producer retries: one copy, original offset", sequence: 0, count: 3, version: 9, wantBaseOffset: 0, wantLogEnd: 3},
		{what: "next batch", sequence: 3, count: 2, version: 9, wantBaseOffset: 3, wantLogEnd: 5},
		{what: "retry of an older batch still among the last 5", sequence: 0, count: 3, version: 9, wantBaseOffset: 0, wantLogEnd: 5},
		{what: "gap: sequence 7 after 4", sequence: 7, count: 1, version: 9, wantError: kerr.OutOfOrderSequenceNumber, wantLogEnd: 5},
		{what: "overlapping range that is no cached batch", sequence: 1, count: 4, version: 9, wantError: kerr.OutOfOrderSequenceNumber, wantLogEnd: 5},
		{what: "in order again after the refusal", sequence: 5, count: 1, version: 9, wantBaseOffset: 5, wantLogEnd: 6},
		{what: "new epoch must start at sequence 0", epoch: 1, sequence: 6, count: 1, version: 9, wantError: kerr.OutOfOrderSequenceNumber, wantLogEnd: 6},
		{what: "new epoch at sequence 0", epoch: 1, sequence: 0, count: 2, version: 9, wantBaseOffset: 6, wantLogEnd: 8},
		{what: "old epoch is fenced (Produce v9)", epoch: 0, sequence: 6, count: 1, version: 9, wantError: kerr.InvalidProducerEpoch, wantLogEnd: 8},
		{what: "old epoch is fenced (Produce v3)", epoch: 0, sequence: 6, count: 1, version: 3, wantError: kerr.InvalidProducerEpoch, wantLogEnd: 8},
		{what: "retry of the old epoch's batch is fenced too", epoch: 0, sequence: 0, count: 3, version: 9, wantError: kerr.InvalidProducerEpoch, wantLogEnd: 8},
	})

	other := r.initProducerID(5)
	if other == pid {
		t.Fatalf("two InitProducerId calls returned the same id %d", pid)
	}
	runProduceSteps(t, b, r, "idem", other, []produceStep{
		{what: "unknown producer at sequence 5 (v7)", sequence: 5, count: 1, version: 7, wantError: kerr.UnknownProducerID, wantLogEnd: 8},
		{what: "unknown producer at sequence 5 (v4 has no UNKNOWN_PRODUCER_ID)", sequence: 5, count: 1, version: 4, wantError: kerr.OutOfOrderSequenceNumber, wantLogEnd: 8},
		{what: "unknown producer at sequence 0", sequence: 0, count: 1, version: 7, wantBaseOffset: 8, wantLogEnd: 9},
	})

	described := r.describeProducers("idem", 0)
	if described.ErrorCode != 0 || len(described.ActiveProducers) != 2 {
		t.Fatalf("DescribeProducers: error %d, %d producers, want 2", described.ErrorCode, len(described.ActiveProducers))
	}
	first := described.ActiveProducers[0]
	if first.ProducerID != min(pid, other) {
		t.Fatalf("DescribeProducers lists %d first, want the smaller id", first.ProducerID)
	}
	for _, producer := range described.ActiveProducers {
		wantEpoch, wantSequence := int32(0), int32(0)
		if producer.ProducerID == pid {
			wantEpoch, wantSequence = 1, 1
		}
		if producer.ProducerEpoch != wantEpoch || producer.LastSequence != wantSequence || producer.CurrentTxnStartOffset != -1 {
			t.Fatalf("DescribeProducers: producer %+v, want epoch %d last sequence %d", producer, wantEpoch, wantSequence)
		}
	}
	if unknown := r.describeProducers("no-such-topic", 0); unknown.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("DescribeProducers of an unknown topic: error %d", unknown.ErrorCode)
	}
}

// TestIdempotentProduceRefusals: batches the broker cannot accept from an
// idempotent producer are refused with nothing written.
func TestIdempotentProduceRefusals(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	r := dialRaw(t, b)
	pid := r.initProducerID(3)
	two := append(idempotentBatch(t, pid, 0, 0, 1), idempotentBatch(t, pid, 0, 1, 1)...)
	if got := r.produceRaw("refused", 0, two, 9); got.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("two idempotent batches in one partition: error %d, want INVALID_RECORD", got.ErrorCode)
	}
	options := wire.PlainBatchOptions()
	options.ProducerID, options.Transactional = pid, true
	transactional, err := wire.BuildBatch(options, []wire.BuilderRecord{{Value: []byte("t")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.produceRaw("refused", 0, transactional, 9); got.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("transactional batch in a request without a transactional id: error %d, want INVALID_RECORD", got.ErrorCode)
	}
	p, err := b.partitionOf(b.topicByName("refused"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if end := p.Log().LogEndOffset(); end != 0 {
		t.Fatalf("refused batches were written: log end %d", end)
	}
	// Plain batches may still come several per partition.
	plain := append(idempotentBatch(t, -1, -1, -1, 2), idempotentBatch(t, -1, -1, -1, 1)...)
	if got := r.produceRaw("refused", 0, plain, 9); got.ErrorCode != 0 || got.BaseOffset != 0 || p.Log().LogEndOffset() != 3 {
		t.Fatalf("two plain batches: error %d base %d log end %d", got.ErrorCode, got.BaseOffset, p.Log().LogEndOffset())
	}
}

// TestInitProducerID: every version answers a fresh id at epoch 0; ids stay
// unique across a restart; a transactional id gets a fresh id at epoch 0,
// then the same id at the next epoch; an empty one is INVALID_REQUEST.
func TestInitProducerID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	r := dialRaw(t, b)
	seen := map[int64]bool{}
	for version := int16(0); version <= 5; version++ {
		id := r.initProducerID(version)
		if seen[id] {
			t.Fatalf("v%d: id %d handed out twice", version, id)
		}
		seen[id] = true
	}
	readyCoordinator(t, b, coordinatorTransaction, "orders")
	for _, tc := range []struct {
		transactionalID string
		want            *kerr.Error
		epoch           int16
	}{{"orders", nil, 0}, {"orders", nil, 1}, {"", kerr.InvalidRequest, -1}} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(tc.transactionalID)
		req.TransactionTimeoutMillis = 60000
		r.request(req, 4)
		resp := kmsg.NewPtrInitProducerIDResponse()
		r.response(resp, 4)
		if tc.want != nil {
			if resp.ErrorCode != tc.want.Code || resp.ProducerID != -1 {
				t.Fatalf("transactional id %q: error %d id %d, want %v", tc.transactionalID, resp.ErrorCode, resp.ProducerID, tc.want)
			}
			continue
		}
		if resp.ErrorCode != 0 || resp.ProducerEpoch != tc.epoch {
			t.Fatalf("transactional id %q: error %d epoch %d, want epoch %d", tc.transactionalID, resp.ErrorCode, resp.ProducerEpoch, tc.epoch)
		}
		if tc.epoch == 0 {
			if seen[resp.ProducerID] {
				t.Fatalf("transactional id %q: id %d handed out twice", tc.transactionalID, resp.ProducerID)
			}
			seen[resp.ProducerID] = true
		} else if !seen[resp.ProducerID] {
			t.Fatalf("transactional id %q: epoch bump changed the producer id to %d", tc.transactionalID, resp.ProducerID)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	restarted := startTestBroker(t, dir, nil)
	r = dialRaw(t, restarted)
	for range 3 {
		if id := r.initProducerID(4); seen[id] {
			t.Fatalf("after restart: id %d handed out again", id)
		}
	}
}

// snapshotOffsets lists the offsets of a partition's producer snapshots.
func snapshotOffsets(t *testing.T, p *topicPartition) []int64 {
	t.Helper()
	entries, err := os.ReadDir(p.SnapshotDir())
	if err != nil {
		t.Fatalf("list snapshots: %v", err)
	}
	var offsets []int64
	for _, entry := range entries {
		var offset int64
		if _, err := fmt.Sscanf(entry.Name(), "%020d.snapshot", &offset); err == nil && entry.Name() == producers.SnapshotFileName(offset) {
			offsets = append(offsets, offset)
		}
	}
	slices.Sort(offsets)
	return offsets
}

// TestProducerStateSurvivesRestart: after a clean restart, and after a
// restart whose newest snapshot is gone or corrupt (so the state comes from
// an older snapshot plus a replay of the log's batch headers), a retry of
// the last batch is still a duplicate answered with its original offset.
func TestProducerStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Small segments: every few batches roll one, which writes a snapshot.
	properties := map[string]string{"log.segment.bytes": "300"}
	b := startTestBroker(t, dir, properties)
	r := dialRaw(t, b)
	pid := r.initProducerID(4)
	var sequence int32
	offsets := []int64{}
	for range 20 {
		got := r.produceRaw("durable", 0, idempotentBatch(t, pid, 0, sequence, 2), 9)
		if got.ErrorCode != 0 {
			t.Fatalf("produce sequence %d: error %d", sequence, got.ErrorCode)
		}
		offsets = append(offsets, got.BaseOffset)
		sequence += 2
	}
	p, _ := b.partitionOf(b.topicByName("durable"), 0)
	partitionDir := p.Log().Dir()
	if p.Log().SegmentCount() < 3 {
		t.Fatalf("only %d segments; the test needs rolls", p.Log().SegmentCount())
	}
	rollSnapshots := snapshotOffsets(t, p)
	if len(rollSnapshots) == 0 {
		t.Fatal("no snapshot written when segments rolled")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	clean := snapshotOffsets(t, p)
	if clean[len(clean)-1] != 40 {
		t.Fatalf("snapshots after a clean close: %v, want one at the log end 40", clean)
	}

	lastRetry := func(b *Broker, label string) {
		t.Helper()
		r := dialRaw(t, b)
		got := r.produceRaw("durable", 0, idempotentBatch(t, pid, 0, sequence-2, 2), 9)
		if got.ErrorCode != 0 || got.BaseOffset != offsets[len(offsets)-1] {
			t.Fatalf("%s: retry of the last batch: error %d base %d, want the original %d", label, got.ErrorCode, got.BaseOffset, offsets[len(offsets)-1])
		}
		if gap := r.produceRaw("durable", 0, idempotentBatch(t, pid, 0, sequence+1, 1), 9); gap.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
			t.Fatalf("%s: gap after restart: error %d", label, gap.ErrorCode)
		}
	}
	b = startTestBroker(t, dir, properties)
	lastRetry(b, "clean restart")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// Drop the newest snapshot and corrupt the next: the state must come
	// from an older one (or none) plus the replay.
	snapshots := snapshotOffsets(t, p)
	snapshotDir := filepath.Join(partitionDir, partition.ProducerSnapshotDirName)
	if err := os.Remove(filepath.Join(snapshotDir, producers.SnapshotFileName(snapshots[len(snapshots)-1]))); err != nil {
		t.Fatal(err)
	}
	if len(snapshots) > 1 {
		path := filepath.Join(snapshotDir, producers.SnapshotFileName(snapshots[len(snapshots)-2]))
		if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b = startTestBroker(t, dir, properties)
	lastRetry(b, "restart without the newest snapshots")
}

// TestProducerStateAfterTruncate: truncating the log rebuilds the state to
// match the shorter log, so a batch that was cut off is accepted again (not
// answered as a duplicate of offsets that no longer exist).
func TestProducerStateAfterTruncate(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"log.segment.bytes": "300"})
	r := dialRaw(t, b)
	pid := r.initProducerID(4)
	for i := range int32(8) {
		if got := r.produceRaw("cut", 0, idempotentBatch(t, pid, 0, 3*i, 3), 9); got.ErrorCode != 0 || got.BaseOffset != int64(3*i) {
			t.Fatalf("batch %d: error %d base %d", i, got.ErrorCode, got.BaseOffset)
		}
	}
	p, _ := b.partitionOf(b.topicByName("cut"), 0)
	if err := p.Truncate(9); err != nil { // keeps batches 0..2 (sequences 0..8)
		t.Fatalf("truncate: %v", err)
	}
	if snapshots := snapshotOffsets(t, p); len(snapshots) > 0 && snapshots[len(snapshots)-1] > 9 {
		t.Fatalf("snapshots above the truncation point survived: %v", snapshots)
	}
	runProduceSteps(t, b, r, "cut", pid, []produceStep{
		{what: "retry of a batch that survived", sequence: 6, count: 3, version: 9, wantBaseOffset: 6, wantLogEnd: 9},
		{what: "batch that was cut off is written again", sequence: 9, count: 3, version: 9, wantBaseOffset: 9, wantLogEnd: 12},
		{what: "a later one is a gap now", sequence: 21, count: 3, version: 9, wantError: kerr.OutOfOrderSequenceNumber, wantLogEnd: 12},
	})
}

// TestProducerStateOutlivesRetention: retention deleting every segment
// with a producer's batches does not forget the producer, across a restart
// too: its next batch continues the sequence.
func TestProducerStateOutlivesRetention(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	properties := map[string]string{"log.segment.bytes": "300", "log.retention.bytes": "1"}
	b := startTestBroker(t, dir, properties)
	r := dialRaw(t, b)
	pid := r.initProducerID(4)
	for i := range int32(3) {
		if got := r.produceRaw("kept", 0, idempotentBatch(t, pid, 0, 2*i, 2), 9); got.ErrorCode != 0 {
			t.Fatalf("batch %d: error %d", i, got.ErrorCode)
		}
	}
	// Another producer's batches push the first one's out of the log.
	plain := idempotentBatch(t, -1, -1, -1, 2)
	for range 10 {
		if got := r.produceRaw("kept", 0, plain, 9); got.ErrorCode != 0 {
			t.Fatalf("plain batch: error %d", got.ErrorCode)
		}
	}
	b.applyRetention()
	p, _ := b.partitionOf(b.topicByName("kept"), 0)
	if start := p.Log().LogStartOffset(); start <= 6 {
		t.Fatalf("retention kept the producer's batches: log start %d", start)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, properties)
	r = dialRaw(t, b)
	if got := r.produceRaw("kept", 0, idempotentBatch(t, pid, 0, 6, 2), 9); got.ErrorCode != 0 || got.BaseOffset != 26 {
		t.Fatalf("next batch after retention and restart: error %d base %d, want 26", got.ErrorCode, got.BaseOffset)
	}
}

// TestProducerExpiry: a producer idle for producer.id.expiration.ms is
// forgotten; its next non-zero sequence is UNKNOWN_PRODUCER_ID.
func TestProducerExpiry(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"producer.id.expiration.ms": "50", "producer.id.expiration.check.interval.ms": "10"})
	r := dialRaw(t, b)
	pid := r.initProducerID(4)
	if got := r.produceRaw("idle", 0, idempotentBatch(t, pid, 0, 0, 1), 9); got.ErrorCode != 0 {
		t.Fatalf("first batch: error %d", got.ErrorCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(r.describeProducers("idle", 0).ActiveProducers) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("producer never expired")
		}
		time.Sleep(5 * time.Millisecond) // polling DescribeProducers; the expiry has no other signal
	}
	// The log start offset comes with the error: clients compare it with
	// their last acknowledged offset to tell expiry from data loss.
	if got := r.produceRaw("idle", 0, idempotentBatch(t, pid, 0, 1, 1), 9); got.ErrorCode != kerr.UnknownProducerID.Code || got.LogStartOffset != 0 {
		t.Fatalf("batch after expiry: error %d log start %d, want UNKNOWN_PRODUCER_ID and 0", got.ErrorCode, got.LogStartOffset)
	}
}

// TestDuplicateKeepsLogAppendTime: on a LogAppendTime topic the retry of a
// written batch is answered with the original append time, not a new one.
func TestDuplicateKeepsLogAppendTime(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"log.message.timestamp.type": "LogAppendTime"})
	r := dialRaw(t, b)
	pid := r.initProducerID(4)
	first := r.produceRaw("stamped", 0, idempotentBatch(t, pid, 0, 0, 2), 9)
	if first.ErrorCode != 0 || first.LogAppendTime <= 0 {
		t.Fatalf("first batch: error %d, log append time %d", first.ErrorCode, first.LogAppendTime)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().UnixMilli() <= first.LogAppendTime { // the clock must move on for the check to mean anything
		if time.Now().After(deadline) {
			t.Fatal("clock did not advance")
		}
		time.Sleep(time.Millisecond)
	}
	retry := r.produceRaw("stamped", 0, idempotentBatch(t, pid, 0, 0, 2), 9)
	if retry.ErrorCode != 0 || retry.BaseOffset != first.BaseOffset || retry.LogAppendTime != first.LogAppendTime {
		t.Fatalf("retry: error %d base %d time %d, want base %d time %d",
			retry.ErrorCode, retry.BaseOffset, retry.LogAppendTime, first.BaseOffset, first.LogAppendTime)
	}
}
