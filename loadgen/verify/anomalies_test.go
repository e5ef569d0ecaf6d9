package verify

import (
	"slices"
	"strings"
	"testing"
)

// TestLostWritesAndUnseen: a record missing below an offset that was read
// is a lost write; a record missing from a partition's tail, or whose
// offset the producer never learnt, is unseen; lost is their sum.
func TestLostWritesAndUnseen(t *testing.T) {
	// Two producers, 100 records each, over 2 partitions: partition p
	// holds offsets 0..99 (seq s of producer q at offset 2*(s/2)+q).
	type dropped struct {
		partition int32
		from, to  int64 // offsets [from, to) are not read
	}
	cases := []struct {
		name                     string
		drop                     []dropped
		unknownOffsets           bool // the producer got no offsets (acks=0)
		lost, lostWrites, unseen uint64
		violations               int
	}{
		{name: "clean stream"},
		{name: "hole in the middle", drop: []dropped{{0, 10, 13}}, lost: 3, lostWrites: 3, violations: 1},
		{name: "first offset of a partition", drop: []dropped{{1, 0, 1}}, lost: 1, lostWrites: 1, violations: 1},
		{name: "tail of a partition", drop: []dropped{{1, 95, 100}}, lost: 5, unseen: 5, violations: 1},
		{name: "whole partition", drop: []dropped{{1, 0, 100}}, lost: 100, unseen: 100, violations: 1},
		{name: "hole and tail", drop: []dropped{{0, 40, 42}, {1, 98, 100}}, lost: 4, lostWrites: 2, unseen: 2, violations: 1},
		{name: "offsets unknown", drop: []dropped{{0, 10, 13}}, unknownOffsets: true, lost: 3, unseen: 3, violations: 1},
	}
	for _, test := range cases {
		t.Run(test.name, func(t *testing.T) {
			ledger := NewLedger(testRunID, 2)
			streams := make([][]syntheticRecord, 2)
			for seq := range uint64(100) {
				for producer := range uint32(2) {
					partition := int32(seq % 2)
					offset := int64(len(streams[partition]))
					log := ledger.Producer(producer)
					if err := log.RecordSent(seq, FateCommit); err != nil {
						t.Fatal(err)
					}
					at := Ack{Partition: partition, Offset: offset}
					if test.unknownOffsets {
						at.Offset = UnknownOffset
					}
					log.RecordAcknowledged(seq, at)
					streams[partition] = append(streams[partition], syntheticRecord{partition: partition, offset: offset,
						header: Header{RunID: testRunID, Producer: producer, Sequence: seq}})
				}
			}
			for _, drop := range test.drop {
				streams[drop.partition] = slices.DeleteFunc(streams[drop.partition], func(r syntheticRecord) bool {
					return r.offset >= drop.from && r.offset < drop.to
				})
			}
			counts := check(ledger, ReadCommitted, streams)
			if counts.Lost != test.lost || counts.LostWrites != test.lostWrites || counts.Unseen != test.unseen {
				t.Fatalf("lost %d (lost writes %d, unseen %d), want %d (%d, %d)", counts.Lost, counts.LostWrites, counts.Unseen,
					test.lost, test.lostWrites, test.unseen)
			}
			violations := counts.Violations(ReadCommitted)
			if len(violations) != test.violations {
				t.Fatalf("violations %v, want %d", violations, test.violations)
			}
			if test.lost > 0 && !strings.Contains(violations[0], ViolationLost) {
				t.Fatalf("violation %q does not name the loss", violations[0])
			}
		})
	}
}

// TestLostWritesOfALaterStage: a pipeline's output (stage 1) is read at
// its own offsets; a missing record is a lost write when an output record
// whose input was acknowledged at a higher offset of the same partition
// was read.
func TestLostWritesOfALaterStage(t *testing.T) {
	ledger, streams := syntheticRun(t, 1, 60, 1)
	output := make([]syntheticRecord, 0, len(streams[0]))
	for index, record := range streams[0] {
		if seq := record.header.Sequence; seq == 20 || seq >= 57 {
			continue // 20 is a hole, 57..59 the missing tail
		}
		record.header.Stage = 1
		record.offset = int64(1000 + 2*index) // the output topic's own offsets
		output = append(output, record)
	}
	checker := NewChecker(ledger, ReadCommitted, 1)
	for _, record := range output {
		checker.Observe(record.partition, record.offset, NewValue(record.header, 64))
	}
	counts := checker.Finish()
	if counts.Lost != 4 || counts.LostWrites != 1 || counts.Unseen != 3 {
		t.Fatalf("counts = %+v, want 4 lost: 1 lost write (seq 20), 3 unseen (57..59)", counts)
	}
	if reached, ok := checker.Reached(0); !ok || reached != 56 {
		t.Fatalf("position reached = %d, %v; want input offset 56", reached, ok)
	}
}

// observation is one read of one offset in a synthetic inconsistency
// test.
type observation struct {
	reader    string
	partition int32
	offset    int64
	record    RecordID
}

// TestInconsistentOffsets: an offset read with two different records,
// by two readers or by one reader twice, is inconsistent for every reader
// that read it, whatever the order of the reads; agreeing reads and
// control records (id 0) are not.
func TestInconsistentOffsets(t *testing.T) {
	a, b, c := NewRecordID(0, 1), NewRecordID(1, 1), NewRecordID(2, 7)
	cases := []struct {
		name  string
		reads []observation
		// want is each reader's inconsistent offsets; total the topic's.
		want map[string]uint64
	}{
		{name: "readers agree", reads: []observation{
			{"read_committed", 0, 5, a}, {"polls", 0, 5, a}, {"table", 0, 5, a}, {"polls", 0, 5, a},
		}, want: map[string]uint64{"read_committed": 0, "polls": 0, "table": 0}},
		{name: "two readers disagree", reads: []observation{
			{"read_committed", 0, 5, a}, {"polls", 0, 5, b}, {"read_committed", 0, 6, c}, {"polls", 0, 6, c},
		}, want: map[string]uint64{"read_committed": 1, "polls": 1}},
		{name: "third reader agrees with one side", reads: []observation{
			{"read_committed", 1, 9, a}, {"polls", 1, 9, b}, {"table", 1, 9, a},
		}, want: map[string]uint64{"read_committed": 1, "polls": 1, "table": 1}},
		{name: "one reader twice", reads: []observation{
			{"polls", 2, 0, a}, {"polls", 2, 0, b}, {"read_committed", 2, 1, a},
		}, want: map[string]uint64{"polls": 1, "read_committed": 0}},
		{name: "same record at two offsets is not inconsistent", reads: []observation{
			{"read_committed", 0, 1, a}, {"read_committed", 0, 2, a}, {"polls", 0, 2, a},
		}, want: map[string]uint64{"read_committed": 0, "polls": 0}},
		{name: "control records are not records", reads: []observation{
			{"read_uncommitted", 0, 3, 0}, {"read_committed", 0, 3, a},
		}, want: map[string]uint64{"read_uncommitted": 0, "read_committed": 0}},
		{name: "offsets far apart", reads: []observation{
			{"read_committed", 0, 1 << 40, a}, {"polls", 0, 1 << 40, b}, {"polls", 0, 3, c}, {"read_committed", 0, 3, c},
		}, want: map[string]uint64{"read_committed": 1, "polls": 1}},
	}
	for _, test := range cases {
		t.Run(test.name, func(t *testing.T) {
			// Every order of the reads gives the same counts: try the
			// given order and its reverse.
			for _, reads := range [][]observation{test.reads, reversed(test.reads)} {
				observations := NewOffsetObservations("topic")
				for _, read := range reads {
					observations.Observe(observations.Observer(read.reader), read.partition, read.offset, read.record)
				}
				for reader, want := range test.want {
					observer := observations.Observer(reader)
					if got := observations.Inconsistent(observer); got != want {
						t.Errorf("reads %v: %s has %d inconsistent offsets, want %d", reads, reader, got, want)
					}
					if examples := observations.Inconsistencies(observer, 5); uint64(len(examples)) != want {
						t.Errorf("%s: %d examples, want %d", reader, len(examples), want)
					} else if want > 0 && !strings.Contains(examples[0].String(), reader) {
						t.Errorf("example %q does not name %s", examples[0], reader)
					}
				}
			}
		})
	}
}

func reversed(reads []observation) []observation {
	out := slices.Clone(reads)
	slices.Reverse(out)
	return out
}

func TestInconsistencyNamesEveryRead(t *testing.T) {
	observations := NewOffsetObservations("t")
	rc, polls := observations.Observer("read_committed"), observations.Observer("polls")
	observations.Observe(rc, 3, 45, NewRecordID(0, 7))
	observations.Observe(polls, 3, 45, NewRecordID(1, 3))
	got := observations.Inconsistencies(polls, 1)[0].String()
	want := "topic t partition 3 offset 45: producer 0 seq 7 (read by read_committed) vs producer 1 seq 3 (read by polls)"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if observations.Distinct(rc) != 1 || observations.Distinct(polls) != 1 {
		t.Fatalf("distinct offsets: %d, %d", observations.Distinct(rc), observations.Distinct(polls))
	}
}

// TestViolationsNameEveryNewClass: each anomaly class, alone, is one
// violation naming it; together they are all listed.
func TestViolationsNameEveryNewClass(t *testing.T) {
	cases := []struct {
		counts Counts
		want   string
	}{
		{Counts{Lost: 3, LostWrites: 2, Unseen: 1}, "3 acknowledged-but-lost (2 lost writes, 1 unseen)"},
		{Counts{InconsistentOffsets: 2}, "2 " + ViolationInconsistentOffsets},
		{Counts{PollSkips: 5}, "5 " + ViolationPollSkips},
		{Counts{NonMonotonicPolls: 1}, "1 " + ViolationNonMonotonicPolls},
	}
	var all Counts
	for _, test := range cases {
		violations := test.counts.Violations(ReadUncommitted)
		if len(violations) != 1 || violations[0] != test.want {
			t.Errorf("%+v: violations %q, want [%q]", test.counts, violations, test.want)
		}
		all.Lost += test.counts.Lost
		all.LostWrites += test.counts.LostWrites
		all.Unseen += test.counts.Unseen
		all.InconsistentOffsets += test.counts.InconsistentOffsets
		all.PollSkips += test.counts.PollSkips
		all.NonMonotonicPolls += test.counts.NonMonotonicPolls
	}
	if got := all.Violations(ReadCommitted); len(got) != len(cases) {
		t.Errorf("all classes: %q", got)
	}
	if got := (Counts{Read: 10, Unique: 10}).Violations(ReadCommitted); got != nil {
		t.Errorf("clean counts: %q", got)
	}
}

func TestRecordID(t *testing.T) {
	id := NewRecordID(5, 1<<39)
	if !id.Loadgen() || id.Producer() != 5 || id.Sequence() != 1<<39 || id.String() != "producer 5 seq 549755813888" {
		t.Fatalf("id %v: producer %d seq %d", id, id.Producer(), id.Sequence())
	}
	if zero := NewRecordID(0, 0); zero == 0 || !zero.Loadgen() {
		t.Fatal("producer 0 seq 0 has no id")
	}
	if big := NewRecordID(1<<30, 1); big.Loadgen() || big == 0 {
		t.Fatalf("producer beyond the layout: %v", big)
	}
	value := NewValue(Header{RunID: 1, Producer: 2, Sequence: 3}, 40)
	if IdentifyValue(value) != NewRecordID(2, 3) {
		t.Fatal("value id differs from header id")
	}
	if foreign := IdentifyValue([]byte("x")); foreign.Loadgen() || foreign == IdentifyValue([]byte("y")) {
		t.Fatal("foreign values not told apart")
	}
}
