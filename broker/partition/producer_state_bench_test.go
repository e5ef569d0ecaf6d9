package partition

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

// batchBaseSequenceOffset is the byte offset of the base sequence in a
// record batch v2 header (see wire/batch.go).
const batchBaseSequenceOffset = 53

// BenchmarkAppendProduced is one partition's work for a Produce of one
// 1 KiB batch (the check, the append to the log, the state update), plain
// and idempotent: the difference in allocs/op is what the producer-state
// check adds to the produce path.
//
//	go test ./broker/partition/ -run '^$' -bench AppendProduced -benchmem
func BenchmarkAppendProduced(b *testing.B) {
	for _, mode := range []struct {
		name       string
		producerID int64
	}{{"plain", -1}, {"idempotent", 7}} {
		b.Run(mode.name, func(b *testing.B) {
			p := openTestPartition(b, b.TempDir(), 0)
			options := wire.PlainBatchOptions()
			if mode.producerID >= 0 {
				options.ProducerID, options.ProducerEpoch, options.BaseSequence = mode.producerID, 0, 0
			}
			// A current timestamp: segment.ms counts from the first batch's
			// timestamp, so an old one would roll a segment per append.
			record := wire.BuilderRecord{TimestampMillis: time.Now().UnixMilli(), Value: make([]byte, 1024)}
			batch, err := wire.BuildBatch(options, []wire.BuilderRecord{record})
			if err != nil {
				b.Fatal(err)
			}
			view, err := wire.ParseBatch(batch)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if mode.producerID >= 0 {
					binary.BigEndian.PutUint32(batch[batchBaseSequenceOffset:], uint32(i))
				}
				view.UpdateCRC() // both modes pay for it alike
				result, err := p.AppendProduced(batch, nil)
				if err != nil || result.Duplicate || result.FirstOffset != int64(i) {
					b.Fatalf("append %d: %+v %v", i, result, err)
				}
			}
		})
	}
}
