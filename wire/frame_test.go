package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
)

// framed returns a frame of size body bytes of random content, and the body.
func framed(size int) (frame, body []byte) {
	body = make([]byte, size)
	random := rand.New(rand.NewPCG(uint64(size), 7))
	for i := range body {
		body[i] = byte(random.Uint32())
	}
	frame = binary.BigEndian.AppendUint32(nil, uint32(size))
	return append(frame, body...), body
}

// Large frames arrive whole, and a frame of 6 MiB — a produce request of
// six full 1 MB batches — costs two buffers, not one per doubling: the
// copying of a growing buffer was a whole extra copy of every produced
// byte.
func TestReadBodyLargeFrames(t *testing.T) {
	for _, size := range []int{frameGrowthStep + 1, 6 << 20, 20<<20 + 3} {
		frame, body := framed(size)
		reader := FrameReader{R: bytes.NewReader(frame), MaxSize: 64 << 20}
		got, err := reader.Next(nil)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("%d bytes: the body read differs", size)
		}
	}
	frame, _ := framed(6 << 20)
	source := bytes.NewReader(frame)
	reader := FrameReader{R: source, MaxSize: 64 << 20}
	allocs := testing.AllocsPerRun(5, func() {
		source.Reset(frame)
		if _, err := reader.Next(nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("reading a 6 MiB frame took %.0f allocations, want at most 2", allocs)
	}
}

// A peer that announces a large frame and stops sending pins at most
// frameGrowthFactor times what it sent.
func TestReadBodyStalledPeer(t *testing.T) {
	header := binary.BigEndian.AppendUint32(nil, 64<<20)
	sent := append(header, make([]byte, frameGrowthStep+10)...)
	reader := FrameReader{R: bytes.NewReader(sent), MaxSize: 100 << 20}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := reader.Next(nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a frame cut short: %v, want io.ErrUnexpectedEOF", err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > (frameGrowthFactor+1)*frameGrowthStep+64<<10 {
		t.Errorf("a peer that sent %d bytes of a 64 MiB frame made the reader allocate %d bytes", len(sent), allocated)
	}
}
