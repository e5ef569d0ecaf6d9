package storage

import (
	"os"
	"syscall"
)

// datasync flushes file data and the metadata needed to read it back
// (fdatasync(2)), skipping timestamps that fsync would also write.
func datasync(file *os.File) error {
	for {
		err := syscall.Fdatasync(int(file.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: file.Name(), Err: err}
			}
			return nil
		}
	}
}
