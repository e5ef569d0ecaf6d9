package wire

import (
	"fmt"
	"testing"
)

// benchBatch builds an uncompressed batch of about size bytes of records
// with valueSize-byte values.
func benchBatch(b *testing.B, size, valueSize int) []byte {
	b.Helper()
	value := make([]byte, valueSize)
	var records []BuilderRecord
	for total := 0; total < size-BatchHeaderSize-valueSize-16; total += valueSize + 16 {
		records = append(records, BuilderRecord{TimestampMillis: 1_700_000_000_000 + int64(len(records)),
			Key: []byte(fmt.Sprintf("k%05d", len(records))), Value: value})
	}
	options := PlainBatchOptions()
	batch, err := BuildBatch(options, records)
	if err != nil {
		b.Fatal(err)
	}
	if len(batch) > size || len(batch) < size*15/16 {
		b.Fatalf("batch of %d bytes, want about %d", len(batch), size)
	}
	return batch
}

// BenchmarkBatchViewValidateIterate: parse, CRC-validate and iterate every
// record of a 16 KiB uncompressed batch of 100-byte values. 0 allocs/op.
func BenchmarkBatchViewValidateIterate(b *testing.B) {
	batch := benchBatch(b, 16<<10, 100)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		view, err := ParseBatch(batch)
		if err != nil {
			b.Fatal(err)
		}
		if err := view.Validate(); err != nil {
			b.Fatal(err)
		}
		it, err := view.RecordIterator()
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		for it.Next() {
			count += len(it.Record().Value)
		}
		if it.Err() != nil || count == 0 {
			b.Fatal(it.Err())
		}
	}
}

// BenchmarkProduceWalk walks a v12 Produce request of 4 topics × 8
// partitions, each with one 16 KiB batch, validating every batch's CRC as
// the broker does (no record iteration).
func BenchmarkProduceWalk(b *testing.B) {
	batch := benchBatch(b, 16<<10, 100)
	body := AppendCompactNullableString(nil, nil) // null transactional id
	body = AppendInt16(body, -1)
	body = AppendInt32(body, 30_000)
	body = AppendUvarint(body, 4+1)
	for topic := 0; topic < 4; topic++ {
		body = AppendCompactString(body, fmt.Sprintf("topic-%d", topic))
		body = AppendUvarint(body, 8+1)
		for partition := int32(0); partition < 8; partition++ {
			body = AppendInt32(body, partition)
			body = AppendCompactNullableString(body, batch)
			body = AppendUvarint(body, 0)
		}
		body = AppendUvarint(body, 0)
	}
	body = AppendUvarint(body, 0)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		request, err := ParseProduceRequest(body, 12)
		if err != nil {
			b.Fatal(err)
		}
		batches := 0
		topics := request.Topics()
		for topics.Next() {
			_, _, partitions := topics.Topic()
			for partitions.Next() {
				_, records := partitions.Partition()
				it := NewBatchIterator(records)
				for it.Next() {
					if err := it.Batch().Validate(); err != nil {
						b.Fatal(err)
					}
					batches++
				}
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
			}
		}
		if topics.Err() != nil || batches != 32 {
			b.Fatal(topics.Err(), batches)
		}
	}
}

// BenchmarkDecompressIterate decompresses and iterates a 16 KiB batch per codec.
func BenchmarkDecompressIterate(b *testing.B) {
	plain := benchBatch(b, 16<<10, 100)
	view, _ := ParseBatch(plain)
	var records []BuilderRecord
	it, _ := view.RecordIterator()
	for it.Next() {
		r := it.Record()
		records = append(records, BuilderRecord{TimestampMillis: r.Timestamp, Key: r.Key, Value: r.Value})
	}
	for _, codec := range allCodecs[1:] {
		b.Run(codec.String(), func(b *testing.B) {
			batch, err := BuildBatch(BatchOptions{Compression: codec}, records)
			if err != nil {
				b.Fatal(err)
			}
			compressed, _ := ParseBatch(batch)
			var decompressor Decompressor
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			for b.Loop() {
				it, err := decompressor.Records(compressed)
				if err != nil {
					b.Fatal(err)
				}
				for it.Next() {
				}
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
			}
		})
	}
}
