package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrEmptyBatch is returned when a batch is built from no records: Kafka
// rejects batches without records.
var ErrEmptyBatch = errors.New("record batch has no records")

// RecordHeader is one record header. A nil Value encodes as null.
type RecordHeader struct {
	Key   []byte
	Value []byte
}

// BuilderRecord is one record to put into a batch. A nil Key or Value
// encodes as null.
type BuilderRecord struct {
	TimestampMillis int64
	Key             []byte
	Value           []byte
	Headers         []RecordHeader
}

// BatchOptions are the header fields of a batch to build. The zero value is a
// non-idempotent, uncompressed batch at base offset 0; set ProducerID,
// ProducerEpoch and BaseSequence to -1 for a plain producer, as clients do.
type BatchOptions struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	Compression          Compression
	Transactional        bool
	Control              bool
	LogAppendTime        bool
}

// PlainBatchOptions returns options for a non-idempotent producer batch:
// producer id, epoch and base sequence -1, partition leader epoch -1.
func PlainBatchOptions() BatchOptions {
	return BatchOptions{PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

// attributes encodes the options as batch attributes.
func (o BatchOptions) attributes() int16 {
	attributes := int16(o.Compression) & AttrCompressionMask
	if o.LogAppendTime {
		attributes |= AttrTimestampType
	}
	if o.Transactional {
		attributes |= AttrTransactional
	}
	if o.Control {
		attributes |= AttrControl
	}
	return attributes
}

// BuildBatch builds a record batch v2 from records. The first record's
// timestamp is the base timestamp; offset deltas are the record indexes.
func BuildBatch(options BatchOptions, records []BuilderRecord) ([]byte, error) {
	return AppendBatch(nil, options, records)
}

// AppendBatch appends a record batch v2 built from records to dst, computing
// the CRC-32C.
func AppendBatch(dst []byte, options BatchOptions, records []BuilderRecord) ([]byte, error) {
	if len(records) == 0 {
		return nil, ErrEmptyBatch
	}
	if len(records) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d records", ErrBatchLength, len(records))
	}
	if options.Compression < CompressionNone || options.Compression > CompressionZstd {
		return nil, fmt.Errorf("%w: %d", ErrUnknownCompression, options.Compression)
	}
	baseTimestamp := records[0].TimestampMillis
	maxTimestamp := baseTimestamp
	for i := range records {
		maxTimestamp = max(maxTimestamp, records[i].TimestampMillis)
	}
	start := len(dst)
	dst = AppendInt64(dst, options.BaseOffset)
	dst = AppendInt32(dst, 0) // batch length, patched below
	dst = AppendInt32(dst, options.PartitionLeaderEpoch)
	dst = append(dst, 2)      // magic
	dst = AppendInt32(dst, 0) // CRC, computed below
	dst = AppendInt16(dst, options.attributes())
	dst = AppendInt32(dst, int32(len(records)-1))
	dst = AppendInt64(dst, baseTimestamp)
	dst = AppendInt64(dst, maxTimestamp)
	dst = AppendInt64(dst, options.ProducerID)
	dst = AppendInt16(dst, options.ProducerEpoch)
	dst = AppendInt32(dst, options.BaseSequence)
	dst = AppendInt32(dst, int32(len(records)))
	if options.Compression == CompressionNone {
		dst = appendRecords(dst, baseTimestamp, records)
	} else {
		compressed, err := Compress(dst, options.Compression, appendRecords(nil, baseTimestamp, records))
		if err != nil {
			return nil, err
		}
		dst = compressed
	}
	batchLength := len(dst) - start - BatchLengthOverhead
	if batchLength > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d bytes", ErrBatchLength, batchLength)
	}
	binary.BigEndian.PutUint32(dst[start+offsetBatchLength:], uint32(batchLength))
	BatchView{b: dst[start:]}.UpdateCRC()
	return dst, nil
}

// appendRecords appends records in the uncompressed record encoding.
func appendRecords(dst []byte, baseTimestamp int64, records []BuilderRecord) []byte {
	for i := range records {
		dst = appendRecord(dst, int32(i), records[i].TimestampMillis-baseTimestamp, &records[i])
	}
	return dst
}

// appendRecord appends one record: its length varint, then the body whose
// size recordBodySize computes exactly, so the record is encoded in one pass.
func appendRecord(dst []byte, offsetDelta int32, timestampDelta int64, record *BuilderRecord) []byte {
	dst = AppendVarint(dst, int32(recordBodySize(offsetDelta, timestampDelta, record)))
	dst = append(dst, 0) // attributes
	dst = AppendVarlong(dst, timestampDelta)
	dst = AppendVarint(dst, offsetDelta)
	dst = appendVarintBytes(dst, record.Key)
	dst = appendVarintBytes(dst, record.Value)
	dst = AppendVarint(dst, int32(len(record.Headers)))
	for _, header := range record.Headers {
		dst = AppendVarint(dst, int32(len(header.Key)))
		dst = append(dst, header.Key...)
		dst = appendVarintBytes(dst, header.Value)
	}
	return dst
}

// recordBodySize is the encoded size of a record after its length field.
func recordBodySize(offsetDelta int32, timestampDelta int64, record *BuilderRecord) int {
	size := 1 + varlongSize(timestampDelta) + varlongSize(int64(offsetDelta)) +
		varintBytesSize(record.Key) + varintBytesSize(record.Value) +
		varlongSize(int64(len(record.Headers)))
	for _, header := range record.Headers {
		size += varlongSize(int64(len(header.Key))) + len(header.Key) + varintBytesSize(header.Value)
	}
	return size
}

// appendVarintBytes appends varint-length bytes; nil is null (-1).
func appendVarintBytes(dst, value []byte) []byte {
	if value == nil {
		return AppendVarint(dst, -1)
	}
	dst = AppendVarint(dst, int32(len(value)))
	return append(dst, value...)
}

func varintBytesSize(value []byte) int {
	if value == nil {
		return 1
	}
	return varlongSize(int64(len(value))) + len(value)
}

// varlongSize is the size of v as a zig-zag varint (32- and 64-bit zig-zag
// agree on values that fit in 32 bits).
func varlongSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	size := 1
	for u >= 0x80 {
		u >>= 7
		size++
	}
	return size
}
