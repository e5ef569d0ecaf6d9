package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sort"

	"github.com/exactly-eos/exactly/wire"
)

// Byte positions in a batch header the cleaner patches (see ".log" in the package doc).
const (
	headerCRC           = 17
	headerBaseTimestamp = 27
	headerRecordCount   = 57
)

// errRecordMalformed: a stored record does not parse (it was validated on
// append, so this is corruption).
var errRecordMalformed = errors.New("stored record malformed")

// rawRecord is one record of an uncompressed records section: its bytes
// [start, end) and the fields compaction needs.
type rawRecord struct {
	start, end     int
	offsetDelta    int32
	timestampDelta int64
	key            []byte // nil when null
	nullValue      bool
}

// nextRecord parses the record at data[at:] (length varint, then the body).
func nextRecord(data []byte, at int) (rawRecord, error) {
	length, n := binary.Varint(data[at:])
	if n <= 0 || length < 0 || int64(len(data)-at-n) < length {
		return rawRecord{}, fmt.Errorf("%w: length at %d", errRecordMalformed, at)
	}
	record := rawRecord{start: at, end: at + n + int(length)}
	body := data[at+n : record.end]
	if len(body) < 1 {
		return rawRecord{}, fmt.Errorf("%w: empty body at %d", errRecordMalformed, at)
	}
	body = body[1:] // attributes
	var fields [2]int64
	for i := range fields {
		value, n := binary.Varint(body)
		if n <= 0 {
			return rawRecord{}, fmt.Errorf("%w: field at %d", errRecordMalformed, at)
		}
		fields[i], body = value, body[n:]
	}
	record.timestampDelta, record.offsetDelta = fields[0], int32(fields[1])
	keyLength, n := binary.Varint(body)
	if n <= 0 || keyLength < -1 || int64(len(body)-n) < keyLength {
		return rawRecord{}, fmt.Errorf("%w: key at %d", errRecordMalformed, at)
	}
	body = body[n:]
	if keyLength >= 0 {
		record.key, body = body[:keyLength:keyLength], body[keyLength:]
	}
	valueLength, n := binary.Varint(body)
	if n <= 0 || valueLength < -1 {
		return rawRecord{}, fmt.Errorf("%w: value at %d", errRecordMalformed, at)
	}
	record.nullValue = valueLength < 0
	return record, nil
}

// offsetMap maps a key's 128-bit hash to the offset of its latest record in
// the dirty section (Kafka's SkimpyOffsetMap keeps an MD5 the same way):
// two independent seeded hashes make a collision — which would drop a key's
// latest record — as unlikely as MD5's, and no key bytes are copied.
type offsetMap struct {
	seeds   [2]maphash.Seed
	offsets map[[2]uint64]int64
}

func newOffsetMap() *offsetMap {
	return &offsetMap{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, offsets: map[[2]uint64]int64{}}
}

func (m *offsetMap) hash(key []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(m.seeds[0], key), maphash.Bytes(m.seeds[1], key)}
}

// put records offset as key's latest (records come in offset order).
func (m *offsetMap) put(key []byte, offset int64) { m.offsets[m.hash(key)] = offset }

// latest is the offset of key's latest record, if the dirty section has one.
func (m *offsetMap) latest(key []byte) (int64, bool) {
	offset, ok := m.offsets[m.hash(key)]
	return offset, ok
}

// txnTracker follows transactions through a cleaning pass, in offset order,
// deciding which data is aborted and when a marker may go (Kafka's
// CleanedTransactionMetadata): an abort marker stays while the pass saw
// data of its transaction (that data is removed in the pass, so the next
// pass may drop the marker); a commit marker stays while the pass saw any
// batch of its transaction.
type txnTracker struct {
	aborted   map[int64][]AbortedTxn // per producer, by first offset
	observed  map[AbortedTxn]bool    // aborted transactions whose data this pass saw
	committed map[int64]bool         // producers with a committed batch seen since their last marker
}

func newTxnTracker(aborted []AbortedTxn) *txnTracker {
	t := &txnTracker{aborted: map[int64][]AbortedTxn{}, observed: map[AbortedTxn]bool{}, committed: map[int64]bool{}}
	for _, txn := range aborted {
		t.aborted[txn.ProducerID] = append(t.aborted[txn.ProducerID], txn)
	}
	for _, list := range t.aborted {
		sort.Slice(list, func(i, j int) bool { return list[i].FirstOffset < list[j].FirstOffset })
	}
	return t
}

// abortedAt returns the aborted transaction of producer covering offset.
func (t *txnTracker) abortedAt(producer, offset int64) (AbortedTxn, bool) {
	list := t.aborted[producer]
	i := sort.Search(len(list), func(i int) bool { return list[i].FirstOffset > offset })
	if i == 0 || list[i-1].LastOffset < offset {
		return AbortedTxn{}, false
	}
	return list[i-1], true
}

// dataBatch notes a transactional data batch and reports whether it is aborted.
func (t *txnTracker) dataBatch(producer, base int64) bool {
	if txn, ok := t.abortedAt(producer, base); ok {
		t.observed[txn] = true
		return true
	}
	t.committed[producer] = true
	return false
}

// marker notes a transaction marker at offset and reports whether its
// transaction left nothing behind (the marker may go once retention
// allows), and the aborted transaction it ends, if any.
func (t *txnTracker) marker(producer, offset int64, kind wire.ControlType) (done bool, aborted AbortedTxn, isAbort bool) {
	switch kind {
	case wire.ControlAbort:
		txn, ok := t.abortedAt(producer, offset)
		if !ok || txn.LastOffset != offset {
			seen := t.committed[producer] // no index entry: its data was kept as committed
			delete(t.committed, producer)
			return !seen, AbortedTxn{}, false
		}
		delete(t.committed, producer)
		return !t.observed[txn], txn, true
	case wire.ControlCommit:
		seen := t.committed[producer]
		delete(t.committed, producer)
		return !seen, AbortedTxn{}, false
	}
	return false, AbortedTxn{}, false
}

// markerType reads a control batch's type; empty says it has no record
// (an emptied control batch, which may go).
func markerType(view wire.BatchView) (kind wire.ControlType, empty bool, err error) {
	if view.RecordCount() == 0 {
		return 0, true, nil
	}
	iterator, err := view.RecordIterator()
	if err != nil {
		return 0, false, err
	}
	if !iterator.Next() {
		return 0, false, fmt.Errorf("control batch at %d: %w", view.BaseOffset(), iterator.Err())
	}
	record := iterator.Record()
	control, err := wire.ParseControlRecord(record.Key, record.Value)
	if err != nil {
		return 0, false, fmt.Errorf("control batch at %d: %w", view.BaseOffset(), err)
	}
	return control.Type, false, nil
}

// batchRecords returns a data batch's uncompressed records section.
func batchRecords(view wire.BatchView, decompressor *wire.Decompressor) ([]byte, error) {
	if view.Compression() == wire.CompressionNone {
		return view.Records(), nil
	}
	records, err := decompressor.Decompress(view.Compression(), view.Records())
	if err != nil {
		return nil, fmt.Errorf("batch at %d: %w", view.BaseOffset(), err)
	}
	return records, nil
}

// rebuildBatch appends to dst the batch `view` with only the records whose
// byte ranges are in keep (an uncompressed records section `records`):
// same header — base offset, last offset delta, max timestamp, producer
// id, epoch and base sequence, so offsets and sequences never move — with
// the record count, length and CRC-32C recomputed, compressed as before.
// With no record kept the batch is empty and uncompressed. A horizon of 0
// or more stamps the batch with that delete horizon (KIP-534): it becomes
// the base timestamp, with the delete-horizon attribute, and each kept
// record's timestamp delta is rewritten so its timestamp stays the same.
func rebuildBatch(dst []byte, view wire.BatchView, records []byte, keep []rawRecord, horizon int64) ([]byte, error) {
	start := len(dst)
	dst = append(dst, view.Bytes()[:headerSize]...)
	header := dst[start:]
	binary.BigEndian.PutUint32(header[headerRecordCount:], uint32(len(keep)))
	attributes := binary.BigEndian.Uint16(header[headerAttributes:])
	if len(keep) == 0 {
		attributes &^= uint16(wire.AttrCompressionMask)
	}
	rebase := int64(0) // added to every kept record's timestamp delta
	if horizon >= 0 && len(keep) > 0 {
		attributes |= wire.AttrDeleteHorizon
		rebase = view.BaseTimestamp() - horizon
		binary.BigEndian.PutUint64(header[headerBaseTimestamp:], uint64(horizon))
	}
	binary.BigEndian.PutUint16(header[headerAttributes:], attributes)
	if view.Compression() == wire.CompressionNone || len(keep) == 0 {
		for _, r := range keep {
			dst = appendKeptRecord(dst, records, r, rebase)
		}
	} else {
		var plain []byte
		for _, r := range keep {
			plain = appendKeptRecord(plain, records, r, rebase)
		}
		compressed, err := wire.Compress(dst, view.Compression(), plain)
		if err != nil {
			return nil, fmt.Errorf("batch at %d: recompress: %w", view.BaseOffset(), err)
		}
		dst = compressed
	}
	length := len(dst) - start - lengthOverhead
	if length > math.MaxInt32 {
		return nil, fmt.Errorf("batch at %d: %d bytes", view.BaseOffset(), length)
	}
	binary.BigEndian.PutUint32(dst[start+headerLengthField:], uint32(length))
	binary.BigEndian.PutUint32(dst[start+headerCRC:], crc32Castagnoli(dst[start+headerAttributes:]))
	return dst, nil
}

// appendKeptRecord appends record r of records, as it is when rebase is 0,
// else re-encoded with rebase added to its timestamp delta (the length
// prefix and the delta's varint may change size; the rest is copied).
func appendKeptRecord(dst, records []byte, r rawRecord, rebase int64) []byte {
	if rebase == 0 {
		return append(dst, records[r.start:r.end]...)
	}
	_, n := binary.Varint(records[r.start:]) // the length prefix, parsed by nextRecord
	body := records[r.start+n : r.end]
	attributes, rest := body[0], body[1:]
	_, n = binary.Varint(rest) // the old timestamp delta
	rest = rest[n:]            // offset delta, key, value, headers
	var delta [binary.MaxVarintLen64]byte
	deltaLength := binary.PutVarint(delta[:], r.timestampDelta+rebase)
	dst = binary.AppendVarint(dst, int64(1+deltaLength+len(rest)))
	dst = append(dst, attributes)
	dst = append(dst, delta[:deltaLength]...)
	return append(dst, rest...)
}
