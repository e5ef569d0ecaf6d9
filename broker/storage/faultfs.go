package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
)

// ErrInjected is the error FaultFS returns for an injected failure.
var ErrInjected = errors.New("injected fault")

// ErrCrashed is returned by files opened before FaultFS.Crash.
var ErrCrashed = errors.New("file system crashed")

// FaultFS is an FS over real files (so regions still carry an *os.File) that
// injects faults for tests: the n-th write, sync or rename fails, and Crash drops
// every write not yet synced — or keeps a random prefix of them, the last
// one torn — as a power failure would. Simplifications: creating, renaming
// and removing files are durable at once; a file's unsynced writes are lost
// or kept in the order they were made.
type FaultFS struct {
	base FS

	mu         sync.Mutex
	generation int                    // bumped by Crash; older handles fail
	files      map[string]*faultState // unsynced mutations per path
	handles    []*faultFile           // open handles, closed by Crash
	writes     int                    // WriteAt calls so far
	syncs      int                    // Sync calls so far
	failWrite  int                    // fail the write whose number this is (0: none)
	failSync   int                    // fail the sync whose number this is (0: none)
	renames    int                    // Rename calls so far
	failRename int                    // fail the rename whose number this is (0: none)
}

// faultState records a file's mutations since its last sync, to undo them.
type faultState struct{ unsynced []faultOperation }

// faultOperation is one unsynced WriteAt or Truncate and what it overwrote.
type faultOperation struct {
	truncate bool
	offset   int64  // write position, or the new size of a truncate
	data     []byte // bytes written (a write only)
	oldSize  int64  // the file size before
	oldBytes []byte // bytes the operation overwrote or cut, at offset
}

// NewFaultFS returns a FaultFS over the OS file system.
func NewFaultFS() *FaultFS { return &FaultFS{base: OSFS{}, files: map[string]*faultState{}} }

// FailWrite makes the n-th WriteAt from now fail (n >= 1) after writing half
// of its bytes, as a torn write would.
func (f *FaultFS) FailWrite(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWrite = f.writes + n
}

// FailSync makes the n-th Sync from now fail (n >= 1) without syncing.
func (f *FaultFS) FailSync(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSync = f.syncs + n
}

// FailRename makes the n-th Rename from now fail (n >= 1) without renaming.
func (f *FaultFS) FailRename(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failRename = f.renames + n
}

// Counts returns how many writes and syncs were made so far.
func (f *FaultFS) Counts() (writes, syncs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes, f.syncs
}

// Crash simulates a power failure: every file loses its unsynced writes and
// truncations, except that with torn set a random prefix of them (seeded)
// survives, the last kept write cut at a random byte. Files opened before
// fail with ErrCrashed from now on; open new ones (reopen the log).
func (f *FaultFS) Crash(seed uint64, torn bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	random := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	f.generation++
	for _, handle := range f.handles {
		handle.file.Close()
	}
	f.handles = nil
	for name, state := range f.files {
		keep, partial := 0, 0.0
		if torn && len(state.unsynced) > 0 {
			keep, partial = random.IntN(len(state.unsynced)+1), random.Float64()
		}
		if err := f.restore(name, state.unsynced, keep, partial); err != nil {
			return fmt.Errorf("crash: %s: %w", name, err)
		}
	}
	f.files = map[string]*faultState{}
	f.failWrite, f.failSync, f.failRename = 0, 0, 0
	return nil
}

// restore undoes a file's unsynced operations, then replays the first
// `keep` of them, and `partial` of the next write's bytes.
func (f *FaultFS) restore(name string, operations []faultOperation, keep int, partial float64) error {
	file, err := os.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer file.Close()
	for i := len(operations) - 1; i >= 0; i-- {
		operation := operations[i]
		if err := file.Truncate(operation.oldSize); err != nil {
			return err
		}
		if _, err := file.WriteAt(operation.oldBytes, operation.offset); err != nil {
			return err
		}
	}
	for i, operation := range operations {
		if i > keep {
			break
		}
		if operation.truncate {
			if i < keep {
				err = file.Truncate(operation.offset)
			}
		} else if i < keep {
			_, err = file.WriteAt(operation.data, operation.offset)
		} else {
			_, err = file.WriteAt(operation.data[:int(float64(len(operation.data))*partial)], operation.offset)
		}
		if err != nil {
			return err
		}
	}
	return nil // the next reader is this process: no need to reach the disk
}

// OpenFile opens a real file; O_TRUNC is recorded as an unsynced truncation.
func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	var truncated *faultOperation
	if flag&os.O_TRUNC != 0 {
		if old, err := os.ReadFile(name); err == nil && len(old) > 0 {
			truncated = &faultOperation{truncate: true, oldSize: int64(len(old)), oldBytes: old}
		}
	}
	file, err := f.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if truncated != nil {
		f.state(name).unsynced = append(f.state(name).unsynced, *truncated)
	}
	handle := &faultFile{File: file, fs: f, name: name, generation: f.generation, file: file}
	f.handles = append(f.handles, handle)
	return handle, nil
}

// state returns name's record, creating it (caller holds mu).
func (f *FaultFS) state(name string) *faultState {
	state, ok := f.files[name]
	if !ok {
		state = &faultState{}
		f.files[name] = state
	}
	return state
}

// Remove removes a file durably.
func (f *FaultFS) Remove(name string) error {
	f.mu.Lock()
	delete(f.files, name)
	f.mu.Unlock()
	return f.base.Remove(name)
}

// RemoveAll removes a tree durably.
func (f *FaultFS) RemoveAll(name string) error {
	f.mu.Lock()
	f.files = map[string]*faultState{}
	f.mu.Unlock()
	return f.base.RemoveAll(name)
}

// Rename renames durably, carrying the unsynced record along, or fails
// when told to (FailRename).
func (f *FaultFS) Rename(oldName, newName string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renames++
	if f.renames == f.failRename {
		return fmt.Errorf("rename %s: %w", oldName, ErrInjected)
	}
	if err := f.base.Rename(oldName, newName); err != nil {
		return err
	}
	delete(f.files, newName)
	if state, ok := f.files[oldName]; ok {
		f.files[newName] = state
		delete(f.files, oldName)
	}
	return nil
}

// ReadDir lists a directory.
func (f *FaultFS) ReadDir(name string) ([]os.DirEntry, error) { return f.base.ReadDir(name) }

// MkdirAll creates directories durably.
func (f *FaultFS) MkdirAll(name string, perm os.FileMode) error { return f.base.MkdirAll(name, perm) }

// SyncDir is a no-op: directory operations are durable at once here.
func (f *FaultFS) SyncDir(name string) error { return nil }

// faultFile is a FaultFS file handle.
type faultFile struct {
	File
	fs         *FaultFS
	name       string
	generation int
	file       File
}

// live fails handles opened before the last crash (caller holds fs.mu).
func (h *faultFile) live() error {
	if h.generation != h.fs.generation {
		return fmt.Errorf("%s: %w", h.name, ErrCrashed)
	}
	return nil
}

// ReadAt reads unless crashed.
func (h *faultFile) ReadAt(p []byte, offset int64) (int, error) {
	h.fs.mu.Lock()
	err := h.live()
	h.fs.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return h.file.ReadAt(p, offset)
}

// WriteAt records what it overwrites, and fails when told to.
func (h *faultFile) WriteAt(p []byte, offset int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.live(); err != nil {
		return 0, err
	}
	h.fs.writes++
	data, failing := p, h.fs.writes == h.fs.failWrite
	if failing {
		data = p[:len(p)/2]
	}
	operation, err := h.snapshot(offset, int64(len(data)))
	if err != nil {
		return 0, err
	}
	operation.data = append([]byte(nil), data...)
	n, err := h.file.WriteAt(data, offset)
	h.fs.state(h.name).unsynced = append(h.fs.state(h.name).unsynced, operation)
	if failing {
		return n, fmt.Errorf("write %s: %w", h.name, ErrInjected)
	}
	return n, err
}

// snapshot captures the file size and the bytes [offset, offset+length)
// that exist, to undo a write or truncation there.
func (h *faultFile) snapshot(offset, length int64) (faultOperation, error) {
	info, err := h.file.Stat()
	if err != nil {
		return faultOperation{}, err
	}
	operation := faultOperation{offset: offset, oldSize: info.Size()}
	if end := min(offset+length, info.Size()); end > offset {
		operation.oldBytes = make([]byte, end-offset)
		if _, err := h.file.ReadAt(operation.oldBytes, offset); err != nil {
			return faultOperation{}, err
		}
	}
	return operation, nil
}

// Truncate records the bytes it cuts.
func (h *faultFile) Truncate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.live(); err != nil {
		return err
	}
	operation, err := h.snapshot(size, 1<<62)
	if err != nil {
		return err
	}
	operation.truncate = true
	if err := h.file.Truncate(size); err != nil {
		return err
	}
	h.fs.state(h.name).unsynced = append(h.fs.state(h.name).unsynced, operation)
	return nil
}

// Sync makes the file's mutations durable, or fails when told to.
func (h *faultFile) Sync() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.live(); err != nil {
		return err
	}
	h.fs.syncs++
	if h.fs.syncs == h.fs.failSync {
		return fmt.Errorf("sync %s: %w", h.name, ErrInjected)
	}
	delete(h.fs.files, h.name)
	return nil // the data is in the real file already; durability is simulated
}

// Close closes the real file (also after a crash).
func (h *faultFile) Close() error {
	h.fs.mu.Lock()
	for i, handle := range h.fs.handles {
		if handle == h {
			h.fs.handles = append(h.fs.handles[:i], h.fs.handles[i+1:]...)
			break
		}
	}
	crashed := h.generation != h.fs.generation
	h.fs.mu.Unlock()
	if crashed {
		return nil // Crash closed it
	}
	return h.file.Close()
}
