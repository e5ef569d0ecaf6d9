//go:build invariants

package producers

import (
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/internal/invariants"
)

// TestInvariantCachedSequencesConsecutive (invariants build tag only): a
// cached batch whose sequences were corrupted makes the next Update fail
// the ring's invariant instead of silently skewing duplicate detection.
func TestInvariantCachedSequencesConsecutive(t *testing.T) {
	s := NewPartitionState(Options{})
	batch := func(base int32, offset int64) Batch {
		return Batch{ProducerID: 7, ProducerEpoch: 0, BaseSequence: base, LastSequence: base + 2,
			FirstOffset: offset, LastOffset: offset + 2, MaxTimestamp: 1}
	}
	for i := range int32(2) {
		b := batch(3*i, int64(3*i))
		if _, err := s.Check(b); err != nil {
			t.Fatal(err)
		}
		s.Update(b)
	}
	entry := s.producers[7]
	entry.batches[entry.newest].lastSequence += 10 // corrupt the newest batch's range

	defer func() {
		recovered := recover()
		if !invariants.IsViolation(recovered) {
			t.Fatalf("recovered %v, want an invariant violation", recovered)
		}
		if message := recovered.(invariants.Violation).Message; !strings.Contains(message, "follows") {
			t.Fatalf("violation %q, want one about consecutive sequences", message)
		}
	}()
	s.Update(batch(6, 6))
	t.Fatal("Update accepted a ring with non-consecutive sequences")
}
