package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Record batch v2 (magic 2) byte layout, all integers big-endian:
//
//	offset  size  field
//	     0     8  base offset            (patched by the broker on append)
//	     8     4  batch length           (bytes after this field)
//	    12     4  partition leader epoch (patched by the broker on append)
//	    16     1  magic                  (must be 2)
//	    17     4  CRC-32C of bytes [21, end)
//	    21     2  attributes
//	    23     4  last offset delta
//	    27     8  base timestamp
//	    35     8  max timestamp
//	    43     8  producer id
//	    51     2  producer epoch
//	    53     4  base sequence
//	    57     4  record count
//	    61     …  records (possibly compressed)
//
// The CRC starts at attributes, so base offset and partition leader epoch can
// be rewritten in place without recomputing it: that is what lets the broker
// append the producer's bytes unchanged.
const (
	// BatchHeaderSize is the size of the fixed record batch v2 header.
	BatchHeaderSize = 61
	// BatchLengthOverhead is the number of bytes before and including the
	// batch length field that the batch length does not count.
	BatchLengthOverhead = 12

	offsetBaseOffset           = 0
	offsetBatchLength          = 8
	offsetPartitionLeaderEpoch = 12
	offsetMagic                = 16
	offsetCRC                  = 17
	offsetAttributes           = 21
	offsetLastOffsetDelta      = 23
	offsetBaseTimestamp        = 27
	offsetMaxTimestamp         = 35
	offsetProducerID           = 43
	offsetProducerEpoch        = 51
	offsetBaseSequence         = 53
	offsetRecordCount          = 57
)

// Attribute bits of a record batch.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // set: LogAppendTime, clear: CreateTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	// AttrDeleteHorizon (KIP-534): the base timestamp is not the first
	// record's timestamp but the delete horizon the log cleaner set when
	// it first kept a tombstone or a finished transaction's marker of this
	// batch; the records' timestamp deltas are relative to it.
	AttrDeleteHorizon = 0x40
)

// Compression codecs carried in the low three attribute bits.
type Compression int8

// The compression codecs Kafka defines.
const (
	CompressionNone   Compression = 0
	CompressionGzip   Compression = 1
	CompressionSnappy Compression = 2
	CompressionLZ4    Compression = 3
	CompressionZstd   Compression = 4
)

// String names the codec as Kafka's compression.type does.
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", int8(c))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors returned when a record batch is malformed.
var (
	ErrBatchTruncated = errors.New("record batch truncated")
	ErrBatchMagic     = errors.New("record batch magic is not 2")
	ErrBatchCRC       = errors.New("record batch CRC-32C mismatch")
	ErrBatchLength    = errors.New("record batch length invalid")
)

// BatchView is a zero-allocation view over one record batch v2. It does not
// copy: every accessor reads the underlying bytes, and the setters write them.
// A view is valid only while the bytes it wraps are.
type BatchView struct {
	b []byte
}

// ParseBatch returns a view over the first record batch in b after checking
// that the header is complete, the magic is 2 and the batch length fits in b.
// It does not check the CRC; call Validate for that.
func ParseBatch(b []byte) (BatchView, error) {
	if len(b) < BatchHeaderSize {
		return BatchView{}, fmt.Errorf("%w: %d bytes, header needs %d", ErrBatchTruncated, len(b), BatchHeaderSize)
	}
	length := int32(binary.BigEndian.Uint32(b[offsetBatchLength:]))
	if length < BatchHeaderSize-BatchLengthOverhead {
		return BatchView{}, fmt.Errorf("%w: %d", ErrBatchLength, length)
	}
	total := int64(length) + BatchLengthOverhead
	if total > int64(len(b)) {
		return BatchView{}, fmt.Errorf("%w: batch length %d, %d bytes available", ErrBatchTruncated, total, len(b))
	}
	if b[offsetMagic] != 2 {
		return BatchView{}, fmt.Errorf("%w: magic %d", ErrBatchMagic, b[offsetMagic])
	}
	return BatchView{b: b[:total]}, nil
}

// Bytes returns the whole batch.
func (v BatchView) Bytes() []byte { return v.b }

// Size returns the whole batch's size in bytes (batch length + 12).
func (v BatchView) Size() int { return len(v.b) }

// BaseOffset is the offset of the batch's first record.
func (v BatchView) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(v.b[offsetBaseOffset:])) }

// BatchLength is the length field: the size of the batch after that field.
func (v BatchView) BatchLength() int32 {
	return int32(binary.BigEndian.Uint32(v.b[offsetBatchLength:]))
}

// PartitionLeaderEpoch is the leader epoch the partition had when the batch was appended.
func (v BatchView) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(v.b[offsetPartitionLeaderEpoch:]))
}

// Magic is the record format version (2).
func (v BatchView) Magic() int8 { return int8(v.b[offsetMagic]) }

// CRC is the stored CRC-32C.
func (v BatchView) CRC() uint32 { return binary.BigEndian.Uint32(v.b[offsetCRC:]) }

// Attributes is the raw attributes field.
func (v BatchView) Attributes() int16 {
	return int16(binary.BigEndian.Uint16(v.b[offsetAttributes:]))
}

// Compression is the codec of the records section.
func (v BatchView) Compression() Compression {
	return Compression(v.Attributes() & AttrCompressionMask)
}

// LogAppendTime reports whether timestamps are the broker's append time.
func (v BatchView) LogAppendTime() bool { return v.Attributes()&AttrTimestampType != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (v BatchView) Transactional() bool { return v.Attributes()&AttrTransactional != 0 }

// Control reports whether the batch holds a control record (a transaction marker).
func (v BatchView) Control() bool { return v.Attributes()&AttrControl != 0 }

// LastOffsetDelta is the offset of the last record relative to the base offset.
func (v BatchView) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(v.b[offsetLastOffsetDelta:]))
}

// LastOffset is BaseOffset + LastOffsetDelta.
func (v BatchView) LastOffset() int64 { return v.BaseOffset() + int64(v.LastOffsetDelta()) }

// BaseTimestamp is the timestamp the records' deltas count from (ms): the
// first record's timestamp, or the delete horizon (see DeleteHorizon).
func (v BatchView) BaseTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(v.b[offsetBaseTimestamp:]))
}

// DeleteHorizon is the time (ms) after which the log cleaner may remove the
// batch's tombstones, or the batch itself if it is a finished
// transaction's marker; ok is false when the cleaner has not set one.
func (v BatchView) DeleteHorizon() (horizon int64, ok bool) {
	if v.Attributes()&AttrDeleteHorizon == 0 {
		return 0, false
	}
	return v.BaseTimestamp(), true
}

// MaxTimestamp is the largest timestamp in the batch (ms).
func (v BatchView) MaxTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(v.b[offsetMaxTimestamp:]))
}

// ProducerID is the idempotent producer's id, or -1.
func (v BatchView) ProducerID() int64 {
	return int64(binary.BigEndian.Uint64(v.b[offsetProducerID:]))
}

// ProducerEpoch is the producer's epoch, or -1.
func (v BatchView) ProducerEpoch() int16 {
	return int16(binary.BigEndian.Uint16(v.b[offsetProducerEpoch:]))
}

// BaseSequence is the sequence number of the first record, or -1.
func (v BatchView) BaseSequence() int32 {
	return int32(binary.BigEndian.Uint32(v.b[offsetBaseSequence:]))
}

// LastSequence is the sequence of the last record, wrapping at int32 max as Kafka does.
func (v BatchView) LastSequence() int32 {
	base := v.BaseSequence()
	if base < 0 {
		return -1
	}
	last := int64(base) + int64(v.LastOffsetDelta())
	if last > 0x7fffffff {
		last -= 0x80000000
	}
	return int32(last)
}

// RecordCount is the number of records the header claims.
func (v BatchView) RecordCount() int32 {
	return int32(binary.BigEndian.Uint32(v.b[offsetRecordCount:]))
}

// Records returns the (possibly compressed) records section.
func (v BatchView) Records() []byte { return v.b[BatchHeaderSize:] }

// ComputeCRC returns the CRC-32C of the bytes the CRC covers.
func (v BatchView) ComputeCRC() uint32 { return crc32.Checksum(v.b[offsetAttributes:], castagnoli) }

// Validate checks the CRC and header consistency. It reads every byte the CRC
// covers but allocates nothing.
func (v BatchView) Validate() error {
	if got, want := v.ComputeCRC(), v.CRC(); got != want {
		return fmt.Errorf("%w: stored %#08x, computed %#08x", ErrBatchCRC, want, got)
	}
	if v.LastOffsetDelta() < 0 {
		return fmt.Errorf("%w: last offset delta %d", ErrBatchLength, v.LastOffsetDelta())
	}
	if n := v.RecordCount(); n < 0 || (v.Compression() == CompressionNone && int64(n) > int64(len(v.Records()))) {
		return fmt.Errorf("%w: record count %d", ErrBatchLength, n)
	}
	return nil
}

// SetBaseOffset rewrites the base offset in place. The CRC does not cover it.
func (v BatchView) SetBaseOffset(offset int64) {
	binary.BigEndian.PutUint64(v.b[offsetBaseOffset:], uint64(offset))
}

// SetPartitionLeaderEpoch rewrites the partition leader epoch in place. The CRC does not cover it.
func (v BatchView) SetPartitionLeaderEpoch(epoch int32) {
	binary.BigEndian.PutUint32(v.b[offsetPartitionLeaderEpoch:], uint32(epoch))
}

// UpdateCRC recomputes and stores the CRC, for builders and for the broker
// when it rewrites covered fields (e.g. LogAppendTime timestamps).
func (v BatchView) UpdateCRC() {
	binary.BigEndian.PutUint32(v.b[offsetCRC:], v.ComputeCRC())
}

// ErrBatchInvalidForProduce wraps the checks Kafka's log validator applies to
// batches a producer sends, beyond the CRC.
var ErrBatchInvalidForProduce = errors.New("record batch invalid for produce")

// ValidateProduced runs Validate plus the checks Kafka applies to batches
// arriving in a Produce request: record count = last offset delta + 1 (at
// least one record), no control batch (only coordinators write markers),
// and a non-negative base sequence whenever a producer id is set.
func (v BatchView) ValidateProduced() error {
	if err := v.Validate(); err != nil {
		return err
	}
	if count, want := int64(v.RecordCount()), int64(v.LastOffsetDelta())+1; count != want || count < 1 {
		return fmt.Errorf("%w: record count %d, last offset delta %d", ErrBatchInvalidForProduce, count, v.LastOffsetDelta())
	}
	if v.Control() {
		return fmt.Errorf("%w: control batch from a producer", ErrBatchInvalidForProduce)
	}
	if v.ProducerID() >= 0 && v.BaseSequence() < 0 {
		return fmt.Errorf("%w: producer id %d with base sequence %d", ErrBatchInvalidForProduce, v.ProducerID(), v.BaseSequence())
	}
	return nil
}
