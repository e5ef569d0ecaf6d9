package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/exactly-eos/exactly/wire"
)

// testBatch builds one batch of n records with timestamps 100, 101, ...
func testBatch(t *testing.T, options wire.BatchOptions, n int) []byte {
	t.Helper()
	records := make([]wire.BuilderRecord, n)
	for i := range records {
		records[i] = wire.BuilderRecord{TimestampMillis: 100 + int64(i), Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 40)}
	}
	batch, err := wire.BuildBatch(options, records)
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

func producerOptions(producerID int64, epoch int16, sequence int32, transactional bool) wire.BatchOptions {
	options := wire.PlainBatchOptions()
	options.ProducerID, options.ProducerEpoch, options.BaseSequence, options.Transactional = producerID, epoch, sequence, transactional
	return options
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestAnalyzeRecords: the one pass over an append's batch headers, per
// origin — what it learns from plain, idempotent, transactional, control,
// compressed and multi-batch data, and which malformed data it refuses
// with which error.
func TestAnalyzeRecords(t *testing.T) {
	plain := testBatch(t, wire.PlainBatchOptions(), 3)
	plain2 := testBatch(t, wire.PlainBatchOptions(), 2)
	idempotent := testBatch(t, producerOptions(7, 1, 5, false), 4)
	transactional := testBatch(t, producerOptions(9, 2, 0, true), 1)
	gzipOptions := wire.PlainBatchOptions()
	gzipOptions.Compression = wire.CompressionGzip
	compressed := testBatch(t, gzipOptions, 5)
	control := wire.BuildControlBatch(9, 2, false, 3, 500)
	badCRC := bytes.Clone(plain)
	badCRC[len(badCRC)-1] ^= 0xff
	badCount := bytes.Clone(plain)
	binary.BigEndian.PutUint32(badCount[57:], 2) // record count 2, last offset delta 2
	if view, err := wire.ParseBatch(badCount); err == nil {
		view.UpdateCRC()
	}
	// Replicated batches carry the leader's offsets.
	leader := func(base int64, n int) []byte {
		options := wire.PlainBatchOptions()
		options.BaseOffset = base
		return testBatch(t, options, n)
	}

	type want struct {
		batches, producerBatches int
		records, maxTimestamp    int64
		transactional, control   bool
		start, end               int
		firstOffset, lastOffset  int64
	}
	for _, tc := range []struct {
		name     string
		origin   Origin
		records  []byte
		logEnd   int64
		maxBytes int64
		want     want
		wantErr  error
	}{
		{name: "plain", records: plain,
			want: want{batches: 1, records: 3, maxTimestamp: 102, end: len(plain), lastOffset: 2}},
		{name: "idempotent", records: idempotent,
			want: want{batches: 1, producerBatches: 1, records: 4, maxTimestamp: 103, end: len(idempotent), lastOffset: 3}},
		{name: "transactional", records: transactional,
			want: want{batches: 1, producerBatches: 1, records: 1, maxTimestamp: 100, transactional: true, end: len(transactional)}},
		{name: "compressed", records: compressed,
			want: want{batches: 1, records: 5, maxTimestamp: 104, end: len(compressed), lastOffset: 4}},
		{name: "multiple batches", records: concat(plain, plain2, compressed),
			want: want{batches: 3, records: 10, maxTimestamp: 104, end: len(plain) + len(plain2) + len(compressed), lastOffset: 9}},
		{name: "control from a client", records: control, wantErr: ErrInvalidRecord},
		{name: "empty", records: nil, wantErr: ErrInvalidRecord},
		{name: "too large", records: plain, maxBytes: int64(len(plain)) - 1, wantErr: ErrMessageTooLarge},
		{name: "bad CRC", records: badCRC, wantErr: wire.ErrBatchCRC},
		{name: "record count", records: badCount, wantErr: ErrInvalidRecord},
		{name: "truncated", records: plain[:len(plain)-1], wantErr: wire.ErrBatchTruncated},
		{name: "trailing bytes", records: concat(plain, []byte{0, 0, 0}), wantErr: wire.ErrBatchTruncated},
		{name: "bad magic", records: concat(plain, func() []byte { b := bytes.Clone(plain2); b[16] = 1; return b }()), wantErr: wire.ErrBatchMagic},
		{name: "second batch bad", records: concat(plain, badCRC), wantErr: wire.ErrBatchCRC},

		{name: "coordinator control", origin: OriginCoordinator, records: control,
			want: want{batches: 1, producerBatches: 1, records: 1, maxTimestamp: 500, transactional: true, control: true, end: len(control)}},
		{name: "marker empty", origin: OriginMarker, records: nil, wantErr: wire.ErrBatchTruncated},

		{name: "replica from the log end", origin: OriginReplication, logEnd: 10, records: concat(leader(10, 3), leader(13, 2)),
			want: want{batches: 2, records: 5, maxTimestamp: 102, end: len(leader(10, 3)) + len(leader(13, 2)), firstOffset: 10, lastOffset: 14}},
		{name: "replica refetch and partial tail", origin: OriginReplication, logEnd: 13,
			records: concat(leader(10, 3), leader(13, 2), leader(15, 1)[:20]),
			want:    want{batches: 1, records: 2, maxTimestamp: 101, start: len(leader(10, 3)), end: len(leader(10, 3)) + len(leader(13, 2)), firstOffset: 13, lastOffset: 14}},
		{name: "replica after a compaction gap", origin: OriginReplication, logEnd: 10, records: leader(20, 1),
			want: want{batches: 1, records: 1, maxTimestamp: 100, end: len(leader(20, 1)), firstOffset: 20, lastOffset: 20}},
		{name: "replica nothing new", origin: OriginReplication, logEnd: 13, records: leader(10, 3),
			want: want{maxTimestamp: -1}},
		{name: "replica diverged", origin: OriginReplication, logEnd: 12, records: leader(10, 3), wantErr: ErrDiverged},
		{name: "replica bad CRC", origin: OriginReplication, records: badCRC, wantErr: wire.ErrBatchCRC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			maxBytes := tc.maxBytes
			if maxBytes == 0 {
				maxBytes = 1 << 20
			}
			var scratch [1]BatchInfo
			info, err := Analyze(tc.origin, tc.records, tc.logEnd, maxBytes, scratch[:0])
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := want{batches: len(info.batches), producerBatches: info.producerBatches, records: info.records,
				maxTimestamp: info.maxTimestamp, transactional: info.transactional, control: info.control,
				start: info.start, end: info.end}
			if len(info.batches) > 0 {
				got.firstOffset, got.lastOffset = info.firstOffset(), info.lastOffset()
			}
			if got != tc.want {
				t.Fatalf("info %+v, want %+v", got, tc.want)
			}
			// Every batch's fields are its header's.
			for i := range info.batches {
				b := &info.batches[i]
				v := b.view
				if b.producerID != v.ProducerID() || b.producerEpoch != v.ProducerEpoch() || b.baseSequence != v.BaseSequence() ||
					b.lastSequence() != v.LastSequence() || b.recordCount != v.RecordCount() || b.lastOffsetDelta != v.LastOffsetDelta() ||
					b.maxTimestamp != v.MaxTimestamp() || b.attributes != v.Attributes() || b.partitionLeaderEpoch != v.PartitionLeaderEpoch() {
					t.Fatalf("batch %d: %+v does not match its header", i, b)
				}
			}
		})
	}
}

// TestAnalyzeRecordsProducer: the idempotent batch's producer fields and
// offsets as the producer state gets them, before and after the log
// assigns offsets.
func TestAnalyzeRecordsProducer(t *testing.T) {
	records := testBatch(t, producerOptions(7, 1, 0x7ffffffe, true), 4)
	info, err := Analyze(OriginClient, records, 0, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !info.idempotent() {
		t.Fatal("one batch with a producer id is idempotent")
	}
	info.assignOffsets(40)
	state := info.batches[0].producerBatch()
	if state.ProducerID != 7 || state.ProducerEpoch != 1 || state.BaseSequence != 0x7ffffffe || state.LastSequence != 1 ||
		state.FirstOffset != 40 || state.LastOffset != 43 || state.MaxTimestamp != 103 || !state.Transactional {
		t.Fatalf("producer batch %+v", state)
	}
}

// TestIdempotentMultiBatch: idempotent data in more than one batch is
// refused before the partition is touched.
func TestIdempotentMultiBatch(t *testing.T) {
	records := concat(testBatch(t, producerOptions(7, 0, 0, false), 1), testBatch(t, wire.PlainBatchOptions(), 1))
	info, err := Analyze(OriginClient, records, 0, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.idempotent() || info.producerBatches != 1 {
		t.Fatalf("info %+v", info)
	}
	var p *Partition // not reached
	if _, err := p.AppendClient(records, &info, nil); !errors.Is(err, errIdempotentMultiBatch) {
		t.Fatalf("error %v, want errIdempotentMultiBatch", err)
	}
}

// TestAppendInfoStamps: stamping the leader epoch leaves the CRC valid
// (the field is outside what it covers) and LogAppendTime recomputes it.
func TestAppendInfoStamps(t *testing.T) {
	records := concat(testBatch(t, wire.PlainBatchOptions(), 2), testBatch(t, wire.PlainBatchOptions(), 3))
	info, err := Analyze(OriginClient, records, 0, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	info.stampLeaderEpoch(6)
	info.StampLogAppendTime(12345)
	if info.maxTimestamp != 12345 {
		t.Fatalf("max timestamp %d", info.maxTimestamp)
	}
	again, err := Analyze(OriginClient, records, 0, 1<<20, nil)
	if err != nil {
		t.Fatalf("stamped batches no longer valid: %v", err)
	}
	for i := range again.batches {
		b, stamped := &again.batches[i], &info.batches[i]
		if b.partitionLeaderEpoch != 6 || !b.logAppendTime() || b.maxTimestamp != 12345 ||
			b.partitionLeaderEpoch != stamped.partitionLeaderEpoch || b.attributes != stamped.attributes || b.maxTimestamp != stamped.maxTimestamp {
			t.Fatalf("batch %d after stamping: %+v, info had %+v", i, *b, *stamped)
		}
	}
}
