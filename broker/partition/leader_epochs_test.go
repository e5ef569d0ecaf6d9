package partition

import (
	"slices"
	"testing"

	"github.com/exactly-eos/exactly/broker/storage"
)

// TestLeaderEpochCacheEndOffsets checks OffsetForLeaderEpoch's answers
// against Kafka's LeaderEpochFileCache rules, and that the checkpoint file
// survives a reopen and follows truncations.
func TestLeaderEpochCacheEndOffsets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cache, err := openLeaderEpochCache(storage.OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if epoch, end := cache.endOffsetFor(0, 0); epoch != -1 || end != -1 {
		t.Fatalf("empty cache: (%d, %d), want (-1, -1)", epoch, end)
	}
	for _, e := range []epochEntry{{1, 0}, {3, 100}, {6, 250}} {
		if err := cache.assign(e.epoch, e.startOffset); err != nil {
			t.Fatal(err)
		}
	}
	if err := cache.assign(2, 300); err != nil || len(cache.entries) != 3 {
		t.Fatalf("an older epoch was recorded: %+v, %v", cache.entries, err)
	}
	const logEnd = 400
	for _, c := range []struct {
		requested, epoch int32
		end              int64
	}{
		{6, 6, logEnd}, // the current epoch ends at the log end
		{3, 3, 250},    // a known epoch ends where the next starts
		{4, 3, 250},    // unknown: the largest epoch below it, the next start above
		{5, 3, 250},
		{0, 0, 0},   // below every known epoch: itself, the first start
		{7, -1, -1}, // above every known epoch
		{-1, -1, -1},
	} {
		if epoch, end := cache.endOffsetFor(c.requested, logEnd); epoch != c.epoch || end != c.end {
			t.Errorf("epoch %d: (%d, %d), want (%d, %d)", c.requested, epoch, end, c.epoch, c.end)
		}
	}
	reopened, err := openLeaderEpochCache(storage.OSFS{}, dir)
	if err != nil || !slices.Equal(reopened.entries, cache.entries) {
		t.Fatalf("reopened checkpoint: %+v, %v; want %+v", reopened.entries, err, cache.entries)
	}
	if err := reopened.truncateFromEnd(250); err != nil {
		t.Fatal(err)
	}
	again, err := openLeaderEpochCache(storage.OSFS{}, dir)
	if err != nil || !slices.Equal(again.entries, []epochEntry{{1, 0}, {3, 100}}) {
		t.Fatalf("after truncation to 250: %+v, %v", again.entries, err)
	}
}
