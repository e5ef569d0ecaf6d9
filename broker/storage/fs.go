package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// FS is the small file-system interface the log reaches the disk through, so
// that tests can inject faults (see FaultFS). Names are full paths.
type FS interface {
	// OpenFile opens a file as os.OpenFile does.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove removes one file.
	Remove(name string) error
	// RemoveAll removes a directory tree.
	RemoveAll(name string) error
	// Rename renames a file atomically (on POSIX file systems).
	Rename(oldName, newName string) error
	// ReadDir lists a directory.
	ReadDir(name string) ([]os.DirEntry, error)
	// MkdirAll creates a directory and its parents.
	MkdirAll(name string, perm os.FileMode) error
	// SyncDir makes the directory's entries (creations, renames, removals) durable.
	SyncDir(name string) error
}

// File is an open file. The log uses positional reads and writes only
// (ReadAt/WriteAt), never a shared file position, so one File may serve many
// readers and one writer at once.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes the file's data durable (fdatasync(2) on Linux).
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Stat describes the file.
	Stat() (os.FileInfo, error)
	// Name is the path the file was opened with.
	Name() string
	// OSFile returns the *os.File behind this File, for sendfile(2), or nil
	// when the file system is not backed by the OS.
	OSFile() *os.File
}

// OSFS is the operating system's file system.
type OSFS struct{}

// osFile is a File backed by an *os.File.
type osFile struct{ *os.File }

// OpenFile opens a file with os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{file}, nil
}

// Remove removes a file with os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// RemoveAll removes a tree with os.RemoveAll.
func (OSFS) RemoveAll(name string) error { return os.RemoveAll(name) }

// Rename renames with os.Rename.
func (OSFS) Rename(oldName, newName string) error { return os.Rename(oldName, newName) }

// ReadDir lists a directory with os.ReadDir.
func (OSFS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

// MkdirAll creates directories with os.MkdirAll.
func (OSFS) MkdirAll(name string, perm os.FileMode) error { return os.MkdirAll(name, perm) }

// SyncDir opens the directory and fsyncs it.
func (OSFS) SyncDir(name string) error {
	dir, err := os.Open(name)
	if err != nil {
		return err
	}
	syncErr := dir.Sync()
	closeErr := dir.Close()
	return errors.Join(syncErr, closeErr)
}

// Sync flushes the file's data with fdatasync(2) where the platform has it.
func (f osFile) Sync() error { return datasync(f.File) }

// OSFile returns the underlying *os.File.
func (f osFile) OSFile() *os.File { return f.File }

// WriteFileAtomic replaces name with data through fsys, so that after a
// crash the file holds either its old or its new content, never a mix:
// write name+".tmp", fsync it, rename it over name, fsync the directory.
// Every step goes through fsys, so a FaultFS reaches it. On an error
// before the rename the old file is untouched and the temporary file is
// removed (best effort); an error from the directory sync means the rename
// happened but may not survive a crash. Errors name the step and the file.
// The file is created with mode 0644; WriteFileAtomicMode chooses.
func WriteFileAtomic(fsys FS, name string, data []byte) error {
	return WriteFileAtomicMode(fsys, name, data, 0o644)
}

// WriteFileAtomicMode is WriteFileAtomic creating the file with mode perm
// (before the umask), e.g. 0600 for a file of credentials.
func WriteFileAtomicMode(fsys FS, name string, data []byte, perm os.FileMode) error {
	if fsys == nil {
		fsys = OSFS{}
	}
	temporary := name + ".tmp"
	file, err := fsys.OpenFile(temporary, os.O_RDWR|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", temporary, err)
	}
	cleanup := func(step string, err error) error {
		return errors.Join(fmt.Errorf("%s %s: %w", step, temporary, err), removeIfExists(fsys, temporary))
	}
	if _, err := file.WriteAt(data, 0); err != nil {
		return cleanup("write", errors.Join(err, file.Close()))
	}
	if err := file.Sync(); err != nil {
		return cleanup("sync", errors.Join(err, file.Close()))
	}
	if err := file.Close(); err != nil {
		return cleanup("close", err)
	}
	if err := fsys.Rename(temporary, name); err != nil {
		return cleanup("rename", err)
	}
	if err := fsys.SyncDir(filepath.Dir(name)); err != nil {
		return fmt.Errorf("sync directory of %s: %w", name, err)
	}
	return nil
}

// removeIfExists removes name; a missing file is not an error.
func removeIfExists(fsys FS, name string) error {
	if err := fsys.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// ReadFile reads a whole (small) file through fsys (nil: the OS's).
func ReadFile(fsys FS, name string) ([]byte, error) {
	if fsys == nil {
		fsys = OSFS{}
	}
	return readWholeFile(fsys, name)
}

// readWholeFile reads a small file completely.
func readWholeFile(fs FS, name string) ([]byte, error) {
	file, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, info.Size())
	if _, err := file.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return data, nil
}
