package wire

import (
	"errors"
	"fmt"
)

// Errors returned when iterating records.
var (
	// ErrRecordMalformed wraps every structural error inside a record.
	ErrRecordMalformed = errors.New("malformed record")
	// ErrCompressed is returned when an uncompressed view of a compressed
	// batch's records is requested; decompress it with a Decompressor.
	ErrCompressed = errors.New("record batch is compressed")
)

// Record is one record of a batch. Key, Value and the headers alias the batch
// (or the decompression buffer) and are valid only while those bytes are.
//
// Record layout (all varints zig-zag):
//
//	length          varint   bytes after this field
//	attributes      int8     unused, 0
//	timestampDelta  varlong  from the batch's base timestamp
//	offsetDelta     varint   from the batch's base offset
//	keyLength       varint   -1 = null key
//	key             bytes
//	valueLength     varint   -1 = null value
//	value           bytes
//	headerCount     varint
//	headers         headerKeyLength varint, headerKey, headerValueLength varint (-1 = null), headerValue
type Record struct {
	Offset         int64 // base offset + offset delta
	Timestamp      int64 // base timestamp + delta, or the max timestamp for LogAppendTime batches
	OffsetDelta    int32
	TimestampDelta int64
	Attributes     int8
	Key            []byte // nil when null
	Value          []byte // nil when null

	// headers is the encoded header section and headerCount its length;
	// both were checked by RecordIterator.Next.
	headers     []byte
	headerCount int
}

// HeaderCount returns the number of headers.
func (r *Record) HeaderCount() int { return r.headerCount }

// Headers returns an iterator over the record's headers. It allocates nothing.
func (r *Record) Headers() HeaderIterator {
	return HeaderIterator{reader: Reader{B: r.headers}, remaining: r.headerCount}
}

// HeaderIterator walks a record's headers.
type HeaderIterator struct {
	reader     Reader
	remaining  int
	key, value []byte
}

// Next advances to the next header. The header section was validated when
// the record was read, so Next cannot fail.
func (it *HeaderIterator) Next() bool {
	if it.remaining == 0 {
		return false
	}
	it.remaining--
	it.key, it.value = readHeader(&it.reader)
	return it.reader.Err == nil
}

// Header returns the current header's key and value (nil when null).
func (it *HeaderIterator) Header() (key, value []byte) { return it.key, it.value }

// RecordIterator walks the records of an uncompressed records section. It
// allocates nothing: Record returns a pointer to a struct the iterator reuses.
type RecordIterator struct {
	reader        Reader
	remaining     int
	baseOffset    int64
	baseTimestamp int64
	// logAppendTime, when set, makes every record's timestamp maxTimestamp,
	// as Kafka consumers read LogAppendTime batches.
	logAppendTime bool
	maxTimestamp  int64

	current Record
	err     error
}

// NewRecordIterator iterates count records in an uncompressed records
// section whose batch has the given base offset and base timestamp.
func NewRecordIterator(records []byte, count int32, baseOffset, baseTimestamp int64) RecordIterator {
	it := RecordIterator{
		reader:        Reader{B: records},
		remaining:     int(count),
		baseOffset:    baseOffset,
		baseTimestamp: baseTimestamp,
	}
	if count < 0 {
		it.err = fmt.Errorf("%w: record count %d", ErrRecordMalformed, count)
	}
	return it
}

// RecordIterator returns an iterator over an uncompressed batch's records,
// or ErrCompressed.
func (v BatchView) RecordIterator() (RecordIterator, error) {
	if c := v.Compression(); c != CompressionNone {
		return RecordIterator{}, fmt.Errorf("%w with %s", ErrCompressed, c)
	}
	return v.recordIterator(v.Records()), nil
}

// recordIterator iterates the given (already decompressed) records section
// with the batch's offsets and timestamps.
func (v BatchView) recordIterator(records []byte) RecordIterator {
	it := NewRecordIterator(records, v.RecordCount(), v.BaseOffset(), v.BaseTimestamp())
	if v.LogAppendTime() {
		it.logAppendTime = true
		it.maxTimestamp = v.MaxTimestamp()
	}
	return it
}

// Next reads the next record. It returns false at the end or on error;
// reaching the end with unread bytes left over is an error.
func (it *RecordIterator) Next() bool {
	if it.err != nil {
		return false
	}
	if it.remaining == 0 {
		if n := len(it.reader.B); n != 0 {
			it.err = fmt.Errorf("%w: %d bytes after the last record", ErrRecordMalformed, n)
		}
		return false
	}
	it.remaining--
	length := it.reader.Varint()
	if it.reader.Err == nil && length < 0 {
		it.reader.Failf("record length %d", length)
	}
	body := Reader{B: it.reader.Span(int(length))}
	if it.reader.Err != nil {
		it.err = fmt.Errorf("%w: %w", ErrRecordMalformed, it.reader.Err)
		return false
	}
	if err := it.parse(&body); err != nil {
		it.err = err
		return false
	}
	return true
}

// parse decodes one record body (everything after its length) into current.
func (it *RecordIterator) parse(body *Reader) error {
	rec := &it.current
	rec.Attributes = body.Int8()
	rec.TimestampDelta = body.Varlong()
	rec.OffsetDelta = body.Varint()
	rec.Key = readVarintBytes(body)
	rec.Value = readVarintBytes(body)
	count := body.Varint()
	if body.Err == nil && (count < 0 || int(count) > len(body.B)) {
		body.Failf("header count %d", count)
	}
	rec.headers = body.B
	rec.headerCount = int(count)
	for i := int32(0); i < count && body.Err == nil; i++ {
		readHeader(body)
	}
	if body.Err == nil && len(body.B) != 0 {
		body.Failf("%d bytes after the headers", len(body.B))
	}
	if body.Err != nil {
		return fmt.Errorf("%w: record %d: %w", ErrRecordMalformed, rec.OffsetDelta, body.Err)
	}
	rec.Offset = it.baseOffset + int64(rec.OffsetDelta)
	rec.Timestamp = it.baseTimestamp + rec.TimestampDelta
	if it.logAppendTime {
		rec.Timestamp = it.maxTimestamp
	}
	return nil
}

// Record returns the current record. The pointer is reused by Next.
func (it *RecordIterator) Record() *Record { return &it.current }

// Err returns the error that stopped the iteration, or nil.
func (it *RecordIterator) Err() error { return it.err }

// readVarintBytes reads varint-length bytes; -1 is null (nil).
func readVarintBytes(r *Reader) []byte {
	n := r.Varint()
	if n < 0 {
		if n != -1 {
			r.Failf("bytes length %d", n)
		}
		return nil
	}
	return r.Span(int(n))
}

// readHeader reads one record header: a non-null key and a nullable value.
func readHeader(r *Reader) (key, value []byte) {
	n := r.Varint()
	if n < 0 {
		r.Failf("header key length %d", n)
		return nil, nil
	}
	key = r.Span(int(n))
	return key, readVarintBytes(r)
}
