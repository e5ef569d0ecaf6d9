package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// DefaultMaxDecompressedSize bounds a decompressed records section when a
// Decompressor's MaxSize is zero: 100 MiB, like the default maximum frame.
const DefaultMaxDecompressedSize = 100 << 20

// Errors returned by decompression.
var (
	// ErrDecompressedTooLarge means the records section would decompress to
	// more than the limit (a compression bomb, or a limit set too low).
	ErrDecompressedTooLarge = errors.New("decompressed records exceed the limit")
	// ErrUnknownCompression means the batch names a codec Kafka does not define.
	ErrUnknownCompression = errors.New("unknown compression codec")
	// ErrXerialMalformed means xerial-framed snappy data is cut or corrupt.
	ErrXerialMalformed = errors.New("malformed xerial snappy framing")
)

// xerialMagic opens snappy data framed the way the Java client (and kgo)
// writes it. The layout:
//
//	magic              8 bytes  0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
//	version            int32    1
//	compatible version int32    1
//	blocks, each:      int32 length, then a raw snappy block of that length
//
// Data without the magic is one raw snappy block.
var xerialMagic = [8]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	// xerialBlockSize is the uncompressed block size the Java stream uses.
	xerialBlockSize = 32 << 10
)

// Decompressor decodes compressed records sections into a buffer it reuses.
// It is not safe for concurrent use: give each goroutine its own (or pool
// them). Bytes it returns are valid until its next call. Its buffer keeps
// the capacity of the largest output so far (at most MaxSize).
type Decompressor struct {
	// MaxSize bounds the decompressed size; 0 means DefaultMaxDecompressedSize.
	MaxSize int

	buffer      []byte
	source      bytes.Reader
	gzipReader  *gzip.Reader
	lz4Reader   *lz4.Reader
	zstdDecoder *zstd.Decoder
	zstdLimit   int // MaxSize the zstd decoder was built with
}

func (d *Decompressor) limit() int {
	if d.MaxSize > 0 {
		return d.MaxSize
	}
	return DefaultMaxDecompressedSize
}

// Records returns an iterator over a batch's records, decompressing them
// into the Decompressor's buffer first when the batch is compressed. The
// iterator is valid until the Decompressor's next call.
func (d *Decompressor) Records(v BatchView) (RecordIterator, error) {
	codec := v.Compression()
	if codec == CompressionNone {
		return v.recordIterator(v.Records()), nil
	}
	records, err := d.Decompress(codec, v.Records())
	if err != nil {
		return RecordIterator{}, fmt.Errorf("batch at offset %d: %w", v.BaseOffset(), err)
	}
	return v.recordIterator(records), nil
}

// Decompress decodes src compressed with codec and returns the result,
// which aliases the Decompressor's buffer.
func (d *Decompressor) Decompress(codec Compression, src []byte) ([]byte, error) {
	var out []byte
	var err error
	switch codec {
	case CompressionNone:
		return src, nil
	case CompressionGzip:
		out, err = d.gunzip(src)
	case CompressionSnappy:
		out, err = d.unsnappy(src)
	case CompressionLZ4:
		out, err = d.unlz4(src)
	case CompressionZstd:
		out, err = d.unzstd(src)
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownCompression, codec)
	}
	if err != nil {
		return nil, fmt.Errorf("%s decompression: %w", codec, err)
	}
	d.buffer = out[:0]
	return out, nil
}

func (d *Decompressor) gunzip(src []byte) ([]byte, error) {
	d.source.Reset(src)
	if d.gzipReader == nil {
		reader, err := gzip.NewReader(&d.source)
		if err != nil {
			return nil, err
		}
		d.gzipReader = reader
	} else if err := d.gzipReader.Reset(&d.source); err != nil {
		return nil, err
	}
	return readBounded(d.buffer[:0], d.gzipReader, d.limit())
}

func (d *Decompressor) unlz4(src []byte) ([]byte, error) {
	d.source.Reset(src)
	if d.lz4Reader == nil {
		d.lz4Reader = lz4.NewReader(&d.source)
	} else {
		d.lz4Reader.Reset(&d.source)
	}
	return readBounded(d.buffer[:0], d.lz4Reader, d.limit())
}

func (d *Decompressor) unzstd(src []byte) ([]byte, error) {
	if d.zstdDecoder == nil || d.zstdLimit != d.limit() {
		if d.zstdDecoder != nil {
			d.zstdDecoder.Close()
		}
		decoder, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(d.limit())))
		if err != nil {
			return nil, err
		}
		d.zstdDecoder, d.zstdLimit = decoder, d.limit()
	}
	out, err := d.zstdDecoder.DecodeAll(src, d.buffer[:0])
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return nil, fmt.Errorf("%w: %w", ErrDecompressedTooLarge, err)
	}
	return out, err
}

// unsnappy decodes xerial-framed snappy (Java clients, kgo) or, without the
// xerial magic, one raw snappy block (librdkafka, sarama, older kgo).
func (d *Decompressor) unsnappy(src []byte) ([]byte, error) {
	if len(src) < xerialHeaderSize || !bytes.Equal(src[:len(xerialMagic)], xerialMagic[:]) {
		return d.snappyBlock(d.buffer[:0], src)
	}
	out := d.buffer[:0]
	for rest := src[xerialHeaderSize:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: %d bytes where a block length belongs", ErrXerialMalformed, len(rest))
		}
		size := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(size) > uint64(len(rest)) {
			return nil, fmt.Errorf("%w: block of %d bytes, %d left", ErrXerialMalformed, size, len(rest))
		}
		var err error
		if out, err = d.snappyBlock(out, rest[:size]); err != nil {
			return nil, err
		}
		rest = rest[size:]
	}
	return out, nil
}

// snappyBlock appends one decoded raw snappy block to dst, checking the
// block's declared length against the limit before allocating.
func (d *Decompressor) snappyBlock(dst, block []byte) ([]byte, error) {
	size, err := s2.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if size > d.limit()-len(dst) {
		return nil, fmt.Errorf("%w: %d bytes", ErrDecompressedTooLarge, len(dst)+size)
	}
	dst = grow(dst, size)
	decoded, err := s2.Decode(dst[len(dst):len(dst)+size], block)
	if err != nil {
		return nil, err
	}
	return dst[:len(dst)+len(decoded)], nil
}

// grow returns dst with room for n more bytes, keeping its contents.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	bigger := make([]byte, len(dst), max(2*cap(dst), len(dst)+n))
	copy(bigger, dst)
	return bigger
}

// readBounded reads r to the end into dst, failing once more than limit
// bytes come out, so a bomb costs at most limit bytes of memory.
func readBounded(dst []byte, r io.Reader, limit int) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			if len(dst) > limit {
				return nil, fmt.Errorf("%w: more than %d bytes", ErrDecompressedTooLarge, limit)
			}
			// Grow to at most limit+1 so that exceeding the limit is detected
			// without ever holding more than limit+1 bytes.
			dst = grow(dst, min(max(cap(dst), 4096), limit+1-len(dst)))
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrDecompressedTooLarge, limit)
		}
		if errors.Is(err, io.EOF) {
			return dst, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// zstdEncoder is shared: EncodeAll is safe for concurrent use.
var zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))

// Compress appends src compressed with codec to dst. Snappy is written with
// xerial framing, as the Java client and kgo write it; lz4 uses the frame
// format Kafka requires.
func Compress(dst []byte, codec Compression, src []byte) ([]byte, error) {
	switch codec {
	case CompressionNone:
		return append(dst, src...), nil
	case CompressionGzip:
		buffer := bytes.NewBuffer(dst)
		writer := gzip.NewWriter(buffer)
		if _, err := writer.Write(src); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if err := writer.Close(); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return buffer.Bytes(), nil
	case CompressionSnappy:
		return appendXerial(dst, src), nil
	case CompressionLZ4:
		buffer := bytes.NewBuffer(dst)
		writer := lz4.NewWriter(buffer)
		if _, err := writer.Write(src); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		if err := writer.Close(); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		return buffer.Bytes(), nil
	case CompressionZstd:
		return zstdEncoder.EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCompression, codec)
}

// appendXerial appends src as xerial-framed snappy: the header, then blocks
// of at most xerialBlockSize input bytes, each a length and a snappy block.
func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialMagic[:]...)
	dst = AppendInt32(dst, 1) // version
	dst = AppendInt32(dst, 1) // minimum compatible version
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		block := s2.EncodeSnappy(nil, src[:n])
		dst = AppendInt32(dst, int32(len(block)))
		dst = append(dst, block...)
		src = src[n:]
	}
	return dst
}
