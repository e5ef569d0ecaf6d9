package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrControlRecordMalformed means a control record's key or value is invalid.
var ErrControlRecordMalformed = errors.New("malformed control record")

// ControlType is the type carried in a control record's key.
type ControlType int16

// Control record types. Only ABORT and COMMIT (transaction markers) have a
// value this package decodes; the others are Kafka's KRaft metadata records.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// String names the control type as Kafka does.
func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("CONTROL(%d)", int16(t))
}

// ControlRecord is a decoded control record. For transaction markers the key
// and value are fixed-size big-endian structures (not varints):
//
//	key:   version int16 (0), type int16 (0 = ABORT, 1 = COMMIT)
//	value: version int16 (0), coordinator epoch int32
type ControlRecord struct {
	KeyVersion       int16
	Type             ControlType
	ValueVersion     int16 // set for ABORT and COMMIT only
	CoordinatorEpoch int32 // set for ABORT and COMMIT only
}

// IsTransactionMarker reports whether the record is a COMMIT or ABORT marker.
func (c ControlRecord) IsTransactionMarker() bool {
	return c.Type == ControlAbort || c.Type == ControlCommit
}

// ParseControlRecord decodes a control record's key and, for transaction
// markers, its value. Extra trailing bytes are allowed, as newer versions
// may append fields.
func ParseControlRecord(key, value []byte) (ControlRecord, error) {
	var c ControlRecord
	if len(key) < 4 {
		return c, fmt.Errorf("%w: key of %d bytes, need 4", ErrControlRecordMalformed, len(key))
	}
	c.KeyVersion = int16(binary.BigEndian.Uint16(key))
	c.Type = ControlType(binary.BigEndian.Uint16(key[2:]))
	if c.KeyVersion < 0 {
		return c, fmt.Errorf("%w: key version %d", ErrControlRecordMalformed, c.KeyVersion)
	}
	if !c.IsTransactionMarker() {
		return c, nil
	}
	if len(value) < 6 {
		return c, fmt.Errorf("%w: %s marker value of %d bytes, need 6", ErrControlRecordMalformed, c.Type, len(value))
	}
	c.ValueVersion = int16(binary.BigEndian.Uint16(value))
	c.CoordinatorEpoch = int32(binary.BigEndian.Uint32(value[2:]))
	if c.ValueVersion < 0 {
		return c, fmt.Errorf("%w: value version %d", ErrControlRecordMalformed, c.ValueVersion)
	}
	return c, nil
}

// AppendControlKey appends a version-0 control record key of type t.
func AppendControlKey(dst []byte, t ControlType) []byte {
	dst = AppendInt16(dst, 0)
	return AppendInt16(dst, int16(t))
}

// AppendTransactionMarkerValue appends a version-0 transaction marker value.
func AppendTransactionMarkerValue(dst []byte, coordinatorEpoch int32) []byte {
	dst = AppendInt16(dst, 0)
	return AppendInt32(dst, coordinatorEpoch)
}

// BuildControlBatch builds a transaction marker batch: base offset 0 (the
// log assigns the real one), transactional and control attributes, base
// sequence -1, one COMMIT or ABORT record stamped timestampMillis.
func BuildControlBatch(producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, timestampMillis int64) []byte {
	markerType := ControlAbort
	if commit {
		markerType = ControlCommit
	}
	var keyAndValue [10]byte
	key := AppendControlKey(keyAndValue[:0], markerType)
	value := AppendTransactionMarkerValue(keyAndValue[4:4], coordinatorEpoch)
	batch, err := BuildBatch(BatchOptions{
		PartitionLeaderEpoch: -1,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		BaseSequence:         -1,
		Transactional:        true,
		Control:              true,
	}, []BuilderRecord{{TimestampMillis: timestampMillis, Key: key, Value: value}})
	if err != nil {
		// One uncompressed record with a known codec cannot fail to build.
		panic(fmt.Sprintf("wire: building a control batch: %v", err))
	}
	return batch
}
