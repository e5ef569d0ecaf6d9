package producers

import (
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
// The single-broker implementation is a file (OpenIDAllocator); the cluster
// issue replaces it with a record in the Raft metadata log.
type BlockReserver interface {
	ReserveBlock(size int64) (start int64, err error)
}

// IDAllocator hands out unique producer ids from durably reserved blocks.
// It is safe for concurrent use: mu guards the current block.
type IDAllocator struct {
	reserver  BlockReserver
	blockSize int64

	mu sync.Mutex
	// next is the id Next returns; next == blockEnd means a new block
	// must be reserved first. Invariant: [next, blockEnd) is reserved
	// durably and not yet handed out.
	next, blockEnd int64
}

// NewIDAllocator returns an allocator reserving blockSize ids at a time.
func NewIDAllocator(reserver BlockReserver, blockSize int) (*IDAllocator, error) {
	if blockSize <= 0 {
		return nil, fmt.Errorf("producer id allocator: block size %d must be positive", blockSize)
	}
	return &IDAllocator{reserver: reserver, blockSize: int64(blockSize)}, nil
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

// Next returns a producer id never returned before, by this allocator or by
// any earlier one on the same reserver. Only the first call of each block
// touches the disk.
func (a *IDAllocator) Next() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == a.blockEnd {
		start, err := a.reserver.ReserveBlock(a.blockSize)
		if err != nil {
			return 0, fmt.Errorf("next producer id: %w", err)
		}
		a.next, a.blockEnd = start, start+a.blockSize
	}
	id := a.next
	a.next++
	return id, nil
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

// ReserveBlock makes [end, end+size) durable as used and returns end.
func (r *FileBlockReserver) ReserveBlock(size int64) (int64, error) {
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
