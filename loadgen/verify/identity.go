package verify

import (
	"fmt"
	"hash/fnv"
)

// RecordID names the record found at one offset, so that two reads of the
// offset can be compared. Layout of the 64 bits:
//
//	bit 63     0: a loadgen record, 1: any other value (a hash)
//	bits 40-62 producer id (index of the producer within the run)
//	bits 0-39  sequence + 1
//
// For any other value, bits 0-62 are the FNV-1a hash of the value. Zero
// names no record (a control record, or nothing read). A loadgen record's
// id leaves out the run id, stage and fate: a run's topics hold only its
// own records, and one topic holds one stage.
type RecordID uint64

const (
	recordHashBit      = RecordID(1) << 63
	recordSequenceBits = 40
	recordProducerBits = 23
)

// NewRecordID returns the id of record seq of producer, or a hash-tagged id
// when they do not fit the layout above.
func NewRecordID(producer uint32, seq uint64) RecordID {
	if producer >= 1<<recordProducerBits || seq >= 1<<recordSequenceBits-1 {
		return hashID(fmt.Appendf(nil, "producer %d seq %d", producer, seq))
	}
	return RecordID(uint64(producer)<<recordSequenceBits | (seq + 1))
}

// IdentifyValue returns the id of a record value: its producer and sequence
// for a loadgen record, a hash otherwise. It never returns zero.
func IdentifyValue(value []byte) RecordID {
	header, err := DecodeHeader(value)
	if err != nil {
		return hashID(value)
	}
	return NewRecordID(header.Producer, header.Sequence)
}

func hashID(value []byte) RecordID {
	hash := fnv.New64a()
	hash.Write(value)
	return RecordID(hash.Sum64()) | recordHashBit
}

// Loadgen reports whether id names a loadgen record (and not a hash).
func (id RecordID) Loadgen() bool { return id != 0 && id&recordHashBit == 0 }

// Producer returns the producer of a loadgen record's id.
func (id RecordID) Producer() uint32 {
	return uint32(id >> recordSequenceBits & (1<<recordProducerBits - 1))
}

// Sequence returns the sequence of a loadgen record's id.
func (id RecordID) Sequence() uint64 { return uint64(id&(1<<recordSequenceBits-1)) - 1 }

// String names the record: "producer 3 seq 1234", "value #9f…" or "none".
func (id RecordID) String() string {
	switch {
	case id == 0:
		return "none"
	case id.Loadgen():
		return fmt.Sprintf("producer %d seq %d", id.Producer(), id.Sequence())
	}
	return fmt.Sprintf("value #%015x", uint64(id&^recordHashBit))
}
