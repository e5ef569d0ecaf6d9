package producers

import (
	"testing"
	"time"
)

// hotPath is the owner's per-batch work for an accepted in-order batch.
func hotPath(tb testing.TB, state *PartitionState, b Batch) {
	verdict, err := state.Check(b)
	if err != nil || verdict.Duplicate {
		tb.Fatalf("in-order batch %+v: %+v %v", b, verdict, err)
	}
	state.Update(b)
}

// inOrderBatches returns a function producing the next in-order batch of 10
// records, round robin over producers, with offsets as a log would assign.
func inOrderBatches(producers int) func() Batch {
	next := make([]int32, producers)
	var offset int64
	turn := 0
	return func() Batch {
		producer := turn % producers
		turn++
		b := Batch{ProducerID: int64(producer), BaseSequence: next[producer], LastSequence: LastSequence(next[producer], 10),
			FirstOffset: offset, LastOffset: offset + 9, MaxTimestamp: offset}
		next[producer] = nextSequence(b.LastSequence)
		offset += 10
		return b
	}
}

func TestInOrderHotPathDoesNotAllocate(t *testing.T) {
	state := NewPartitionState(Options{})
	batches := inOrderBatches(3)
	for i := 0; i < 3; i++ { // create the entries first: that allocates once per producer
		hotPath(t, state, batches())
	}
	if allocs := testing.AllocsPerRun(1000, func() { hotPath(t, state, batches()) }); allocs != 0 {
		t.Fatalf("Check+Update allocates %v times per in-order batch, want 0", allocs)
	}
	retry := Batch{ProducerID: 0, BaseSequence: 0, LastSequence: 9}
	state = NewPartitionState(Options{})
	state.Update(retry)
	if allocs := testing.AllocsPerRun(1000, func() {
		if verdict, err := state.Check(retry); err != nil || !verdict.Duplicate {
			t.Fatalf("retry not a duplicate: %+v %v", verdict, err)
		}
	}); allocs != 0 {
		t.Fatalf("duplicate Check allocates %v times, want 0", allocs)
	}
}

func benchmarkInOrder(b *testing.B, producers int) {
	state := NewPartitionState(Options{ExpirationAge: time.Hour})
	batches := inOrderBatches(producers)
	for i := 0; i < producers; i++ {
		hotPath(b, state, batches())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		hotPath(b, state, batches())
	}
}

func BenchmarkCheckUpdateInOrder1Producer(b *testing.B)     { benchmarkInOrder(b, 1) }
func BenchmarkCheckUpdateInOrder1000Producers(b *testing.B) { benchmarkInOrder(b, 1000) }

func BenchmarkCheckDuplicate(b *testing.B) {
	state := NewPartitionState(Options{})
	batches := inOrderBatches(1)
	var window []Batch
	for i := 0; i < MaxCachedBatches; i++ {
		batch := batches()
		hotPath(b, state, batch)
		window = append(window, batch)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if verdict, err := state.Check(window[i%MaxCachedBatches]); err != nil || !verdict.Duplicate {
			b.Fatalf("not a duplicate: %+v %v", verdict, err)
		}
		i++
	}
}
