package producers

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestIDAllocatorUniqueAcrossReopenAndCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "producer-ids")
	seen := make(map[int64]bool)
	take := func(allocator *IDAllocator, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			id, err := allocator.Next()
			if err != nil {
				t.Fatal(err)
			}
			if id < 0 || seen[id] {
				t.Fatalf("id %d handed out twice (or negative)", id)
			}
			seen[id] = true
		}
	}
	// Each "crash" drops the allocator mid-block without any shutdown
	// call: there is none, the durable state is only the file.
	for restart, n := range []int{3, 10, 0, 25, 1} {
		allocator, err := OpenIDAllocator(nil, path, 10)
		if err != nil {
			t.Fatalf("restart %d: %v", restart, err)
		}
		take(allocator, n)
	}
	// A crash during a block reservation leaves a temporary file behind;
	// it is ignored and the next reservation overwrites it.
	if err := os.WriteFile(path+".tmp", []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	allocator, err := OpenIDAllocator(nil, path, 10)
	if err != nil {
		t.Fatal(err)
	}
	take(allocator, 5)
	// 44 ids taken in blocks of 10 across 6 opens: blocks reserved were
	// [0,10) [10,20) [20,30) [30,40) [40,50) [50,60) [60,70), none reused.
	reserver, err := OpenFileBlockReserver(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if reserver.end != 70 {
		t.Fatalf("reserved end %d, want 70", reserver.end)
	}
	for id := range seen {
		if id >= reserver.end {
			t.Fatalf("id %d beyond the durable reservation %d", id, reserver.end)
		}
	}
}

func TestIDAllocatorConcurrentNext(t *testing.T) {
	allocator, err := OpenIDAllocator(nil, filepath.Join(t.TempDir(), "producer-ids"), 7)
	if err != nil {
		t.Fatal(err)
	}
	const workers, perWorker = 8, 100
	ids := make([][]int64, workers)
	var wait sync.WaitGroup
	for w := 0; w < workers; w++ {
		wait.Add(1)
		go func() {
			defer wait.Done()
			for i := 0; i < perWorker; i++ {
				id, err := allocator.Next()
				if err != nil {
					t.Error(err)
					return
				}
				ids[w] = append(ids[w], id)
			}
		}()
	}
	wait.Wait()
	seen := make(map[int64]bool)
	for _, list := range ids {
		for _, id := range list {
			if seen[id] {
				t.Fatalf("id %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != workers*perWorker {
		t.Fatalf("%d unique ids, want %d", len(seen), workers*perWorker)
	}
}

func TestIDAllocatorRejectsCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "producer-ids")
	allocator, err := OpenIDAllocator(nil, path, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := allocator.Next(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[12] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenIDAllocator(nil, path, 10); err == nil {
		t.Fatalf("corrupt id file accepted")
	}
	if err := os.WriteFile(path, []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenIDAllocator(nil, path, 10); err == nil {
		t.Fatalf("short id file accepted")
	}
	if _, err := OpenIDAllocator(nil, filepath.Join(t.TempDir(), "x"), 0); err == nil {
		t.Fatalf("block size 0 accepted")
	}
}

// failingReserver fails its first reservation.
type failingReserver struct {
	calls int
	next  int64
}

func (r *failingReserver) ReserveBlock(size int64) (int64, error) {
	r.calls++
	if r.calls == 1 {
		return 0, errors.New("disk full")
	}
	start := r.next
	r.next += size
	return start, nil
}

func TestIDAllocatorReservationError(t *testing.T) {
	reserver := &failingReserver{next: 100}
	allocator, err := NewIDAllocator(reserver, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := allocator.Next(); err == nil {
		t.Fatalf("Next succeeded although the reservation failed")
	}
	for want := int64(100); want < 105; want++ {
		id, err := allocator.Next()
		if err != nil || id != want {
			t.Fatalf("Next = %d %v, want %d", id, err, want)
		}
	}
	if reserver.calls != 4 {
		t.Fatalf("%d reservations for 5 ids in blocks of 2 after one failure, want 4", reserver.calls)
	}
}
