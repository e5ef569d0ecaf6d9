package producers

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
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

func (r *failingReserver) ReserveBlock(_ context.Context, size int64) (int64, error) {
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

// gatedReserver hands out consecutive blocks from 0; every reservation
// after the first `free` ones waits for a value on release (or its
// context's end).
type gatedReserver struct {
	mu      sync.Mutex
	calls   int
	next    int64
	free    int
	release chan struct{}
	started chan struct{} // gets a value when a gated reservation starts
}

func newGatedReserver(free int) *gatedReserver {
	return &gatedReserver{free: free, release: make(chan struct{}), started: make(chan struct{}, 10)}
}

func (r *gatedReserver) ReserveBlock(ctx context.Context, size int64) (int64, error) {
	r.mu.Lock()
	r.calls++
	gated := r.calls > r.free
	r.mu.Unlock()
	if gated {
		r.started <- struct{}{}
		select {
		case <-r.release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	start := r.next
	r.next += size
	return start, nil
}

func (r *gatedReserver) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

func waitStarted(t *testing.T, r *gatedReserver) {
	t.Helper()
	select {
	case <-r.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no reservation started")
	}
}

// With prefetching, the next block is reserved in the background once 90%
// of the current one is handed out; Next does not wait for it, and takes
// its ids once the current block is used up.
func TestIDAllocatorPrefetches(t *testing.T) {
	reserver := newGatedReserver(1)
	allocator, err := NewPrefetchingIDAllocator(reserver, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer allocator.Close()
	next := func(want int64) {
		t.Helper()
		if id, err := allocator.Next(); err != nil || id != want {
			t.Fatalf("Next = %d, %v; want %d", id, err, want)
		}
	}
	for want := range int64(8) {
		next(want)
	}
	if calls := reserver.callCount(); calls != 1 {
		t.Fatalf("%d reservations after 8 of 10 ids, want 1", calls)
	}
	next(8) // 90% handed out: the next block is reserved in the background
	waitStarted(t, reserver)
	next(9) // while that reservation waits
	done := make(chan int64)
	go func() {
		id, err := allocator.Next() // the block is used up: waits for the prefetch
		if err != nil {
			t.Error(err)
		}
		done <- id
	}()
	select {
	case id := <-done:
		t.Fatalf("Next returned %d before the reservation was granted", id)
	case <-time.After(50 * time.Millisecond):
	}
	close(reserver.release)
	if id := <-done; id != 10 {
		t.Fatalf("first id of the prefetched block: %d, want 10", id)
	}
	if calls := reserver.callCount(); calls != 2 {
		t.Fatalf("%d reservations, want 2: a Next must wait for the prefetch, not reserve again", calls)
	}
	for want := int64(11); want < 35; want++ {
		next(want)
	}
}

// Close cancels a reservation under way and waits for it; Next fails
// after Close.
func TestIDAllocatorCloseCancelsPrefetch(t *testing.T) {
	reserver := newGatedReserver(1)
	allocator, err := NewPrefetchingIDAllocator(reserver, 10)
	if err != nil {
		t.Fatal(err)
	}
	for range 9 {
		if _, err := allocator.Next(); err != nil {
			t.Fatal(err)
		}
	}
	waitStarted(t, reserver)
	closed := make(chan struct{})
	go func() {
		allocator.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the reservation under way")
	}
	if _, err := allocator.Next(); !errors.Is(err, ErrAllocatorClosed) {
		t.Fatalf("Next after Close: %v, want ErrAllocatorClosed", err)
	}
	allocator.Close()
}

// A prefetch that fails is not fatal: the Next that needs a block reserves
// one itself.
func TestIDAllocatorPrefetchFailure(t *testing.T) {
	reserver := &failingReserver{calls: -1, next: 100} // the second reservation fails
	allocator, err := NewPrefetchingIDAllocator(reserver, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer allocator.Close()
	seen := map[int64]bool{}
	for range 25 {
		id, err := allocator.Next()
		for err != nil { // only if a Next met the failing prefetch under way
			id, err = allocator.Next()
		}
		if seen[id] {
			t.Fatalf("id %d handed out twice", id)
		}
		seen[id] = true
	}
}

// Many goroutines, small blocks, prefetching: every id once.
func TestIDAllocatorConcurrentPrefetchingNext(t *testing.T) {
	reserver := newGatedReserver(1 << 30)
	allocator, err := NewPrefetchingIDAllocator(reserver, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer allocator.Close()
	const workers, perWorker = 8, 200
	ids := make([][]int64, workers)
	var wait sync.WaitGroup
	for w := range workers {
		wait.Add(1)
		go func() {
			defer wait.Done()
			for range perWorker {
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
	seen := map[int64]bool{}
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
