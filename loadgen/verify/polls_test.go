package verify

import (
	"strings"
	"sync"
	"testing"
)

// pollStep is one event of a synthetic consumer: an assignment change, a
// rewind, or a poll of partition returning offsets.
type pollStep struct {
	kind      string // assign, revoke, rewind, rewind-all, poll, unsettled
	partition int32
	offsets   []int64
}

func assign(p int32) pollStep { return pollStep{kind: "assign", partition: p} }
func revoke(p int32) pollStep { return pollStep{kind: "revoke", partition: p} }
func rewind(p int32) pollStep { return pollStep{kind: "rewind", partition: p} }
func poll(p int32, offsets ...int64) pollStep {
	return pollStep{kind: "poll", partition: p, offsets: offsets}
}
func unsettled(p int32, offsets ...int64) pollStep {
	return pollStep{kind: "unsettled", partition: p, offsets: offsets}
}
func span(from, to int64) []int64 { // [from, to]
	var offsets []int64
	for offset := from; offset <= to; offset++ {
		offsets = append(offsets, offset)
	}
	return offsets
}

// feed replays steps into tracker; every polled offset holds the record
// the reference holds there (or a record of its own where the reference
// has none).
func feed(tracker *PollTracker, steps []pollStep) {
	for _, step := range steps {
		switch step.kind {
		case "assign":
			tracker.Assigned([]int32{step.partition})
		case "revoke":
			tracker.Revoked([]int32{step.partition})
		case "rewind":
			tracker.Rewound([]int32{step.partition})
		case "rewind-all":
			tracker.Rewound(nil)
		case "poll", "unsettled":
			records := make([]PolledRecord, len(step.offsets))
			for index, offset := range step.offsets {
				records[index] = PolledRecord{Offset: offset, Record: NewRecordID(uint32(step.partition), uint64(offset))}
			}
			tracker.Polled(step.partition, records, step.kind == "poll")
		}
	}
}

// committedReference is what a read_committed read-back of partitions 0
// and 1 returned: offsets 0..29, except a transaction marker at 10 and 21
// and an aborted transaction at 11..14; its read ended at offset 30.
func committedReference() (*OffsetObservations, SkipReference) {
	observations := NewOffsetObservations("input")
	readBack := observations.Observer("read_committed")
	for partition := range int32(2) {
		for offset := range int64(30) {
			if offset == 10 || offset == 21 || (offset >= 11 && offset <= 14) {
				continue
			}
			observations.Observe(readBack, partition, offset, NewRecordID(uint32(partition), uint64(offset)))
		}
	}
	return observations, observations.Reference(readBack, map[int32]int64{0: 30, 1: 30})
}

// TestPollSkipsAndNonMonotonicPolls: jumps over offsets the reference read
// returned are skips, jumps over markers and aborted records are not, and
// a move back is non-monotonic, unless an assignment change or a rewind
// (or an unsettled poll) came between the two polls.
func TestPollSkipsAndNonMonotonicPolls(t *testing.T) {
	cases := []struct {
		name         string
		steps        []pollStep
		skips, backs uint64
		// named is a fragment of the first anomaly's text.
		named string
	}{
		{name: "clean: every committed offset, gaps over markers and aborted records",
			steps: []pollStep{assign(0), poll(0, span(0, 9)...), poll(0, span(15, 20)...), poll(0, span(22, 29)...)}},
		{name: "clean: two partitions interleaved",
			steps: []pollStep{assign(0), assign(1), poll(0, span(0, 5)...), poll(1, span(0, 9)...), poll(0, span(6, 9)...), poll(1, 15)}},
		{name: "skip of committed records",
			steps: []pollStep{assign(0), poll(0, span(0, 4)...), poll(0, 7, 8, 9)}, skips: 2,
			named: "polled partition 0 offset 4 then offset 7 without a reassignment or seek, skipping 2 records (the first: offset 5, producer 0 seq 5)"},
		{name: "skip across a marker and a committed record",
			steps: []pollStep{assign(0), poll(0, span(0, 9)...), poll(0, span(16, 20)...)}, skips: 1, named: "offset 9 then offset 16"},
		{name: "skip within one poll",
			steps: []pollStep{assign(1), poll(1, 0, 1, 2, 5, 6)}, skips: 2},
		{name: "jump after a reassignment",
			steps: []pollStep{assign(0), poll(0, span(0, 4)...), revoke(0), assign(0), poll(0, 8, 9)}},
		{name: "jump after an assignment alone",
			steps: []pollStep{assign(0), poll(0, span(0, 4)...), assign(0), poll(0, 8, 9)}},
		{name: "jump after a revoke alone",
			steps: []pollStep{assign(0), poll(0, span(0, 4)...), revoke(0), poll(0, 8, 9)}},
		{name: "jump after a rewind",
			steps: []pollStep{assign(0), poll(0, span(0, 4)...), rewind(0), poll(0, 8, 9)}},
		{name: "jump after a rewind of every partition",
			steps: []pollStep{assign(0), poll(0, span(0, 4)...), {kind: "rewind-all"}, poll(0, 8, 9)}},
		{name: "jump around an unsettled poll",
			steps: []pollStep{assign(0), poll(0, span(0, 4)...), unsettled(0, 8, 9), poll(0, 25)}},
		{name: "skip inside an unsettled poll",
			steps: []pollStep{assign(0), unsettled(0, 0, 1, 4)}, skips: 2},
		{name: "beyond the reference's end: not judged",
			steps: []pollStep{assign(0), poll(0, span(25, 29)...), poll(0, 40)}},
		{name: "straddling the reference's end",
			steps: []pollStep{assign(0), poll(0, 26), poll(0, 40)}, skips: 3},
		{name: "a revoke of another partition resets nothing here",
			steps: []pollStep{assign(0), assign(1), poll(0, span(0, 4)...), revoke(1), poll(0, 7)}, skips: 2},
		{name: "move back",
			steps: []pollStep{assign(0), poll(0, span(0, 9)...), poll(0, span(5, 9)...)}, backs: 1,
			named: "polled partition 0 offset 9 then offset 5 without a reassignment or seek: non-monotonic"},
		{name: "same offset twice",
			steps: []pollStep{assign(0), poll(0, span(0, 4)...), poll(0, 4, 5)}, backs: 1},
		{name: "move back within one poll",
			steps: []pollStep{assign(0), poll(0, 3, 4, 2, 3)}, backs: 1},
		{name: "move back after a rebalance",
			steps: []pollStep{assign(0), poll(0, span(0, 9)...), revoke(0), assign(0), poll(0, span(5, 9)...)}},
		{name: "move back after a seek",
			steps: []pollStep{assign(0), poll(0, span(0, 9)...), rewind(0), poll(0, span(5, 9)...)}},
		{name: "move back after an unsettled poll",
			steps: []pollStep{assign(0), unsettled(0, span(0, 9)...), poll(0, span(5, 9)...)}},
		{name: "move back on another partition's revoke",
			steps: []pollStep{assign(0), assign(1), poll(0, span(0, 9)...), revoke(1), assign(1), poll(0, 5)}, backs: 1},
	}
	for _, test := range cases {
		t.Run(test.name, func(t *testing.T) {
			observations, reference := committedReference()
			tracker := NewPollTracker("worker 1", observations, observations.Observer("polls"))
			feed(tracker, test.steps)
			verdict := JudgePolls([]*PollTracker{tracker}, reference)
			if verdict.Skips != test.skips || verdict.NonMonotonic != test.backs {
				t.Fatalf("skips %d, non-monotonic %d; want %d and %d (jumps %v)", verdict.Skips, verdict.NonMonotonic,
					test.skips, test.backs, tracker.Jumps())
			}
			if test.skips+test.backs > 0 && len(verdict.Anomalies) == 0 {
				t.Fatal("anomalies counted but none named")
			}
			if test.named != "" && !strings.Contains(verdict.Anomalies[0].String(), test.named) {
				t.Fatalf("first anomaly %q does not say %q", verdict.Anomalies[0], test.named)
			}
			if polls := observations.Observer("polls"); observations.Inconsistent(polls) != 0 {
				t.Fatalf("polls agree with the read-back, yet %d inconsistent offsets", observations.Inconsistent(polls))
			}
		})
	}
}

// TestPollSkipsOfAReaderThatMustSeeEveryOffset: a read_uncommitted reader
// keeping control records returns every offset; any gap below its end is
// a skip.
func TestPollSkipsOfAReaderThatMustSeeEveryOffset(t *testing.T) {
	cases := []struct {
		name  string
		steps []pollStep
		skips uint64
	}{
		{"every offset", []pollStep{assign(0), poll(0, span(0, 19)...)}, 0},
		{"one gap", []pollStep{assign(0), poll(0, span(0, 9)...), poll(0, span(12, 19)...)}, 2},
		{"gap past the end", []pollStep{assign(0), poll(0, 18, 25)}, 1},
	}
	for _, test := range cases {
		t.Run(test.name, func(t *testing.T) {
			tracker := NewPollTracker("read-back", nil, 0)
			feed(tracker, test.steps)
			if verdict := JudgePolls([]*PollTracker{tracker}, EveryOffset(map[int32]int64{0: 20})); verdict.Skips != test.skips {
				t.Fatalf("skips %d, want %d", verdict.Skips, test.skips)
			}
		})
	}
}

// TestUnreturnedRecords: records a read_committed consumer polled at
// offsets the read_committed read-back did not return (the aborted
// transaction at 11..14) are counted, below the
// read-back's end only; offsets the read-back returned are not.
func TestUnreturnedRecords(t *testing.T) {
	cases := []struct {
		name  string
		steps []pollStep
		want  uint64
		first int64
	}{
		{"committed records only", []pollStep{assign(0), poll(0, span(0, 9)...), poll(0, span(15, 20)...), poll(0, span(22, 29)...)}, 0, 0},
		{"an aborted transaction polled", []pollStep{assign(0), poll(0, append(span(0, 9), span(11, 20)...)...)}, 4, 11},
		{"two of its records, on partition 1", []pollStep{assign(1), poll(1, 9, 12, 13, 15)}, 2, 12},
		{"beyond the read-back's end", []pollStep{assign(0), poll(0, 29, 30, 31, 1<<40)}, 0, 0},
	}
	for _, test := range cases {
		t.Run(test.name, func(t *testing.T) {
			observations, _ := committedReference()
			polls := observations.Observer("polls")
			feed(NewPollTracker("worker", observations, polls), test.steps)
			count, examples := observations.Unreturned(polls, observations.Observer("read_committed"), map[int32]int64{0: 30, 1: 30}, 3)
			if count != test.want {
				t.Fatalf("%d unreturned, want %d (%v)", count, test.want, examples)
			}
			if count > 0 && (examples[0].Offset != test.first || len(examples) != int(min(count, 3))) {
				t.Fatalf("examples %+v, want the first at offset %d", examples, test.first)
			}
		})
	}
}

// TestPolledRecordsFeedInconsistentOffsets: a worker that polls another
// record than the read-back at an offset makes the offset inconsistent
// for both.
func TestPolledRecordsFeedInconsistentOffsets(t *testing.T) {
	observations, _ := committedReference()
	tracker := NewPollTracker("worker 0", observations, observations.Observer("polls"))
	tracker.Assigned([]int32{0})
	tracker.Polled(0, []PolledRecord{{Offset: 3, Record: NewRecordID(0, 3)}, {Offset: 4, Record: NewRecordID(7, 7)}}, true)
	for _, reader := range []string{"polls", "read_committed"} {
		if got := observations.Inconsistent(observations.Observer(reader)); got != 1 {
			t.Errorf("%s: %d inconsistent offsets, want 1", reader, got)
		}
	}
}

// TestPollGateSettlesRacingRebalances walks the sequence PollGate guards
// against: a poll returns records, then a rebalance revokes and assigns
// the partition again before the worker reports the poll, and the next
// poll starts lower, at the committed offset. Through the gate the
// report is unsettled and nothing is a move back; straight into the
// tracker the same order reads as one.
func TestPollGateSettlesRacingRebalances(t *testing.T) {
	records := func(from, to int64) []PolledRecord {
		var out []PolledRecord
		for _, offset := range span(from, to) {
			out = append(out, PolledRecord{Offset: offset, Record: NewRecordID(0, uint64(offset))})
		}
		return out
	}
	gated := NewPollTracker("gated", nil, 0)
	gate := NewPollGate(gated)
	gate.Assigned([]int32{0})
	gate.Polled(gate.Mark(), 0, records(0, 5))
	mark := gate.Mark()
	// PollFetches returns 6..9; before the worker reports them the
	// client revokes and reassigns partition 0, committed at 6.
	gate.Revoked([]int32{0})
	gate.Assigned([]int32{0})
	gate.Polled(mark, 0, records(6, 9))
	gate.Polled(gate.Mark(), 0, records(6, 9))
	if verdict := JudgePolls([]*PollTracker{gated}, nil); verdict.NonMonotonic != 0 || verdict.Polled != 14 {
		t.Fatalf("through the gate: %+v", verdict)
	}

	ungated := NewPollTracker("ungated", nil, 0)
	ungated.Assigned([]int32{0})
	ungated.Polled(0, records(0, 5), true)
	ungated.Revoked([]int32{0})
	ungated.Assigned([]int32{0})
	ungated.Polled(0, records(6, 9), true)
	ungated.Polled(0, records(6, 9), true)
	if verdict := JudgePolls([]*PollTracker{ungated}, nil); verdict.NonMonotonic != 1 {
		t.Fatalf("without the gate the stale report reads as a move back: %+v", verdict)
	}
}

// TestPollGateIsSafeForCallbacksAndPolls feeds a gate from a callback
// goroutine and a polling goroutine at once (run with -race); every
// record reaches the tracker.
func TestPollGateIsSafeForCallbacksAndPolls(t *testing.T) {
	tracker := NewPollTracker("worker", NewOffsetObservations("t"), 0)
	gate := NewPollGate(tracker)
	var wait sync.WaitGroup
	wait.Add(2)
	go func() {
		defer wait.Done()
		for range 200 {
			gate.Revoked([]int32{1})
			gate.Assigned([]int32{1})
		}
	}()
	go func() {
		defer wait.Done()
		for offset := range int64(1000) {
			gate.Polled(gate.Mark(), 0, []PolledRecord{{Offset: offset, Record: NewRecordID(0, uint64(offset))}})
		}
	}()
	wait.Wait()
	if verdict := JudgePolls([]*PollTracker{tracker}, nil); verdict.Polled != 1000 || verdict.NonMonotonic != 0 {
		t.Fatalf("verdict %+v", verdict)
	}
}
