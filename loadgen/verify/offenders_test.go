package verify

import (
	"strings"
	"testing"
)

// The sampler names the offending records of one read: a second copy
// (with where the first was read), a record read after a later one of its
// producer on the partition, an aborted record visible under
// read_committed, one nobody sent, and an acknowledged record never read
// past its offset (a lost write).
func TestOffenderSamplerNamesOffendingRecords(t *testing.T) {
	const runID = 9
	ledger := NewLedger(runID, 1)
	log := NewTrackedLog(ledger.Producer(0))
	for seq := range uint64(5) {
		fate := FateCommit
		if seq == 3 {
			fate = FateAbort
		}
		if err := log.RecordSent(seq, fate); err != nil {
			t.Fatal(err)
		}
		if fate == FateCommit {
			log.RecordAcknowledged(seq, Ack{Partition: 0, Offset: int64(seq), Writer: Writer{ProducerID: -1}})
		}
	}
	checker := NewChecker(ledger, ReadCommitted, 0)
	sampler := NewOffenderSampler([]*TrackedLog{log}, ledger, SamplerSpec{Topic: "t", InputTopic: "t", Isolation: ReadCommitted, Checker: checker})
	read := func(offset int64, producer uint32, seq uint64) {
		value := NewValue(Header{RunID: runID, Producer: producer, Sequence: seq}, HeaderSize)
		checker.Observe(0, offset, value)
		sampler.Observe(ReadRecord{Partition: 0, Offset: offset, Value: value, Writer: Writer{ProducerID: -1}})
	}
	read(0, 0, 0)
	read(2, 0, 2)
	read(5, 0, 0) // a second copy
	read(6, 0, 3) // aborted, visible
	read(7, 0, 9) // never sent
	read(8, 0, 4)
	examples := sampler.Finish()
	want := map[string]string{
		OffenderDuplicated:     "topic t partition 0 offset 5: producer 0 seq 0, read before at partition 0 offset 0",
		OffenderAbortedVisible: "offset 6: producer 0 seq 3 (aborted or fenced) visible",
		OffenderPhantom:        "offset 7: producer 0 seq 9 was never sent",
		OffenderLost:           "lost write: producer 0 seq 1 acknowledged at topic t partition 0 offset 1",
	}
	for kind, text := range want {
		if len(examples[kind]) != 1 || !strings.Contains(examples[kind][0], text) {
			t.Errorf("%s examples %q, want one containing %q", kind, examples[kind], text)
		}
	}
	if len(examples[OffenderReordered]) != 0 {
		t.Errorf("reordered examples %q: a copy or an aborted record is not a reordering", examples[OffenderReordered])
	}
}
