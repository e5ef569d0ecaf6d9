package acl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The store file (acls.json in the broker's data directory) is JSON:
//
//	{"version": 1, "acls": [{"resource_type": "TOPIC", "resource_name": "orders",
//	  "pattern_type": "LITERAL", "principal": "User:alice", "host": "*",
//	  "operation": "WRITE", "permission": "ALLOW"}, ...]}
//
// It is replaced whole on every change: written to a temporary file in the
// same directory, fsynced, renamed over the old one, and the directory
// fsynced, so after a crash the file is the old set or the new one, never
// a torn mix. A file that does not parse, or holds an invalid binding,
// makes Open fail rather than start with fewer ACLs than were granted or
// denied.

// storeVersion is the version of the store file's format.
const storeVersion = 1

type storeFile struct {
	Version  int       `json:"version"`
	Bindings []Binding `json:"acls"`
}

// load reads the store file; a missing file is no ACLs.
func load(path string) ([]Binding, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("acl store: %w", err)
	}
	var file storeFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("acl store %s: %w", path, err)
	}
	if file.Version != storeVersion {
		return nil, fmt.Errorf("acl store %s: version %d, want %d", path, file.Version, storeVersion)
	}
	for i, b := range file.Bindings {
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("acl store %s: entry %d: %w", path, i, err)
		}
	}
	return file.Bindings, nil
}

// save replaces the store file with bindings (see the format above).
func (a *Authorizer) save(bindings []Binding) error {
	if a.path == "" {
		return nil
	}
	if bindings == nil {
		bindings = []Binding{}
	}
	data, err := json.MarshalIndent(storeFile{Version: storeVersion, Bindings: bindings}, "", "  ")
	if err != nil {
		return fmt.Errorf("acl store: encode: %w", err)
	}
	return writeAtomic(a.path, append(data, '\n'))
}

// writeAtomic replaces path with data: temporary file, fsync, rename,
// directory fsync.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("acl store: %w", err)
	}
	tmpName := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmpName, path)
	}
	if err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("acl store: write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("acl store: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("acl store: sync %s: %w", dir, err)
	}
	return nil
}
