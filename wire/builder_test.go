package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// builderRecords converts the oracle sample to builder input.
func builderRecords(base int64) []BuilderRecord {
	var out []BuilderRecord
	for _, rec := range sampleRecords() {
		var headers []RecordHeader
		for _, h := range rec.headers {
			headers = append(headers, RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		out = append(out, BuilderRecord{TimestampMillis: base + rec.timestampDelta, Key: rec.key, Value: rec.value, Headers: headers})
	}
	return out
}

// The builder's uncompressed output is byte-identical to kmsg's encoding.
func TestBuilderMatchesKmsgBytes(t *testing.T) {
	built, err := BuildBatch(BatchOptions{
		PartitionLeaderEpoch: -1, ProducerID: 42, ProducerEpoch: 3, BaseSequence: 100,
	}, builderRecords(1_700_000_000_000))
	if err != nil {
		t.Fatal(err)
	}
	if want := sampleBatch(); !bytes.Equal(built, want) {
		t.Fatalf("builder bytes differ from kmsg's:\n wire %x\n kmsg %x", built, want)
	}
}

// fetchWithKgo decodes batches with franz-go's consumer path.
func fetchWithKgo(t *testing.T, batches []byte) []*kgo.Record {
	t.Helper()
	partition := &kmsg.FetchResponseTopicPartition{Partition: 0, HighWatermark: 1 << 50, LastStableOffset: 1 << 50, RecordBatches: batches}
	fetched, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{KeepControlRecords: true, Topic: "t"}, partition, kgo.DefaultDecompressor(), nil)
	if fetched.Err != nil {
		t.Fatalf("kgo: %v", fetched.Err)
	}
	return fetched.Records
}

// What the builder writes with every codec, franz-go reads back exactly,
// and so does wire's own iterator.
func TestBuilderEveryCodecReadByKgo(t *testing.T) {
	const base = 1_700_000_000_000
	input := builderRecords(base)
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			options := BatchOptions{BaseOffset: 500, PartitionLeaderEpoch: 4, ProducerID: 7, ProducerEpoch: 1,
				BaseSequence: 0, Compression: codec, Transactional: true}
			batch, err := BuildBatch(options, input)
			if err != nil {
				t.Fatal(err)
			}
			view, err := ParseBatch(batch)
			if err != nil || view.Validate() != nil || view.Compression() != codec || !view.Transactional() ||
				view.RecordCount() != int32(len(input)) || view.LastOffsetDelta() != int32(len(input)-1) {
				t.Fatalf("header: %v / %v / %+v", err, view.Validate(), view)
			}
			records := fetchWithKgo(t, batch)
			if len(records) != len(input) {
				t.Fatalf("kgo read %d records, want %d", len(records), len(input))
			}
			for i, got := range records {
				want := input[i]
				if got.Offset != 500+int64(i) || got.Timestamp.UnixMilli() != want.TimestampMillis ||
					!sameBytes(got.Key, want.Key) || !sameBytes(got.Value, want.Value) ||
					got.ProducerID != 7 || got.ProducerEpoch != 1 || got.LeaderEpoch != 4 ||
					!got.Attrs.IsTransactional() || got.Attrs.IsControl() || len(got.Headers) != len(want.Headers) {
					t.Fatalf("record %d: kgo read %+v, want %+v", i, got, want)
				}
				for h, header := range got.Headers {
					if header.Key != string(want.Headers[h].Key) || !sameBytes(header.Value, want.Headers[h].Value) {
						t.Fatalf("record %d header %d: %+v", i, h, header)
					}
				}
			}
			checkRecords(t, batch, sampleRecords())
		})
	}
}

func TestBuilderRejects(t *testing.T) {
	if _, err := BuildBatch(PlainBatchOptions(), nil); !errors.Is(err, ErrEmptyBatch) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := BuildBatch(BatchOptions{Compression: 6}, []BuilderRecord{{}}); !errors.Is(err, ErrUnknownCompression) {
		t.Fatalf("codec 6: %v", err)
	}
}

func TestVarlongSize(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, -65, 1 << 20, -(1 << 20), 1<<62 + 5, -1 << 63, 1<<63 - 1} {
		if got, want := varlongSize(v), len(AppendVarlong(nil, v)); got != want {
			t.Errorf("varlongSize(%d) = %d, want %d", v, got, want)
		}
	}
}

func TestControlBatch(t *testing.T) {
	for _, commit := range []bool{true, false} {
		batch := BuildControlBatch(99, 5, commit, 12, 1_700_000_000_123)
		view, err := ParseBatch(batch)
		if err != nil || view.Validate() != nil || !view.Control() || !view.Transactional() ||
			view.ProducerID() != 99 || view.ProducerEpoch() != 5 || view.BaseSequence() != -1 ||
			view.BaseOffset() != 0 || view.RecordCount() != 1 || view.MaxTimestamp() != 1_700_000_000_123 {
			t.Fatalf("control batch header: %v", err)
		}
		records := fetchWithKgo(t, batch)
		if len(records) != 1 || !records[0].Attrs.IsControl() {
			t.Fatalf("kgo read %d records", len(records))
		}
		var key kmsg.ControlRecordKey
		var marker kmsg.EndTxnMarker
		if err := key.ReadFrom(records[0].Key); err != nil {
			t.Fatal(err)
		}
		if err := marker.ReadFrom(records[0].Value); err != nil {
			t.Fatal(err)
		}
		wantType := kmsg.ControlRecordKeyType(0)
		if commit {
			wantType = 1
		}
		if key.Type != wantType || key.Version != 0 || marker.CoordinatorEpoch != 12 || marker.Version != 0 {
			t.Fatalf("kmsg read key %+v marker %+v", key, marker)
		}
		control, err := ParseControlRecord(records[0].Key, records[0].Value)
		if err != nil || (control.Type == ControlCommit) != commit || control.CoordinatorEpoch != 12 || !control.IsTransactionMarker() {
			t.Fatalf("wire read %+v, %v", control, err)
		}
		// Without KeepControlRecords a kgo consumer never delivers the marker.
		partition := &kmsg.FetchResponseTopicPartition{HighWatermark: 1, LastStableOffset: 1, RecordBatches: batch}
		fetched, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{}, partition, kgo.DefaultDecompressor(), nil)
		if len(fetched.Records) != 0 {
			t.Fatalf("marker delivered as data")
		}
	}
}

func TestParseControlRecordRejects(t *testing.T) {
	cases := []struct {
		name       string
		key, value []byte
		ok         bool
	}{
		{"short key", []byte{0, 0, 0}, nil, false},
		{"negative key version", []byte{0xff, 0xff, 0, 1}, []byte{0, 0, 0, 0, 0, 1}, false},
		{"commit short value", []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0}, false},
		{"negative value version", []byte{0, 0, 0, 0}, []byte{0x80, 0, 0, 0, 0, 1}, false},
		{"leader change needs no value", []byte{0, 0, 0, 2}, nil, true},
		{"newer version with extra bytes", []byte{0, 1, 0, 1, 9}, []byte{0, 1, 0, 0, 0, 7, 9}, true},
	}
	for _, tc := range cases {
		_, err := ParseControlRecord(tc.key, tc.value)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrControlRecordMalformed)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if ControlCommit.String() != "COMMIT" || ControlType(2).String() != "CONTROL(2)" {
		t.Errorf("names: %s %s", ControlCommit, ControlType(2))
	}
}

func TestValidateProduced(t *testing.T) {
	good, _ := BuildBatch(BatchOptions{ProducerID: 5, ProducerEpoch: 0, BaseSequence: 0}, builderRecords(0))
	plain, _ := BuildBatch(PlainBatchOptions(), builderRecords(0))
	noSequence, _ := BuildBatch(BatchOptions{ProducerID: 5, BaseSequence: -1}, builderRecords(0))
	miscounted := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(miscounted[offsetLastOffsetDelta:], 9)
	view, _ := ParseBatch(miscounted)
	view.UpdateCRC()
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 1
	cases := []struct {
		name  string
		batch []byte
		want  error
	}{
		{"idempotent", good, nil},
		{"plain", plain, nil},
		{"control", BuildControlBatch(1, 0, true, 0, 0), ErrBatchInvalidForProduce},
		{"producer id without sequence", noSequence, ErrBatchInvalidForProduce},
		{"count mismatch", miscounted, ErrBatchInvalidForProduce},
		{"crc", corrupt, ErrBatchCRC},
	}
	for _, tc := range cases {
		view, err := ParseBatch(tc.batch)
		if err != nil {
			t.Fatal(err)
		}
		if err := view.ValidateProduced(); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
