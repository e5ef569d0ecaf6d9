package producers

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
)

// A snapshot whose rename or sync fails reports the error and leaves the
// previous snapshot as it was: loading still finds the old one, byte for
// byte, and no temporary file is left behind.
func TestSnapshotWriteFaultKeepsPreviousSnapshot(t *testing.T) {
	for _, fault := range []struct {
		name   string
		inject func(*storage.FaultFS)
	}{
		{"rename", func(f *storage.FaultFS) { f.FailRename(1) }},
		{"sync", func(f *storage.FaultFS) { f.FailSync(1) }},
		{"write", func(f *storage.FaultFS) { f.FailWrite(1) }},
	} {
		t.Run(fault.name, func(t *testing.T) {
			faults := storage.NewFaultFS()
			clock := &fakeClock{now: time.Unix(5000, 0)}
			options := Options{Now: clock.Now, ExpirationAge: time.Hour, FS: faults}
			state := NewPartitionState(options)
			log := &testLog{state: state}
			mustProduce(t, log, batch(1, 0, 0, 3))
			dir := t.TempDir()
			oldOffset := log.next
			if err := log.state.WriteSnapshot(dir, oldOffset); err != nil {
				t.Fatal(err)
			}
			oldPath := filepath.Join(dir, SnapshotFileName(oldOffset))
			old, err := os.ReadFile(oldPath)
			if err != nil {
				t.Fatal(err)
			}
			mustProduce(t, log, batch(1, 0, 3, 3))
			fault.inject(faults)
			err = log.state.WriteSnapshot(dir, log.next)
			if !errors.Is(err, storage.ErrInjected) {
				t.Fatalf("WriteSnapshot with a failing %s: %v, want the injected fault", fault.name, err)
			}
			if _, err := os.Stat(filepath.Join(dir, SnapshotFileName(log.next))); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the failed snapshot exists: %v", err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("directory holds %d files after the failure, want only the old snapshot", len(entries))
			}
			if now, err := os.ReadFile(oldPath); err != nil || !bytes.Equal(now, old) {
				t.Fatalf("old snapshot changed: %v", err)
			}
			_, load, err := LoadLatestSnapshot(dir, log.next, options)
			if err != nil || !load.Found || load.Offset != oldOffset {
				t.Fatalf("load after the failure: %+v, %v; want the old snapshot at %d", load, err, oldOffset)
			}
		})
	}
}

// A block reservation whose rename fails reports the error, keeps the
// durable end, and the next reservation succeeds after it.
func TestFileBlockReserverRenameFault(t *testing.T) {
	faults := storage.NewFaultFS()
	path := filepath.Join(t.TempDir(), "producer-ids")
	reserver, err := OpenFileBlockReserver(faults, path)
	if err != nil {
		t.Fatal(err)
	}
	if start, err := reserver.ReserveBlock(context.Background(), 10); err != nil || start != 0 {
		t.Fatalf("first block: %d, %v", start, err)
	}
	faults.FailRename(1)
	if _, err := reserver.ReserveBlock(context.Background(), 10); !errors.Is(err, storage.ErrInjected) {
		t.Fatalf("reservation with a failing rename: %v, want the injected fault", err)
	}
	reopened, err := OpenFileBlockReserver(faults, path)
	if err != nil || reopened.end != 10 {
		t.Fatalf("reopened after the failure: end %v, %v; want 10", reopened, err)
	}
	if start, err := reserver.ReserveBlock(context.Background(), 10); err != nil || start != 10 {
		t.Fatalf("block after the failure: %d, %v; want 10", start, err)
	}
}
