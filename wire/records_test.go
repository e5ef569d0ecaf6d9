package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var allCodecs = []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}

// kgoCompress compresses src with franz-go's own compressor for codec.
func kgoCompress(t testing.TB, codec Compression, src []byte) []byte {
	t.Helper()
	codecs := map[Compression]kgo.CompressionCodec{
		CompressionGzip:   kgo.GzipCompression(),
		CompressionSnappy: kgo.SnappyCompression(),
		CompressionLZ4:    kgo.Lz4Compression(),
		CompressionZstd:   kgo.ZstdCompression(),
	}
	compressor, err := kgo.DefaultCompressor(codecs[codec])
	if err != nil {
		t.Fatal(err)
	}
	var buffer bytes.Buffer
	out, used := compressor.Compress(&buffer, src)
	if int8(used) != int8(codec) {
		t.Fatalf("kgo compressed with codec %d, want %s", used, codec)
	}
	return append([]byte(nil), out...)
}

// collectRecords iterates a batch (decompressing if needed) and checks it
// against the oracle records.
func checkRecords(t *testing.T, batch []byte, want []oracleRecord) {
	t.Helper()
	view, err := ParseBatch(batch)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := view.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	var decompressor Decompressor
	it, err := decompressor.Records(view)
	if err != nil {
		t.Fatalf("records: %v", err)
	}
	index := 0
	for ; it.Next(); index++ {
		if index >= len(want) {
			t.Fatalf("more than %d records", len(want))
		}
		checkRecord(t, view, it.Record(), index, want[index])
	}
	if it.Err() != nil || index != len(want) {
		t.Fatalf("iterated %d of %d records: %v", index, len(want), it.Err())
	}
}

func checkRecord(t *testing.T, view BatchView, got *Record, index int, want oracleRecord) {
	t.Helper()
	if got.Offset != view.BaseOffset()+int64(index) || got.OffsetDelta != int32(index) {
		t.Errorf("record %d: offset %d delta %d", index, got.Offset, got.OffsetDelta)
	}
	if got.Timestamp != view.BaseTimestamp()+want.timestampDelta || got.TimestampDelta != want.timestampDelta {
		t.Errorf("record %d: timestamp %d, want base+%d", index, got.Timestamp, want.timestampDelta)
	}
	if !sameBytes(got.Key, want.key) || !sameBytes(got.Value, want.value) {
		t.Errorf("record %d: key %q value %q, want %q %q", index, got.Key, got.Value, want.key, want.value)
	}
	if got.HeaderCount() != len(want.headers) {
		t.Fatalf("record %d: %d headers, want %d", index, got.HeaderCount(), len(want.headers))
	}
	headers := got.Headers()
	for h := 0; headers.Next(); h++ {
		key, value := headers.Header()
		if string(key) != want.headers[h].Key || !sameBytes(value, want.headers[h].Value) {
			t.Errorf("record %d header %d: %q=%q, want %q=%q", index, h, key, value, want.headers[h].Key, want.headers[h].Value)
		}
	}
}

// sameBytes compares contents and null-ness.
func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }

// TestRecordsFromKmsgEveryCodec builds batches with kmsg records, compressed
// by franz-go's compressor, and iterates them with wire.
func TestRecordsFromKmsgEveryCodec(t *testing.T) {
	records := sampleRecords()
	raw := kmsgRecords(records)
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			section := raw
			if codec != CompressionNone {
				section = kgoCompress(t, codec, raw)
			}
			batch := kmsgBatch(kmsg.RecordBatch{
				FirstOffset:     1000,
				Attributes:      int16(codec),
				LastOffsetDelta: int32(len(records) - 1),
				FirstTimestamp:  1_700_000_000_000,
				ProducerID:      -1, ProducerEpoch: -1, FirstSequence: -1,
			}, len(records), section)
			checkRecords(t, batch, records)
		})
	}
	// Raw (unframed) snappy, as librdkafka and sarama write it.
	batch := kmsgBatch(kmsg.RecordBatch{Attributes: int16(CompressionSnappy), LastOffsetDelta: int32(len(records) - 1)},
		len(records), s2.EncodeSnappy(nil, raw))
	checkRecords(t, batch, records)
}

func TestUncompressedIteratorRefusesCompressed(t *testing.T) {
	batch, err := BuildBatch(BatchOptions{Compression: CompressionZstd}, []BuilderRecord{{Value: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	view, _ := ParseBatch(batch)
	if _, err := view.RecordIterator(); !errors.Is(err, ErrCompressed) {
		t.Fatalf("got %v, want ErrCompressed", err)
	}
}

func TestLogAppendTimeUsesMaxTimestamp(t *testing.T) {
	options := PlainBatchOptions()
	options.LogAppendTime = true
	batch, err := BuildBatch(options, []BuilderRecord{{TimestampMillis: 10}, {TimestampMillis: 30}, {TimestampMillis: 20}})
	if err != nil {
		t.Fatal(err)
	}
	view, _ := ParseBatch(batch)
	it, err := view.RecordIterator()
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		if it.Record().Timestamp != 30 {
			t.Fatalf("record %d timestamp %d, want max 30", it.Record().OffsetDelta, it.Record().Timestamp)
		}
	}
	if it.Err() != nil || view.MaxTimestamp() != 30 || !view.LogAppendTime() {
		t.Fatalf("err %v, max %d", it.Err(), view.MaxTimestamp())
	}
}

// TestBatchTruncationAndCorruption cuts a batch at every length and flips
// every CRC-covered byte: each must be rejected with an error, never a panic.
func TestBatchTruncationAndCorruption(t *testing.T) {
	batch := sampleBatch()
	for n := 0; n < len(batch); n++ {
		if _, err := ParseBatch(batch[:n]); !errors.Is(err, ErrBatchTruncated) {
			t.Fatalf("prefix %d/%d: %v", n, len(batch), err)
		}
	}
	for i := offsetAttributes; i < len(batch); i++ {
		corrupt := append([]byte(nil), batch...)
		corrupt[i] ^= 0x40
		view, err := ParseBatch(corrupt)
		if err != nil {
			t.Fatalf("byte %d: parse %v", i, err)
		}
		if err := view.Validate(); !errors.Is(err, ErrBatchCRC) {
			t.Fatalf("byte %d flipped: validate %v", i, err)
		}
	}
	// Base offset and leader epoch are outside the CRC: patching keeps it valid.
	view, _ := ParseBatch(append([]byte(nil), batch...))
	view.SetBaseOffset(1 << 40)
	view.SetPartitionLeaderEpoch(9)
	if err := view.Validate(); err != nil || view.BaseOffset() != 1<<40 || view.PartitionLeaderEpoch() != 9 {
		t.Fatalf("patched batch: %v", err)
	}
	badMagic := append([]byte(nil), batch...)
	badMagic[offsetMagic] = 1
	if _, err := ParseBatch(badMagic); !errors.Is(err, ErrBatchMagic) {
		t.Fatalf("magic 1: %v", err)
	}
}

// TestRecordSectionTruncation cuts the records section at every length and
// re-seals the batch with a valid CRC and length, so only the record
// iterator can notice: it must report ErrRecordMalformed.
func TestRecordSectionTruncation(t *testing.T) {
	full := sampleBatch()
	records := full[BatchHeaderSize:]
	for n := 0; n < len(records); n++ {
		cut := append(append([]byte(nil), full[:BatchHeaderSize]...), records[:n]...)
		binary.BigEndian.PutUint32(cut[offsetBatchLength:], uint32(len(cut)-BatchLengthOverhead))
		view, err := ParseBatch(cut)
		if err != nil {
			t.Fatalf("cut %d: parse %v", n, err)
		}
		view.UpdateCRC()
		it, err := view.RecordIterator()
		if err != nil {
			t.Fatalf("cut %d: %v", n, err)
		}
		for it.Next() {
		}
		if !errors.Is(it.Err(), ErrRecordMalformed) {
			t.Fatalf("records cut at %d/%d: %v", n, len(records), it.Err())
		}
	}
	// Extra bytes after the last record are malformed too.
	extra := append(append([]byte(nil), full...), 0)
	binary.BigEndian.PutUint32(extra[offsetBatchLength:], uint32(len(extra)-BatchLengthOverhead))
	view, _ := ParseBatch(extra)
	it, _ := view.RecordIterator()
	for it.Next() {
	}
	if !errors.Is(it.Err(), ErrRecordMalformed) {
		t.Fatalf("trailing byte: %v", it.Err())
	}
}

func TestRecordIteratorRejectsBadFields(t *testing.T) {
	cases := []struct {
		name string
		body []byte // record body after the length varint
	}{
		{"key length -2", []byte{0, 0, 0, 3}},
		{"value length -5", []byte{0, 0, 0, 1, 9}},
		{"negative header count", []byte{0, 0, 0, 1, 1, 1}},
		{"header count beyond bytes", []byte{0, 0, 0, 1, 1, 20}},
		{"null header key", []byte{0, 0, 0, 1, 1, 2, 1, 1}},
		{"header value cut", []byte{0, 0, 0, 1, 1, 2, 0, 8}},
		{"bytes after headers", []byte{0, 0, 0, 1, 1, 0, 7}},
	}
	for _, tc := range cases {
		section := AppendVarint(nil, int32(len(tc.body)))
		section = append(section, tc.body...)
		it := NewRecordIterator(section, 1, 0, 0)
		if it.Next() || !errors.Is(it.Err(), ErrRecordMalformed) {
			t.Errorf("%s: err %v", tc.name, it.Err())
		}
	}
	for _, section := range [][]byte{{1}, {3, 0}, {0x80, 0x80, 0x80, 0x80, 0x80, 1}} {
		it := NewRecordIterator(section, 1, 0, 0)
		if it.Next() || !errors.Is(it.Err(), ErrRecordMalformed) {
			t.Errorf("section %x: err %v", section, it.Err())
		}
	}
	if it := NewRecordIterator(nil, -1, 0, 0); it.Next() || it.Err() == nil {
		t.Errorf("negative count accepted")
	}
}

// TestDecompressionBound makes every codec decompress past the limit: the
// result is ErrDecompressedTooLarge, while the exact limit is accepted.
func TestDecompressionBound(t *testing.T) {
	plain := make([]byte, 4<<20)
	for _, codec := range allCodecs[1:] {
		t.Run(codec.String(), func(t *testing.T) {
			compressed, err := Compress(nil, codec, plain)
			if err != nil {
				t.Fatal(err)
			}
			small := Decompressor{MaxSize: 1 << 20}
			if _, err := small.Decompress(codec, compressed); !errors.Is(err, ErrDecompressedTooLarge) {
				t.Fatalf("4 MiB into a 1 MiB limit: %v", err)
			}
			exact := Decompressor{MaxSize: len(plain)}
			out, err := exact.Decompress(codec, compressed)
			if err != nil || !bytes.Equal(out, plain) {
				t.Fatalf("exact limit: %d bytes, %v", len(out), err)
			}
			// Reuse after an error and after a success.
			out, err = small.Decompress(codec, kgoCompress(t, codec, []byte("hello")))
			if err != nil || string(out) != "hello" {
				t.Fatalf("reuse: %q %v", out, err)
			}
			if _, err := small.Decompress(codec, compressed[:len(compressed)/2]); err == nil {
				t.Fatalf("half a stream accepted")
			}
		})
	}
	var d Decompressor
	if _, err := d.Decompress(Compression(5), []byte{1}); !errors.Is(err, ErrUnknownCompression) {
		t.Fatalf("codec 5: %v", err)
	}
	for _, bad := range [][]byte{
		append(xerialMagic[:], 0, 0, 0, 1, 0, 0, 0, 1, 0, 0),
		append(xerialMagic[:], 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9, 1),
	} {
		if _, err := d.Decompress(CompressionSnappy, bad); !errors.Is(err, ErrXerialMalformed) {
			t.Fatalf("xerial %x: %v", bad, err)
		}
	}
}

// TestCompressInterop: what wire compresses, kgo decompresses and back.
func TestCompressInterop(t *testing.T) {
	plain := bytes.Repeat([]byte("exactly once, "), 10_000) // > one xerial block
	decompressor := kgo.DefaultDecompressor()
	for _, codec := range allCodecs[1:] {
		compressed, err := Compress([]byte("prefix"), codec, plain)
		if err != nil || !bytes.HasPrefix(compressed, []byte("prefix")) {
			t.Fatalf("%s: %v", codec, err)
		}
		out, err := decompressor.Decompress(compressed[len("prefix"):], kgo.CompressionCodecType(codec))
		if err != nil || !bytes.Equal(out, plain) {
			t.Fatalf("%s: kgo decompressed %d bytes: %v", codec, len(out), err)
		}
		var d Decompressor
		out, err = d.Decompress(codec, kgoCompress(t, codec, plain))
		if err != nil || !bytes.Equal(out, plain) {
			t.Fatalf("%s: wire decompressed %d bytes of kgo's: %v", codec, len(out), err)
		}
	}
}

func ExampleDecompressor_Records() {
	batch, _ := BuildBatch(BatchOptions{Compression: CompressionLZ4}, []BuilderRecord{
		{Key: []byte("k"), Value: []byte("v1")},
		{Key: nil, Value: []byte("v2")},
	})
	view, _ := ParseBatch(batch)
	var decompressor Decompressor
	it, _ := decompressor.Records(view)
	for it.Next() {
		record := it.Record()
		fmt.Printf("%d %q %q\n", record.Offset, record.Key, record.Value)
	}
	// Output:
	// 0 "k" "v1"
	// 1 "" "v2"
}
