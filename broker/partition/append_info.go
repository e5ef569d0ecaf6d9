package partition

import (
	"encoding/binary"
	"fmt"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/wire"
)

// Origin is who wrote the batches being appended to a partition, as
// Kafka's AppendOrigin: it decides how [Analyze] checks them and
// what [Partition.appendLocked] does differently for them.
type Origin uint8

const (
	// OriginClient: a Produce request's batches. Each is validated
	// (CRC-32C, max.message.bytes, record count, no control batch); an
	// idempotent batch is checked against the producer state; offsets are
	// assigned here and the leader epoch stamped.
	OriginClient Origin = iota
	// OriginReplication: batches a follower fetched from its leader. They
	// keep the leader's offsets and leader epochs; the producer state is
	// replayed from them, as at startup.
	OriginReplication
	// OriginCoordinator: a batch a coordinator built for the internal
	// partition it leads (__consumer_offsets, __transaction_state, its
	// markers included). Offsets assigned, epoch stamped (and required to
	// be the shard's), producer state replayed.
	OriginCoordinator
	// OriginMarker: a COMMIT or ABORT control batch a transaction
	// coordinator asked for (WriteTxnMarkers, or this broker's own
	// coordinator). Checked against the producer state (a stale marker is
	// skipped), offsets assigned, epoch stamped, producer state replayed.
	OriginMarker
)

// String names the origin, for logs and errors.
func (o Origin) String() string {
	switch o {
	case OriginClient:
		return "client"
	case OriginReplication:
		return "replication"
	case OriginCoordinator:
		return "coordinator"
	case OriginMarker:
		return "marker"
	}
	return fmt.Sprintf("origin(%d)", uint8(o))
}

// BatchInfo is what the append path needs of one batch header, read once
// by [Analyze].
type BatchInfo struct {
	view wire.BatchView
	// baseOffset is the batch's first offset: the leader's for
	// OriginReplication; for the other origins relative to the append's
	// first batch until [AppendInfo.assignOffsets] sets the real one.
	baseOffset           int64
	lastOffsetDelta      int32
	partitionLeaderEpoch int32
	producerID           int64
	producerEpoch        int16
	baseSequence         int32
	recordCount          int32
	attributes           int16
	maxTimestamp         int64
}

func newBatchInfo(view wire.BatchView, baseOffset int64) BatchInfo {
	return BatchInfo{
		view:                 view,
		baseOffset:           baseOffset,
		lastOffsetDelta:      view.LastOffsetDelta(),
		partitionLeaderEpoch: view.PartitionLeaderEpoch(),
		producerID:           view.ProducerID(),
		producerEpoch:        view.ProducerEpoch(),
		baseSequence:         view.BaseSequence(),
		recordCount:          view.RecordCount(),
		attributes:           view.Attributes(),
		maxTimestamp:         view.MaxTimestamp(),
	}
}

func (b *BatchInfo) lastOffset() int64   { return b.baseOffset + int64(b.lastOffsetDelta) }
func (b *BatchInfo) transactional() bool { return b.attributes&wire.AttrTransactional != 0 }
func (b *BatchInfo) control() bool       { return b.attributes&wire.AttrControl != 0 }
func (b *BatchInfo) logAppendTime() bool { return b.attributes&wire.AttrTimestampType != 0 }
func (b *BatchInfo) size() int           { return b.view.Size() }
func (b *BatchInfo) compression() wire.Compression {
	return wire.Compression(b.attributes & wire.AttrCompressionMask)
}

// lastSequence is the sequence of the batch's last record, wrapping at
// int32 max as Kafka does (as [wire.BatchView.LastSequence]).
func (b *BatchInfo) lastSequence() int32 {
	if b.baseSequence < 0 {
		return -1
	}
	last := int64(b.baseSequence) + int64(b.lastOffsetDelta)
	if last > 0x7fffffff {
		last -= 0x80000000
	}
	return int32(last)
}

// producerBatch is what the producer state records of the batch, at its
// current offsets.
func (b *BatchInfo) producerBatch() producers.Batch {
	return producers.Batch{
		ProducerID:    b.producerID,
		ProducerEpoch: b.producerEpoch,
		BaseSequence:  b.baseSequence,
		LastSequence:  b.lastSequence(),
		FirstOffset:   b.baseOffset,
		LastOffset:    b.lastOffset(),
		MaxTimestamp:  b.maxTimestamp,
		Transactional: b.transactional(),
	}
}

// AppendInfo is Kafka's LogAppendInfo: what one pass over the batch
// headers of an append ([Analyze]) learned, used by every later
// step instead of walking the headers again.
type AppendInfo struct {
	// batches are the batches to append, in order.
	batches []BatchInfo
	// start and end delimit the bytes to append within the records: all
	// of them but for OriginReplication, which leaves out batches it
	// already has and a trailing partial batch.
	start, end int
	// records is the sum of the batches' record counts (as their headers
	// claim).
	records int64
	// maxTimestamp is the largest batch max timestamp, -1 with no batch.
	maxTimestamp int64
	// transactional and control: some batch has the attribute.
	transactional, control bool
	// producerBatches counts the batches with a producer id.
	producerBatches int
}

// Bytes is the size of the batches appended.
func (info *AppendInfo) Bytes() int { return info.end - info.start }

// BatchCount is the number of batches appended.
func (info *AppendInfo) BatchCount() int { return len(info.batches) }

// RecordCount is the sum of the batches' record counts (as their headers
// claim).
func (info *AppendInfo) RecordCount() int64 { return info.records }

// idempotent reports whether the records are one batch with a producer
// id: the only form in which a client may send idempotent data.
func (info *AppendInfo) idempotent() bool {
	return len(info.batches) == 1 && info.batches[0].producerID >= 0
}

// firstOffset and lastOffset are the offsets of the first and last
// record (relative to the first batch until assignOffsets, but for
// OriginReplication).
func (info *AppendInfo) firstOffset() int64 { return info.batches[0].baseOffset }
func (info *AppendInfo) lastOffset() int64  { return info.batches[len(info.batches)-1].lastOffset() }

// assignOffsets records the offsets the log gave the batches, the first
// at first and each following where the previous ends. storage's Append
// writes the same base offsets into the batch bytes.
func (info *AppendInfo) assignOffsets(first int64) {
	for i := range info.batches {
		b := &info.batches[i]
		b.baseOffset = first
		first = b.lastOffset() + 1
	}
}

// stampLeaderEpoch writes epoch as every batch's partition leader epoch.
// The field lies before the part of a v2 batch the CRC covers (attributes
// onward), so the CRC stays valid.
func (info *AppendInfo) stampLeaderEpoch(epoch int32) {
	for i := range info.batches {
		b := &info.batches[i]
		b.view.SetPartitionLeaderEpoch(epoch)
		b.partitionLeaderEpoch = epoch
	}
}

// Byte offsets in a record batch v2 header of the fields LogAppendTime
// rewrites (see [wire.BatchView]).
const (
	batchAttributesOffset   = 21
	batchMaxTimestampOffset = 35
)

// StampLogAppendTime marks every batch's timestamps as the broker's append
// time, as Kafka does for message.timestamp.type=LogAppendTime: the
// timestamp-type attribute is set and max timestamp becomes now. Both are
// covered by the CRC, so each batch's CRC is recomputed (this is the one
// place the append path rewrites covered bytes).
func (info *AppendInfo) StampLogAppendTime(now int64) {
	for i := range info.batches {
		b := &info.batches[i]
		raw := b.view.Bytes()
		b.attributes |= wire.AttrTimestampType
		binary.BigEndian.PutUint16(raw[batchAttributesOffset:], uint16(b.attributes))
		binary.BigEndian.PutUint64(raw[batchMaxTimestampOffset:], uint64(now))
		b.maxTimestamp = now
		b.view.UpdateCRC()
	}
	if len(info.batches) > 0 {
		info.maxTimestamp = now
	}
}

// Analyze reads the batch headers of an append once, checking them
// as origin requires, into an AppendInfo whose batches are appended to
// scratch (a caller's array keeps a one-batch append off the heap).
//
//   - OriginClient: every batch is complete (trailing bytes that are not
//     a batch are an error), at most maxBatchBytes (ErrMessageTooLarge),
//     passes its CRC-32C and header checks, is not a control batch, and
//     has as many records as its last offset delta says; the first
//     failing check of the first failing batch is the error. No batch at
//     all is ErrInvalidRecord.
//   - OriginReplication: batches ending below logEnd (a refetch) are left
//     out, a trailing partial batch is ignored, and a batch starting below
//     the end of the previous one (logEnd for the first) but ending past
//     it is ErrDiverged; the others must pass their CRC-32C and header
//     checks. No batch past logEnd leaves the info empty.
//   - OriginCoordinator and OriginMarker: the broker built the batches;
//     only their structure is checked (at least one batch).
func Analyze(origin Origin, records []byte, logEnd, maxBatchBytes int64, scratch []BatchInfo) (AppendInfo, error) {
	info := AppendInfo{batches: scratch[:0], start: -1, maxTimestamp: -1}
	switch {
	case len(records) > 0 || origin == OriginReplication:
	case origin == OriginClient:
		return AppendInfo{}, fmt.Errorf("%w: no record batch", ErrInvalidRecord)
	default:
		return AppendInfo{}, fmt.Errorf("%w: no record batch", wire.ErrBatchTruncated)
	}
	next := logEnd // OriginReplication: where the next batch must continue the log
	relative := int64(0)
	for position := 0; position < len(records); {
		view, err := wire.ParseBatch(records[position:])
		if err != nil {
			if origin == OriginReplication {
				break // a partial batch at the end of a fetch response
			}
			return AppendInfo{}, err
		}
		size := view.Size()
		base := relative
		switch origin {
		case OriginClient:
			if err := checkClientBatch(view, maxBatchBytes); err != nil {
				return AppendInfo{}, err
			}
		case OriginReplication:
			if view.LastOffset() < next {
				position += size // already in the log
				continue
			}
			if view.BaseOffset() < next {
				return AppendInfo{}, fmt.Errorf("%w: batch at %d, log end %d", ErrDiverged, view.BaseOffset(), next)
			}
			if err := view.Validate(); err != nil {
				return AppendInfo{}, fmt.Errorf("replica batch at %d: %w", view.BaseOffset(), err)
			}
			base = view.BaseOffset()
		}
		b := newBatchInfo(view, base)
		next = b.lastOffset() + 1
		relative = next
		if info.start < 0 {
			info.start = position
		}
		info.end = position + size
		info.records += int64(b.recordCount)
		info.maxTimestamp = max(info.maxTimestamp, b.maxTimestamp)
		info.transactional = info.transactional || b.transactional()
		info.control = info.control || b.control()
		if b.producerID >= 0 {
			info.producerBatches++
		}
		info.batches = append(info.batches, b)
		position += size
	}
	if info.start < 0 {
		info.start = 0
	}
	return info, nil
}

// checkClientBatch is Analyze' check of one batch from a client.
func checkClientBatch(view wire.BatchView, maxBatchBytes int64) error {
	if int64(view.Size()) > maxBatchBytes {
		return fmt.Errorf("%w: batch of %d bytes, max.message.bytes is %d", ErrMessageTooLarge, view.Size(), maxBatchBytes)
	}
	if err := view.Validate(); err != nil {
		return err
	}
	if view.Control() {
		return fmt.Errorf("%w: clients may not write control batches", ErrInvalidRecord)
	}
	if count := view.RecordCount(); count <= 0 || int64(view.LastOffsetDelta()) != int64(count)-1 {
		return fmt.Errorf("%w: %d records with last offset delta %d", ErrInvalidRecord, count, view.LastOffsetDelta())
	}
	return nil
}
