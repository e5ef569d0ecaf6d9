package broker

import (
	"encoding/binary"
	"fmt"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/wire"
)

// appendOrigin is who wrote the batches being appended to a partition, as
// Kafka's AppendOrigin: it decides how [analyzeRecords] checks them and
// what [partition.appendLocked] does differently for them.
type appendOrigin uint8

const (
	// originClient: a Produce request's batches. Each is validated
	// (CRC-32C, max.message.bytes, record count, no control batch); an
	// idempotent batch is checked against the producer state; offsets are
	// assigned here and the leader epoch stamped.
	originClient appendOrigin = iota
	// originReplication: batches a follower fetched from its leader. They
	// keep the leader's offsets and leader epochs; the producer state is
	// replayed from them, as at startup.
	originReplication
	// originCoordinator: a batch a coordinator built for the internal
	// partition it leads (__consumer_offsets, __transaction_state, its
	// markers included). Offsets assigned, epoch stamped (and required to
	// be the shard's), producer state replayed.
	originCoordinator
	// originMarker: a COMMIT or ABORT control batch a transaction
	// coordinator asked for (WriteTxnMarkers, or this broker's own
	// coordinator). Checked against the producer state (a stale marker is
	// skipped), offsets assigned, epoch stamped, producer state replayed.
	originMarker
)

func (o appendOrigin) String() string {
	switch o {
	case originClient:
		return "client"
	case originReplication:
		return "replication"
	case originCoordinator:
		return "coordinator"
	case originMarker:
		return "marker"
	}
	return fmt.Sprintf("origin(%d)", uint8(o))
}

// batchInfo is what the append path needs of one batch header, read once
// by [analyzeRecords].
type batchInfo struct {
	view wire.BatchView
	// baseOffset is the batch's first offset: the leader's for
	// originReplication; for the other origins relative to the append's
	// first batch until [appendInfo.assignOffsets] sets the real one.
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

func newBatchInfo(view wire.BatchView, baseOffset int64) batchInfo {
	return batchInfo{
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

func (b *batchInfo) lastOffset() int64   { return b.baseOffset + int64(b.lastOffsetDelta) }
func (b *batchInfo) transactional() bool { return b.attributes&wire.AttrTransactional != 0 }
func (b *batchInfo) control() bool       { return b.attributes&wire.AttrControl != 0 }
func (b *batchInfo) logAppendTime() bool { return b.attributes&wire.AttrTimestampType != 0 }
func (b *batchInfo) size() int           { return b.view.Size() }
func (b *batchInfo) compression() wire.Compression {
	return wire.Compression(b.attributes & wire.AttrCompressionMask)
}

// lastSequence is the sequence of the batch's last record, wrapping at
// int32 max as Kafka does (as [wire.BatchView.LastSequence]).
func (b *batchInfo) lastSequence() int32 {
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
func (b *batchInfo) producerBatch() producers.Batch {
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

// appendInfo is Kafka's LogAppendInfo: what one pass over the batch
// headers of an append ([analyzeRecords]) learned, used by every later
// step instead of walking the headers again.
type appendInfo struct {
	// batches are the batches to append, in order.
	batches []batchInfo
	// start and end delimit the bytes to append within the records: all
	// of them but for originReplication, which leaves out batches it
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

// bytes is the size of the batches appended.
func (info *appendInfo) bytes() int { return info.end - info.start }

// idempotent reports whether the records are one batch with a producer
// id: the only form in which a client may send idempotent data.
func (info *appendInfo) idempotent() bool {
	return len(info.batches) == 1 && info.batches[0].producerID >= 0
}

// firstOffset and lastOffset are the offsets of the first and last
// record (relative to the first batch until assignOffsets, but for
// originReplication).
func (info *appendInfo) firstOffset() int64 { return info.batches[0].baseOffset }
func (info *appendInfo) lastOffset() int64  { return info.batches[len(info.batches)-1].lastOffset() }

// assignOffsets records the offsets the log gave the batches, the first
// at first and each following where the previous ends. storage's Append
// writes the same base offsets into the batch bytes.
func (info *appendInfo) assignOffsets(first int64) {
	for i := range info.batches {
		b := &info.batches[i]
		b.baseOffset = first
		first = b.lastOffset() + 1
	}
}

// stampLeaderEpoch writes epoch as every batch's partition leader epoch.
// The field lies before the part of a v2 batch the CRC covers (attributes
// onward), so the CRC stays valid.
func (info *appendInfo) stampLeaderEpoch(epoch int32) {
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

// stampLogAppendTime marks every batch's timestamps as the broker's append
// time, as Kafka does for message.timestamp.type=LogAppendTime: the
// timestamp-type attribute is set and max timestamp becomes now. Both are
// covered by the CRC, so each batch's CRC is recomputed (this is the one
// place the append path rewrites covered bytes).
func (info *appendInfo) stampLogAppendTime(now int64) {
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

// analyzeRecords reads the batch headers of an append once, checking them
// as origin requires, into an appendInfo whose batches are appended to
// scratch (a caller's array keeps a one-batch append off the heap).
//
//   - originClient: every batch is complete (trailing bytes that are not
//     a batch are an error), at most maxBatchBytes (errMessageTooLarge),
//     passes its CRC-32C and header checks, is not a control batch, and
//     has as many records as its last offset delta says; the first
//     failing check of the first failing batch is the error. No batch at
//     all is errInvalidRecord.
//   - originReplication: batches ending below logEnd (a refetch) are left
//     out, a trailing partial batch is ignored, and a batch starting below
//     the end of the previous one (logEnd for the first) but ending past
//     it is errDiverged; the others must pass their CRC-32C and header
//     checks. No batch past logEnd leaves the info empty.
//   - originCoordinator and originMarker: the broker built the batches;
//     only their structure is checked (at least one batch).
func analyzeRecords(origin appendOrigin, records []byte, logEnd, maxBatchBytes int64, scratch []batchInfo) (appendInfo, error) {
	info := appendInfo{batches: scratch[:0], start: -1, maxTimestamp: -1}
	switch {
	case len(records) > 0 || origin == originReplication:
	case origin == originClient:
		return appendInfo{}, fmt.Errorf("%w: no record batch", errInvalidRecord)
	default:
		return appendInfo{}, fmt.Errorf("%w: no record batch", wire.ErrBatchTruncated)
	}
	next := logEnd // originReplication: where the next batch must continue the log
	relative := int64(0)
	for position := 0; position < len(records); {
		view, err := wire.ParseBatch(records[position:])
		if err != nil {
			if origin == originReplication {
				break // a partial batch at the end of a fetch response
			}
			return appendInfo{}, err
		}
		size := view.Size()
		base := relative
		switch origin {
		case originClient:
			if err := checkClientBatch(view, maxBatchBytes); err != nil {
				return appendInfo{}, err
			}
		case originReplication:
			if view.LastOffset() < next {
				position += size // already in the log
				continue
			}
			if view.BaseOffset() < next {
				return appendInfo{}, fmt.Errorf("%w: batch at %d, log end %d", errDiverged, view.BaseOffset(), next)
			}
			if err := view.Validate(); err != nil {
				return appendInfo{}, fmt.Errorf("replica batch at %d: %w", view.BaseOffset(), err)
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

// checkClientBatch is analyzeRecords' check of one batch from a client.
func checkClientBatch(view wire.BatchView, maxBatchBytes int64) error {
	if int64(view.Size()) > maxBatchBytes {
		return fmt.Errorf("%w: batch of %d bytes, max.message.bytes is %d", errMessageTooLarge, view.Size(), maxBatchBytes)
	}
	if err := view.Validate(); err != nil {
		return err
	}
	if view.Control() {
		return fmt.Errorf("%w: clients may not write control batches", errInvalidRecord)
	}
	if count := view.RecordCount(); count <= 0 || int64(view.LastOffsetDelta()) != int64(count)-1 {
		return fmt.Errorf("%w: %d records with last offset delta %d", errInvalidRecord, count, view.LastOffsetDelta())
	}
	return nil
}
