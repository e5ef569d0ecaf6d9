package wire

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file builds wire-format bytes with kmsg, the independent oracle the
// tests compare wire against. Nothing here uses the wire package's encoders.

// oracleRecord describes one record to encode with kmsg.
type oracleRecord struct {
	timestampDelta int64
	key, value     []byte
	headers        []kmsg.Header
}

// kmsgRecords encodes records with kmsg.Record.AppendTo, offset delta = index.
func kmsgRecords(records []oracleRecord) []byte {
	var out []byte
	for i, rec := range records {
		r := kmsg.Record{
			TimestampDelta64: rec.timestampDelta,
			OffsetDelta:      int32(i),
			Key:              rec.key,
			Value:            rec.value,
			Headers:          rec.headers,
		}
		// Length is the size of everything after it; encode once with a
		// zero length (one varint byte) to measure it.
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		out = r.AppendTo(out)
	}
	return out
}

// kmsgBatch wraps a records section (compressed or not) in a record batch
// built by kmsg.RecordBatch.AppendTo, with the CRC computed by hash/crc32.
func kmsgBatch(header kmsg.RecordBatch, numRecords int, records []byte) []byte {
	header.Magic = 2
	header.NumRecords = int32(numRecords)
	header.Records = records
	header.Length = int32(49 + len(records))
	out := header.AppendTo(nil)
	crc := crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(out[17:], crc)
	return out
}

// sampleRecords is a varied record set: keys, null keys, null values, empty
// values, headers with null values, and negative and large timestamp deltas.
func sampleRecords() []oracleRecord {
	return []oracleRecord{
		{timestampDelta: 0, key: []byte("k0"), value: []byte("value zero")},
		{timestampDelta: 5, key: nil, value: []byte("no key")},
		{timestampDelta: -3, key: []byte("tombstone"), value: nil},
		{timestampDelta: 1 << 40, key: []byte{}, value: []byte{}},
		{timestampDelta: 7, key: []byte("h"), value: []byte("with headers"), headers: []kmsg.Header{
			{Key: "trace", Value: []byte("abc")},
			{Key: "", Value: nil},
			{Key: "empty", Value: []byte{}},
		}},
	}
}

// sampleBatch is an uncompressed idempotent batch of sampleRecords.
func sampleBatch() []byte {
	recs := sampleRecords()
	return kmsgBatch(kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       1_700_000_000_000,
		MaxTimestamp:         1_700_000_000_000 + 1<<40,
		ProducerID:           42,
		ProducerEpoch:        3,
		FirstSequence:        100,
	}, len(recs), kmsgRecords(recs))
}
