//go:build !linux

package storage

import "os"

// datasync flushes the file with fsync where fdatasync is not available.
func datasync(file *os.File) error { return file.Sync() }
