package loadgen

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// tail is a partition's records from some offset: the values a recovery
// reads back.
type tail struct {
	offsets []int64
	values  [][]byte
}

func (t *tail) append(offset int64, runID uint64, producer uint32, seq uint64) {
	t.offsets = append(t.offsets, offset)
	t.values = append(t.values, verify.NewValue(verify.Header{RunID: runID, Producer: producer, Sequence: seq}, 64))
}

func record(seq uint64) *kgo.Record {
	return &kgo.Record{Partition: 0, Value: verify.NewValue(verify.Header{RunID: 7, Sequence: seq}, 64)}
}

// The seed's §3.1 single writer: it sends 0..4; 0 is acknowledged at
// offset 10; 1 is written at 11 but its acknowledgement is lost; 2 is
// acknowledged at 12; 3's request is lost; 4 times out unwritten. The
// recovery reads [11, end) and must resend exactly 3 and 4.
func TestSingleWriterRecoveryDecidesFromTheTail(t *testing.T) {
	t.Parallel()
	state := newWriterState()
	state.knownGood = 10
	state.acknowledged(10) // seq 0 at offset 10: nothing unresolved, so everything below 11 is accounted for
	state.failed(1, record(1))
	state.acknowledged(12) // seq 2 acknowledged after 1 failed: knownGood must not move past 1's unknown fate
	state.failed(3, record(3))
	state.failed(4, record(4))
	if !state.needsRecovery() {
		t.Fatal("failed records but no recovery needed")
	}
	from, pending := state.recoveryStart()
	if from != 11 || !slices.Equal(pending, []uint64{1, 3, 4}) {
		t.Fatalf("recovery reads from %d for %v, want 11 for [1 3 4]", from, pending)
	}
	var partition tail
	partition.append(11, 7, 0, 1)  // the lost acknowledgement: written
	partition.append(12, 7, 0, 2)  // acknowledged
	partition.append(13, 7, 1, 3)  // another producer's record: not ours
	partition.append(14, 8, 0, 4)  // another run's record: not ours
	partition.append(11, 7, 0, 1)  // a stale re-read of offset 11: not a second copy
	partition.append(9, 7, 0, 3)   // below the read: ignored
	partition.append(15, 7, 0, 99) // beyond end: ignored
	found := tailSequences(7, 0, from, 15, partition.offsets, partition.values)
	if found[1] != 1 || found[2] != 1 || len(found) != 2 {
		t.Fatalf("tail sequences = %v, want 1 and 2 once each", found)
	}
	decision := state.finishRecovery(pending, found, 15)
	if !slices.Equal(decision.writtenSeqs, []uint64{1}) || len(decision.resend) != 2 || decision.copies != 0 {
		t.Fatalf("decision: written %v, resend %d records, copies %d; want written [1], resend 3 and 4", decision.writtenSeqs,
			len(decision.resend), decision.copies)
	}
	for i, want := range []uint64{3, 4} {
		if header, err := verify.DecodeHeader(decision.resend[i].Value); err != nil || header.Sequence != want {
			t.Errorf("resend[%d] = %+v (%v), want sequence %d", i, header, err, want)
		}
	}
	if state.needsRecovery() || state.knownGood != 15 {
		t.Fatalf("after recovery: needs %v, knownGood %d; want resolved and 15", state.needsRecovery(), state.knownGood)
	}
	// The resends are acknowledged at 15 and 16 with nothing unresolved:
	// the known-good offset follows.
	state.acknowledged(16)
	if state.knownGood != 17 {
		t.Fatalf("knownGood = %d after a clean acknowledgement at 16, want 17", state.knownGood)
	}
}

// A recovery that finds a failed record twice in the tail reports the
// copy: the method's own duplicates are counted, not hidden.
func TestSingleWriterRecoveryCountsCopies(t *testing.T) {
	t.Parallel()
	state := newWriterState()
	state.failed(0, record(0))
	from, pending := state.recoveryStart()
	var partition tail
	partition.append(0, 7, 0, 0)
	partition.append(1, 7, 0, 0)
	decision := state.finishRecovery(pending, tailSequences(7, 0, from, 2, partition.offsets, partition.values), 2)
	if len(decision.written) != 1 || len(decision.resend) != 0 || decision.copies != 1 {
		t.Fatalf("written %d resend %d copies %d, want 1, 0, 1", len(decision.written), len(decision.resend), decision.copies)
	}
	if !slices.Equal(decision.writtenSeqs, []uint64{0}) {
		t.Fatalf("written %v, want [0]", decision.writtenSeqs)
	}
}

func TestSplitBudget(t *testing.T) {
	t.Parallel()
	total := uint64(0)
	for index := range 3 {
		total += splitBudget(10, 3, index)
	}
	if total != 10 || splitBudget(10, 3, 0) != 4 || splitBudget(10, 3, 2) != 3 {
		t.Fatalf("split of 10 over 3: %d %d %d", splitBudget(10, 3, 0), splitBudget(10, 3, 1), splitBudget(10, 3, 2))
	}
}
