package producers

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"sync"

	"github.com/exactly-eos/exactly/broker/storage"
)

// BlockReserver durably reserves blocks of producer ids. Once ReserveBlock
// returns, the block [start, start+size) is never returned again, even after
// a crash: ids of a block that were not handed out are skipped, never reused.
// In a broker the reserver is the metadata quorum's controller (Kafka's
// AllocateProducerIds); FileBlockReserver keeps the blocks of one process in
// a file. ctx bounds a reservation that waits (on the controller); the file
// ignores it.
type BlockReserver interface {
	ReserveBlock(ctx context.Context, size int64) (start int64, err error)
}

// IDAllocator hands out unique producer ids from durably reserved blocks.
// It is safe for concurrent use: mu guards the current block and the
// reservation under way, and is never held across a reservation.
//
// With prefetching (NewPrefetchingIDAllocator) it reserves the next block
// in the background once 90% of the current one is handed out, as Kafka's
// broker does, so Next rarely waits for the reserver; without, the Next
// that finds the block used up reserves the next one. Either way one
// reservation runs at a time, and a Next that needs a block while one is
// under way waits for it. Goroutines: one per background reservation, ended
// by Close.
type IDAllocator struct {
	reserver  BlockReserver
	blockSize int64
	prefetch  bool
	ctx       context.Context // cancelled by Close: reservations under way end
	cancel    context.CancelFunc
	wg        sync.WaitGroup // background reservations

	mu sync.Mutex
	// next is the id Next returns; next == blockEnd means the block is
	// used up. Invariant: [next, blockEnd) is reserved durably and not yet
	// handed out.
	next, blockEnd int64
	// ahead is a block reserved ahead of need ([aheadStart,
	// aheadStart+blockSize)), when hasAhead.
	aheadStart int64
	hasAhead   bool
	// reserving is the reservation under way, nil if none.
	reserving *reservation
	closed    bool
}

// reservation is one ReserveBlock call; done is closed once err (and, on
// success, the allocator's ahead block) is set.
type reservation struct {
	done chan struct{}
	err  error
}

// NewIDAllocator returns an allocator reserving blockSize ids at a time,
// when the current block is used up.
func NewIDAllocator(reserver BlockReserver, blockSize int) (*IDAllocator, error) {
	if blockSize <= 0 {
		return nil, fmt.Errorf("producer id allocator: block size %d must be positive", blockSize)
	}
	a := &IDAllocator{reserver: reserver, blockSize: int64(blockSize)}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a, nil
}

// NewPrefetchingIDAllocator is NewIDAllocator reserving each next block in
// the background once 90% of the current one is handed out. Close ends a
// reservation under way.
func NewPrefetchingIDAllocator(reserver BlockReserver, blockSize int) (*IDAllocator, error) {
	a, err := NewIDAllocator(reserver, blockSize)
	if err == nil {
		a.prefetch = true
	}
	return a, err
}

// OpenIDAllocator opens (or creates) the id block file at path through fsys
// (nil: the OS's file system) and returns an allocator that reserves
// blockSize ids at a time in it. One allocator per file: two processes
// sharing a file would hand out the same ids.
func OpenIDAllocator(fsys storage.FS, path string, blockSize int) (*IDAllocator, error) {
	reserver, err := OpenFileBlockReserver(fsys, path)
	if err != nil {
		return nil, err
	}
	return NewIDAllocator(reserver, blockSize)
}

// ErrAllocatorClosed: Next after Close.
var ErrAllocatorClosed = errors.New("producer id allocator closed")

// Next returns a producer id never returned before, by this allocator or by
// any earlier one on the same reserver. Only the first call of a block
// waits for a reservation, and with prefetching not even that one, as a
// rule.
func (a *IDAllocator) Next() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.next == a.blockEnd || a.closed {
		switch {
		case a.closed:
			return 0, fmt.Errorf("next producer id: %w", ErrAllocatorClosed)
		case a.hasAhead:
			a.next, a.blockEnd, a.hasAhead = a.aheadStart, a.aheadStart+a.blockSize, false
		case a.reserving != nil:
			// Wait for the reservation under way (a prefetch, or another
			// Next's); if it failed, so does this Next.
			r := a.reserving
			a.mu.Unlock()
			<-r.done
			a.mu.Lock()
			if r.err != nil && !a.hasAhead && a.next == a.blockEnd {
				return 0, fmt.Errorf("next producer id: %w", r.err)
			}
		default:
			// Reserve here, without the lock.
			r := a.startReservation()
			a.mu.Unlock()
			a.reserve(r)
			a.mu.Lock()
			if r.err != nil {
				return 0, fmt.Errorf("next producer id: %w", r.err)
			}
		}
	}
	id := a.next
	a.next++
	if a.prefetch && !a.hasAhead && a.reserving == nil && !a.closed && (a.blockEnd-a.next)*10 <= a.blockSize {
		r := a.startReservation()
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.reserve(r)
		}()
	}
	return id, nil
}

// startReservation records a reservation under way; the caller holds mu
// and calls reserve without it.
func (a *IDAllocator) startReservation() *reservation {
	r := &reservation{done: make(chan struct{})}
	a.reserving = r
	return r
}

// reserve reserves a block for r and makes it the ahead block (mu not held).
func (a *IDAllocator) reserve(r *reservation) {
	start, err := a.reserver.ReserveBlock(a.ctx, a.blockSize)
	a.mu.Lock()
	defer a.mu.Unlock()
	r.err = err
	if err == nil {
		a.aheadStart, a.hasAhead = start, true
	}
	a.reserving = nil
	close(r.done)
}

// Close stops the allocator: a reservation under way is cancelled (its
// block, if it is granted anyway, is never used) and Next fails from now
// on. It waits for a background reservation to end. Idempotent.
func (a *IDAllocator) Close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.cancel()
	a.wg.Wait()
}

// ID block file layout: see "Producer ids" in the package doc.
const (
	idFileMagic = "XPID"
	idFileSize  = 16
)

// FileBlockReserver reserves id blocks by rewriting a small file atomically
// (write a temporary file, fsync, rename, fsync the directory) before the
// block is used. It is safe for concurrent use: mu guards end and the file.
type FileBlockReserver struct {
	fs   storage.FS
	path string

	mu  sync.Mutex
	end int64 // the durable end: ids below it were reserved
}

// OpenFileBlockReserver reads the block file at path through fsys (nil:
// the OS's file system; every later write goes through it too); a missing
// file starts at id 0. A corrupt file is an error, never a reset:
// resetting could reuse ids. A leftover temporary file from a crash is
// ignored.
func OpenFileBlockReserver(fsys storage.FS, path string) (*FileBlockReserver, error) {
	if fsys == nil {
		fsys = storage.OSFS{}
	}
	data, err := storage.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return &FileBlockReserver{fs: fsys, path: path}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open producer id file: %w", err)
	}
	if len(data) != idFileSize || string(data[:4]) != idFileMagic {
		return nil, fmt.Errorf("open producer id file %s: %d bytes, not a producer id file", path, len(data))
	}
	if stored, computed := binary.BigEndian.Uint32(data[4:]), crc32.Checksum(data[8:], castagnoli); stored != computed {
		return nil, fmt.Errorf("open producer id file %s: crc32c %08x, computed %08x", path, stored, computed)
	}
	end := int64(binary.BigEndian.Uint64(data[8:]))
	if end < 0 {
		return nil, fmt.Errorf("open producer id file %s: negative end %d", path, end)
	}
	return &FileBlockReserver{fs: fsys, path: path, end: end}, nil
}

// End returns the durable end: every id below it has been reserved.
func (r *FileBlockReserver) End() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.end
}

// ReserveBlock makes [end, end+size) durable as used and returns end. The
// file write is not cancelled by ctx.
func (r *FileBlockReserver) ReserveBlock(_ context.Context, size int64) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if size <= 0 || r.end > math.MaxInt64-size {
		return 0, fmt.Errorf("reserve %d producer ids after %d: producer id space exhausted or bad size", size, r.end)
	}
	newEnd := r.end + size
	data := make([]byte, idFileSize)
	copy(data, idFileMagic)
	binary.BigEndian.PutUint64(data[8:], uint64(newEnd))
	binary.BigEndian.PutUint32(data[4:], crc32.Checksum(data[8:], castagnoli))
	if err := storage.WriteFileAtomic(r.fs, r.path, data); err != nil {
		return 0, fmt.Errorf("reserve producer ids: %w", err)
	}
	start := r.end
	r.end = newEnd
	return start, nil
}
