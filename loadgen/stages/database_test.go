package stages

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func keyed(key string, offset int64) *kgo.Record {
	return &kgo.Record{Key: []byte(key), Offset: offset}
}

// The dedup window drops a key it holds and a key repeated within one
// poll, and forgets keys below its floor.
func TestDedupWindowFiltersSeenKeys(t *testing.T) {
	window := dedupWindow{size: 3, highest: 10}
	if window.floor() != 8 {
		t.Fatalf("floor = %d with highest 10 and size 3, want 8 (offsets 8, 9, 10 held)", window.floor())
	}
	if (dedupWindow{size: 3, highest: -1}).floor() != 0 {
		t.Fatal("an empty window's floor must be 0")
	}
	records := []*kgo.Record{keyed("a", 11), keyed("b", 12), keyed("a", 13), keyed("c", 14)}
	kept := window.filter(records, map[string]bool{"b": true})
	if len(kept) != 2 || string(kept[0].Key) != "a" || kept[0].Offset != 11 || string(kept[1].Key) != "c" {
		t.Fatalf("kept %v, want a@11 and c@14", kept)
	}
}

// On assignment the stored-offsets stage starts each partition at its
// stored offset, and leaves partitions without one where kgo put them.
func TestSeekOffsetsMovesToStoredOffsets(t *testing.T) {
	assigned := map[string]map[int32]kgo.Offset{
		"in":    {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()},
		"other": {1: kgo.NewOffset().At(3)},
	}
	seeked := seekOffsets(assigned, "in", map[int32]int64{1: 42, 7: 9})
	if got := seeked["in"][1].EpochOffset(); got.Offset != 42 || got.Epoch != -1 {
		t.Errorf("partition 1 at %+v, want offset 42 without an epoch", got)
	}
	if got := seeked["in"][0].EpochOffset(); got != kgo.NewOffset().AtStart().EpochOffset() {
		t.Errorf("partition 0 moved to %+v without a stored offset", got)
	}
	if got := seeked["other"][1].EpochOffset(); got.Offset != 3 {
		t.Errorf("another topic moved to %+v", got)
	}
	if _, added := seeked["in"][7]; added {
		t.Error("a stored offset of a partition not assigned was added")
	}
}
