package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShortBuffer is the error a Reader records when it runs out of bytes.
var ErrShortBuffer = errors.New("not enough bytes")

// Reader decodes Kafka primitive types from a byte slice without allocating.
// The first error sticks: later calls return zero values and Err stays set,
// so a decoder can read a whole structure and check Err once.
type Reader struct {
	B   []byte
	Err error
}

func (r *Reader) fail(what string) {
	if r.Err == nil {
		r.Err = fmt.Errorf("%w reading %s", ErrShortBuffer, what)
	}
	r.B = nil
}

// Failf records a decoding error (unless one is already recorded).
func (r *Reader) Failf(format string, args ...any) {
	if r.Err == nil {
		r.Err = fmt.Errorf(format, args...)
	}
	r.B = nil
}

// Int8 reads one signed byte.
func (r *Reader) Int8() int8 {
	if len(r.B) < 1 {
		r.fail("int8")
		return 0
	}
	v := int8(r.B[0])
	r.B = r.B[1:]
	return v
}

// Int16 reads a big-endian int16.
func (r *Reader) Int16() int16 {
	if len(r.B) < 2 {
		r.fail("int16")
		return 0
	}
	v := int16(binary.BigEndian.Uint16(r.B))
	r.B = r.B[2:]
	return v
}

// Int32 reads a big-endian int32.
func (r *Reader) Int32() int32 {
	if len(r.B) < 4 {
		r.fail("int32")
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.B))
	r.B = r.B[4:]
	return v
}

// Int64 reads a big-endian int64.
func (r *Reader) Int64() int64 {
	if len(r.B) < 8 {
		r.fail("int64")
		return 0
	}
	v := int64(binary.BigEndian.Uint64(r.B))
	r.B = r.B[8:]
	return v
}

// Uvarint reads an unsigned LEB128 varint (at most 5 bytes, as Kafka's are 32-bit).
func (r *Reader) Uvarint() uint32 {
	var v uint32
	for i := 0; i < 5; i++ {
		if len(r.B) == 0 {
			r.fail("uvarint")
			return 0
		}
		c := r.B[0]
		r.B = r.B[1:]
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
	r.Failf("uvarint longer than 5 bytes")
	return 0
}

// Varint reads a zig-zag signed varint (32-bit).
func (r *Reader) Varint() int32 {
	u := r.Uvarint()
	return int32(u>>1) ^ -int32(u&1)
}

// Varlong reads a zig-zag signed varint (64-bit, at most 10 bytes).
func (r *Reader) Varlong() int64 {
	var u uint64
	for i := 0; i < 10; i++ {
		if len(r.B) == 0 {
			r.fail("varlong")
			return 0
		}
		c := r.B[0]
		r.B = r.B[1:]
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1)
		}
	}
	r.Failf("varlong longer than 10 bytes")
	return 0
}

// Span returns the next n bytes (aliasing the input) and advances.
func (r *Reader) Span(n int) []byte {
	if n < 0 || len(r.B) < n {
		r.fail(fmt.Sprintf("%d bytes", n))
		return nil
	}
	v := r.B[:n:n]
	r.B = r.B[n:]
	return v
}

// NullableString reads an int16-length string; length -1 is null (nil).
func (r *Reader) NullableString() []byte {
	n := r.Int16()
	if n < 0 {
		if n != -1 {
			r.Failf("string length %d", n)
		}
		return nil
	}
	return r.Span(int(n))
}

// String reads an int16-length non-null string.
func (r *Reader) String() []byte {
	n := r.Int16()
	if n < 0 {
		r.Failf("non-nullable string has length %d", n)
		return nil
	}
	return r.Span(int(n))
}

// CompactNullableString reads a compact string: uvarint length+1, 0 is null.
func (r *Reader) CompactNullableString() []byte {
	n := r.Uvarint()
	if n == 0 {
		return nil
	}
	return r.Span(int(n - 1))
}

// CompactString reads a compact non-null string.
func (r *Reader) CompactString() []byte {
	n := r.Uvarint()
	if n == 0 {
		r.Failf("compact string is null")
		return nil
	}
	return r.Span(int(n - 1))
}

// NullableBytes reads int32-length bytes; length -1 is null (nil).
func (r *Reader) NullableBytes() []byte {
	n := r.Int32()
	if n < 0 {
		if n != -1 {
			r.Failf("bytes length %d", n)
		}
		return nil
	}
	return r.Span(int(n))
}

// CompactNullableBytes reads compact bytes: uvarint length+1, 0 is null.
func (r *Reader) CompactNullableBytes() []byte {
	n := r.Uvarint()
	if n == 0 {
		return nil
	}
	return r.Span(int(n - 1))
}

// ArrayLen reads an int32 array length; -1 (null) is returned as -1.
// A length that cannot fit in the remaining bytes (each element needs at
// least minElem bytes) is an error, so callers never allocate for lies.
func (r *Reader) ArrayLen(minElem int) int {
	n := r.Int32()
	return r.checkArrayLen(int64(n), minElem)
}

// CompactArrayLen reads a compact array length (uvarint length+1; 0 is null → -1).
func (r *Reader) CompactArrayLen(minElem int) int {
	n := int64(r.Uvarint()) - 1
	return r.checkArrayLen(n, minElem)
}

func (r *Reader) checkArrayLen(n int64, minElem int) int {
	if r.Err != nil {
		return 0
	}
	if n < -1 {
		r.Failf("array length %d", n)
		return 0
	}
	if minElem < 1 {
		minElem = 1
	}
	if n > 0 && n*int64(minElem) > int64(len(r.B)) {
		r.Failf("array of %d elements does not fit in %d bytes", n, len(r.B))
		return 0
	}
	return int(n)
}

// SkipTaggedFields skips a tagged-field section: a uvarint count, then for
// each field a uvarint tag, a uvarint size and that many bytes.
func (r *Reader) SkipTaggedFields() {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		r.Uvarint() // tag
		size := r.Uvarint()
		r.Span(int(size))
	}
}

// AppendInt16 appends a big-endian int16.
func AppendInt16(b []byte, v int16) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }

// AppendInt32 appends a big-endian int32.
func AppendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// AppendInt64 appends a big-endian int64.
func AppendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

// AppendUvarint appends an unsigned LEB128 varint.
func AppendUvarint(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// AppendVarint appends a zig-zag signed 32-bit varint.
func AppendVarint(b []byte, v int32) []byte {
	return AppendUvarint(b, uint32(v<<1)^uint32(v>>31))
}

// AppendVarlong appends a zig-zag signed 64-bit varint.
func AppendVarlong(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// AppendNullableString appends an int16-length string; nil is null (-1).
func AppendNullableString(b []byte, s []byte) []byte {
	if s == nil {
		return AppendInt16(b, -1)
	}
	b = AppendInt16(b, int16(len(s)))
	return append(b, s...)
}

// AppendString appends an int16-length string.
func AppendString(b []byte, s string) []byte {
	b = AppendInt16(b, int16(len(s)))
	return append(b, s...)
}

// AppendCompactString appends a compact string (uvarint length+1).
func AppendCompactString(b []byte, s string) []byte {
	b = AppendUvarint(b, uint32(len(s))+1)
	return append(b, s...)
}

// AppendCompactNullableString appends a compact nullable string; nil is null.
func AppendCompactNullableString(b []byte, s []byte) []byte {
	if s == nil {
		return AppendUvarint(b, 0)
	}
	b = AppendUvarint(b, uint32(len(s))+1)
	return append(b, s...)
}
