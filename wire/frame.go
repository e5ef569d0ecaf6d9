package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxFrameSize is Kafka's socket.request.max.bytes default: 100 MiB.
const DefaultMaxFrameSize = 100 * 1024 * 1024

// Errors returned by the frame reader.
var (
	// ErrFrameTooLarge means the length prefix exceeds the reader's maximum;
	// nothing was allocated for the body.
	ErrFrameTooLarge = errors.New("frame exceeds maximum size")
	// ErrFrameNegative means the length prefix is negative.
	ErrFrameNegative = errors.New("frame length is negative")
)

// FrameReader reads size-prefixed Kafka frames: a 4-byte big-endian length
// followed by that many bytes. It refuses frames larger than MaxSize before
// allocating anything for them.
type FrameReader struct {
	// R is the source, usually a bufio.Reader over a connection.
	R io.Reader
	// MaxSize bounds the body length; 0 means DefaultMaxFrameSize.
	MaxSize int32

	sizeBuf [4]byte
}

// ReadSize reads the next length prefix and checks it against MaxSize.
func (fr *FrameReader) ReadSize() (int32, error) {
	if _, err := io.ReadFull(fr.R, fr.sizeBuf[:]); err != nil {
		return 0, err
	}
	size := int32(binary.BigEndian.Uint32(fr.sizeBuf[:]))
	limit := fr.MaxSize
	if limit <= 0 {
		limit = DefaultMaxFrameSize
	}
	switch {
	case size < 0:
		return 0, fmt.Errorf("%w: %d", ErrFrameNegative, size)
	case size > limit:
		return 0, fmt.Errorf("%w: %d bytes, maximum %d (socket.request.max.bytes)", ErrFrameTooLarge, size, limit)
	}
	return size, nil
}

// Next reads one frame body. It reuses dst's capacity when it is large
// enough and returns the body, which aliases dst when it fits. A frame cut
// short by EOF returns io.ErrUnexpectedEOF.
func (fr *FrameReader) Next(dst []byte) ([]byte, error) {
	size, err := fr.ReadSize()
	if err != nil {
		return nil, err
	}
	return fr.ReadBody(dst, size)
}

// ReadBody reads the body of a frame whose length prefix ReadSize
// returned (Next is the two in a row, for callers with nothing to decide
// between them). It reuses dst as Next does.
func (fr *FrameReader) ReadBody(dst []byte, size int32) ([]byte, error) {
	if cap(dst) >= int(size) || size <= frameGrowthStep {
		if cap(dst) < int(size) {
			dst = make([]byte, size)
		}
		dst = dst[:size]
		if _, err := io.ReadFull(fr.R, dst); err != nil {
			return nil, frameBodyError(size, err)
		}
		return dst, nil
	}
	// A large frame grows with the bytes that actually arrive, so a peer
	// that announces MaxSize and sends little pins at most
	// frameGrowthFactor times what it sent, or one step. Each growth
	// copies what arrived so far: a frame of S bytes costs about
	// S/(frameGrowthFactor-1) bytes of copying in all (doubling cost a
	// whole extra copy of every produced byte).
	dst = dst[:0]
	for len(dst) < int(size) {
		if len(dst) == cap(dst) {
			target := min(int(size), max(frameGrowthStep, frameGrowthFactor*len(dst)))
			dst = grow(dst, target-len(dst))
		}
		n := min(int(size), cap(dst)) - len(dst)
		if _, err := io.ReadFull(fr.R, dst[len(dst):len(dst)+n]); err != nil {
			return nil, frameBodyError(size, err)
		}
		dst = dst[:len(dst)+n]
	}
	return dst, nil
}

// frameGrowthStep is the first allocation for a frame larger than the
// caller's buffer; the buffer then grows by frameGrowthFactor as bytes
// arrive.
const frameGrowthStep = 1 << 20

// frameGrowthFactor is how much a large frame's buffer grows each time it
// fills: the memory a stalled peer can pin per byte it sent, against the
// copying of what arrived.
const frameGrowthFactor = 8

func frameBodyError(size int32, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read frame body of %d bytes: %w", size, err)
}

// AppendFrameSize appends a 4-byte length placeholder and returns the new
// slice and the placeholder's index; PatchFrameSize fills it in afterwards.
func AppendFrameSize(b []byte) ([]byte, int) {
	return append(b, 0, 0, 0, 0), len(b)
}

// PatchFrameSize writes len(b)-at-4 at index at, completing a frame started
// with AppendFrameSize.
func PatchFrameSize(b []byte, at int) {
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
}
