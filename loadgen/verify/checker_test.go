package verify

import (
	"errors"
	"slices"
	"testing"
)

const testRunID = 0x5eed

// syntheticRecord is one record of a synthetic read-back stream, at the
// offset it was acknowledged at.
type syntheticRecord struct {
	partition int32
	offset    int64
	header    Header
}

// syntheticRun sends `perProducer` records from each of `producers`
// producers over `partitions` partitions (seq % partitions), acknowledges
// all of them in the ledger, and returns the ledger and the per-partition
// stream a perfect cluster would return.
func syntheticRun(t *testing.T, producers, perProducer int, partitions int32) (*Ledger, [][]syntheticRecord) {
	t.Helper()
	ledger := NewLedger(testRunID, producers)
	streams := make([][]syntheticRecord, partitions)
	for seq := range uint64(perProducer) {
		for producer := range uint32(producers) {
			log := ledger.Producer(producer)
			if err := log.RecordSent(seq, FateCommit); err != nil {
				t.Fatal(err)
			}
			partition := int32(seq % uint64(partitions))
			offset := int64(len(streams[partition]))
			log.RecordAcknowledged(seq, Ack{Partition: partition, Offset: offset})
			streams[partition] = append(streams[partition], syntheticRecord{
				partition: partition, offset: offset,
				header: Header{RunID: testRunID, Producer: producer, Sequence: seq, SendTime: int64(seq)},
			})
		}
	}
	return ledger, streams
}

func check(ledger *Ledger, isolation Isolation, streams [][]syntheticRecord) Counts {
	checker := NewChecker(ledger, isolation, 0)
	for _, stream := range streams {
		for _, record := range stream {
			checker.Observe(record.partition, record.offset, NewValue(record.header, 64))
		}
	}
	return checker.Finish()
}

func TestCheckerCleanStream(t *testing.T) {
	ledger, streams := syntheticRun(t, 3, 1000, 4)
	counts := check(ledger, ReadCommitted, streams)
	want := Counts{Read: 3000, Unique: 3000}
	if counts != want {
		t.Fatalf("counts = %+v, want %+v", counts, want)
	}
	if v := counts.Violations(ReadCommitted); v != nil {
		t.Fatalf("violations on a clean stream: %v", v)
	}
}

func TestCheckerFindsEachLoss(t *testing.T) {
	ledger, streams := syntheticRun(t, 2, 500, 3)
	// Drop 7 records spread over partitions and producers.
	dropped := 0
	for partition := range streams {
		streams[partition] = slices.DeleteFunc(streams[partition], func(r syntheticRecord) bool {
			drop := r.header.Sequence%71 == 5 && r.header.Producer == uint32(partition%2)
			if drop {
				dropped++
			}
			return drop
		})
	}
	if dropped == 0 {
		t.Fatal("test dropped nothing")
	}
	counts := check(ledger, ReadCommitted, streams)
	if counts.Lost != uint64(dropped) || counts.LostWrites+counts.Unseen != counts.Lost || counts.Duplicated != 0 || counts.Reordered != 0 {
		t.Fatalf("dropped %d: counts = %+v", dropped, counts)
	}
	if len(counts.Violations(ReadCommitted)) != 1 {
		t.Fatalf("violations = %v, want only the loss", counts.Violations(ReadCommitted))
	}
}

func TestCheckerFindsEachDuplicate(t *testing.T) {
	ledger, streams := syntheticRun(t, 2, 300, 2)
	// Record 10 of producer 0 appears three times (2 extra copies), records
	// 20 and 21 of producer 1 twice each, the second copy right after the
	// first as a producer retry would write it.
	var rewritten []syntheticRecord
	for _, record := range streams[0] {
		rewritten = append(rewritten, record)
		h := record.header
		switch {
		case h.Producer == 0 && h.Sequence == 10:
			rewritten = append(rewritten, record, record)
		case h.Producer == 1 && (h.Sequence == 20 || h.Sequence == 22):
			rewritten = append(rewritten, record)
		}
	}
	streams[0] = rewritten
	counts := check(ledger, ReadCommitted, streams)
	if counts.Duplicated != 4 || counts.Lost != 0 || counts.Reordered != 0 || counts.Unique != 600 {
		t.Fatalf("counts = %+v, want 4 duplicates and nothing else", counts)
	}
}

func TestCheckerFindsEachReordering(t *testing.T) {
	ledger, streams := syntheticRun(t, 1, 400, 2)
	// Swap two adjacent pairs in partition 1: each swap puts one record
	// after a higher sequence of the same producer.
	stream := streams[1]
	stream[3], stream[4] = stream[4], stream[3]
	stream[50], stream[51] = stream[51], stream[50]
	// Move one record three places later: the three it now follows are
	// higher, but only the moved record itself is out of order.
	moved := stream[100]
	copy(stream[100:103], stream[101:104])
	stream[103] = moved
	counts := check(ledger, ReadCommitted, streams)
	if counts.Reordered != 3 || counts.Lost != 0 || counts.Duplicated != 0 {
		t.Fatalf("counts = %+v, want exactly 3 reordered", counts)
	}
	// The same sequence on another partition is not a reordering: order is
	// only defined within a partition.
	ledger, streams = syntheticRun(t, 1, 10, 2)
	streams[0], streams[1] = streams[1], streams[0]
	if counts := check(ledger, ReadCommitted, streams); counts.Reordered != 0 {
		t.Fatalf("cross-partition order counted as reordering: %+v", counts)
	}
}

// transactionalRun sends 10 transactions of 10 records from one producer on
// 2 partitions; transactions 2 and 7 are sent to-abort and aborted,
// transaction 5 is meant to commit but its commit errors (uncertain).
func transactionalRun(t *testing.T) (*Ledger, []syntheticRecord, []syntheticRecord) {
	t.Helper()
	ledger := NewLedger(testRunID, 1)
	log := ledger.Producer(0)
	var committedView, uncommittedView []syntheticRecord
	offsets := [2]int64{}
	for txn := range uint64(10) {
		fate := FateCommit
		if txn == 2 || txn == 7 {
			fate = FateAbort
		}
		for i := range uint64(10) {
			seq := txn*10 + i
			if err := log.RecordSent(seq, fate); err != nil {
				t.Fatal(err)
			}
			partition := int32(seq % 2)
			log.RecordAcknowledged(seq, Ack{Partition: partition, Offset: offsets[partition]})
			record := syntheticRecord{partition: partition, offset: offsets[partition], header: Header{RunID: testRunID, Sequence: seq, Fate: fate}}
			offsets[partition]++
			uncommittedView = append(uncommittedView, record)
			if fate == FateCommit {
				committedView = append(committedView, record)
			}
		}
		outcome := TransactionCommitted
		switch {
		case fate == FateAbort:
			outcome = TransactionAborted
		case txn == 5:
			outcome = TransactionUnknown
		}
		log.RecordTransactionEnd(txn*10, txn*10+10, outcome)
	}
	return ledger, committedView, uncommittedView
}

func TestCheckerAbortedReads(t *testing.T) {
	ledger, committedView, uncommittedView := transactionalRun(t)

	counts := check(ledger, ReadCommitted, [][]syntheticRecord{committedView})
	want := Counts{Read: 80, Unique: 80, AmbiguousPresent: 10}
	if counts != want {
		t.Fatalf("read_committed view: counts = %+v, want %+v", counts, want)
	}

	// A broken read_committed that leaks three records of aborted
	// transaction 7.
	leaky := slices.DeleteFunc(slices.Clone(uncommittedView), func(r syntheticRecord) bool {
		return r.header.Fate == FateAbort && (r.header.Sequence < 70 || r.header.Sequence > 72)
	})
	counts = check(ledger, ReadCommitted, [][]syntheticRecord{leaky})
	if counts.AbortedVisible != 3 {
		t.Fatalf("leaky read_committed: counts = %+v, want 3 aborted-visible", counts)
	}
	if v := counts.Violations(ReadCommitted); len(v) != 1 {
		t.Fatalf("leaky read_committed: violations = %v", v)
	}

	// read_uncommitted sees all 20 aborted records: counted, not a violation.
	counts = check(ledger, ReadUncommitted, [][]syntheticRecord{uncommittedView})
	if counts.AbortedVisible != 20 || counts.Lost != 0 {
		t.Fatalf("read_uncommitted: counts = %+v", counts)
	}
	if v := counts.Violations(ReadUncommitted); v != nil {
		t.Fatalf("read_uncommitted violations = %v, want none", v)
	}

	// Committed transaction 3 missing entirely is loss; the uncertain
	// transaction 5 missing is not.
	missing := slices.DeleteFunc(slices.Clone(committedView), func(r syntheticRecord) bool {
		return r.header.Sequence/10 == 3 || r.header.Sequence/10 == 5
	})
	counts = check(ledger, ReadCommitted, [][]syntheticRecord{missing})
	if counts.Lost != 10 || counts.LostWrites != 10 || counts.AmbiguousAbsent != 10 || counts.AmbiguousPresent != 0 {
		t.Fatalf("missing transactions: counts = %+v", counts)
	}
}

func TestCheckerPhantomsForeignAndAmbiguous(t *testing.T) {
	ledger, streams := syntheticRun(t, 2, 50, 1)
	// Producer 1's records 40..49 errored; 40..44 were written anyway.
	for seq := uint64(40); seq < 50; seq++ {
		ledger.Producer(1).RecordErrored(seq)
	}
	streams[0] = slices.DeleteFunc(streams[0], func(r syntheticRecord) bool {
		return r.header.Producer == 1 && r.header.Sequence >= 45
	})
	checker := NewChecker(ledger, ReadCommitted, 0)
	for _, record := range streams[0] {
		checker.Observe(0, record.offset, NewValue(record.header, 40))
	}
	checker.Observe(0, 100, NewValue(Header{RunID: testRunID, Producer: 0, Sequence: 50}, 40)) // beyond what was sent
	checker.Observe(0, 101, NewValue(Header{RunID: testRunID, Producer: 9, Sequence: 0}, 40))  // no such producer
	checker.Observe(0, 102, NewValue(Header{RunID: testRunID + 1}, 40))                        // another run
	checker.Observe(0, 103, NewValue(Header{RunID: testRunID, Stage: 1}, 40))                  // another stage
	checker.Observe(0, 104, []byte("not a loadgen record"))
	counts := checker.Finish()
	want := Counts{Read: 95 + 5, Unique: 95, Phantom: 2, Foreign: 3, AmbiguousPresent: 5, AmbiguousAbsent: 5}
	if counts != want {
		t.Fatalf("counts = %+v, want %+v", counts, want)
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	header := Header{RunID: 1<<63 + 5, Producer: 7, Sequence: 1 << 40, SendTime: 1700000000123456789, Fate: FateAbort, Stage: 1}
	value := NewValue(header, 100)
	if len(value) != 100 {
		t.Fatalf("len = %d", len(value))
	}
	decoded, err := DecodeHeader(value)
	if err != nil || decoded != header {
		t.Fatalf("decoded %+v, %v; want %+v", decoded, err, header)
	}
	if err := SetStage(value, 0); err != nil {
		t.Fatal(err)
	}
	if decoded, _ := DecodeHeader(value); decoded.Stage != 0 || decoded.Fate != FateAbort {
		t.Fatalf("after SetStage: %+v", decoded)
	}
	if _, err := DecodeHeader(value[:HeaderSize-1]); !errors.Is(err, ErrNotLoadgenRecord) {
		t.Fatalf("short value: err = %v", err)
	}
	value[2] = 9
	if _, err := DecodeHeader(value); err == nil {
		t.Fatal("unknown version accepted")
	}
	if err := NewLedger(1, 1).Producer(0).RecordSent(3, FateCommit); err == nil {
		t.Fatal("sequence gap accepted by the ledger")
	}
}

// TestCheckerMemoryIsBounded checks that a million records cost bits, not
// map entries: the checker's state is a bitmap per producer plus one word
// per (producer, partition).
func TestCheckerMemoryIsBounded(t *testing.T) {
	const records = 1_000_000
	ledger := NewLedger(testRunID, 1)
	log := ledger.Producer(0)
	for seq := range uint64(records) {
		_ = log.RecordSent(seq, FateCommit)
		log.RecordAcknowledged(seq, Ack{Partition: int32(seq % 8), Offset: int64(seq / 8)})
	}
	checker := NewChecker(ledger, ReadCommitted, 0)
	value := make([]byte, HeaderSize)
	for seq := range uint64(records) {
		Header{RunID: testRunID, Sequence: seq}.Encode(value)
		checker.Observe(int32(seq%8), int64(seq/8), value)
	}
	counts := checker.Finish()
	if counts.Unique != records || counts.Lost != 0 {
		t.Fatalf("counts = %+v", counts)
	}
	if words := len(checker.seen[0].words); words > 2*records/64 {
		t.Fatalf("seen bitmap has %d words for %d records", words, records)
	}
	if len(checker.highest) != 8 || len(checker.reached) != 8 {
		t.Fatalf("highest has %d entries, reached %d, want one per partition", len(checker.highest), len(checker.reached))
	}
	if acks := cap(log.acks); acks > 2*records {
		t.Fatalf("ack positions hold %d slots for %d records", acks, records)
	}
}
