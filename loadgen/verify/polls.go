package verify

import (
	"fmt"
	"sync"
)

// PolledRecord is one record a poll returned.
type PolledRecord struct {
	Offset int64
	// Record is the record's id, 0 for a control record (returned to
	// clients that keep them).
	Record RecordID
}

// PollSink receives one consumer's assignment changes and polls, in the
// order they happened. PollTracker is one; a worker subprocess forwards
// them to the runner, which replays them into one.
type PollSink interface {
	// Assigned: the consumer was given partitions; their next poll may
	// start anywhere (at the group's committed offset, or wherever the
	// consumer seeks on assignment).
	Assigned(partitions []int32)
	// Revoked: the consumer lost partitions (revoked or lost).
	Revoked(partitions []int32)
	// Rewound: the consumer moved its own position on partitions (a
	// seek, or a transactional session resetting to its committed
	// offsets after an abort); nil means every partition.
	Rewound(partitions []int32)
	// Polled: one poll returned records, in offset order as returned, of
	// partition. settled is false when the consumer's assignment changed
	// while the poll was in flight (see PollGate).
	Polled(partition int32, records []PolledRecord, settled bool)
}

// PollTracker follows the polls of one consumer (one client, over its
// life) of one topic and keeps, per partition, the offset of the last
// record polled since the partition was assigned or the consumer rewound
// it. Two consecutive polled offsets a then b of a partition, with no
// assignment change or rewind in between, are a jump when b != a+1:
//
//   - b <= a is a non-monotonic poll: the consumer's position went back
//     (or repeated an offset) without a seek or a rebalance;
//   - b > a+1 is a gap: the offsets between were not returned. A gap is
//     legitimate when every offset in it holds a record the consumer is
//     not meant to see: a transaction marker, a record of an aborted
//     transaction (read_committed), a compacted record. JudgePolls counts
//     the records in gaps that a reference reader with the same isolation
//     level did return: those are poll skips.
//
// A poll that was not settled (the assignment changed while it was in
// flight) is not compared with what came before it, and what came after
// it is not compared with it: its records may belong to either side of
// the change. Records within one poll of a partition are always compared.
//
// The tracker also notes every polled record in its topic's
// OffsetObservations, for inconsistent offsets. It is not safe for
// concurrent use: feed it from one goroutine, or through a PollGate.
// Memory is one word per partition plus one PollJump per jump (under
// read_committed, about one per transaction marker).
type PollTracker struct {
	name         string
	observations *OffsetObservations // nil: records are not noted
	observer     Observer
	// last holds, per partition, the offset of the last record polled
	// since the partition was assigned or rewound; a partition absent
	// has no reference: its next poll may start anywhere.
	last   map[int32]int64
	polled uint64
	jumps  []PollJump
}

// PollJump is two consecutive polled offsets of a partition that are not
// adjacent: a gap (To > From+1) or a move back (To <= From).
type PollJump struct {
	Partition int32
	From, To  int64
}

// Backwards reports whether the jump went back or stayed put.
func (j PollJump) Backwards() bool { return j.To <= j.From }

// NewPollTracker returns a tracker of the consumer called name that notes
// its records in observations as observer (observations may be nil).
func NewPollTracker(name string, observations *OffsetObservations, observer Observer) *PollTracker {
	return &PollTracker{name: name, observations: observations, observer: observer, last: make(map[int32]int64)}
}

// Name returns the consumer's name.
func (t *PollTracker) Name() string { return t.name }

// Assigned implements PollSink.
func (t *PollTracker) Assigned(partitions []int32) { t.forget(partitions) }

// Revoked implements PollSink.
func (t *PollTracker) Revoked(partitions []int32) { t.forget(partitions) }

// Rewound implements PollSink.
func (t *PollTracker) Rewound(partitions []int32) {
	if partitions == nil {
		clear(t.last)
		return
	}
	t.forget(partitions)
}

func (t *PollTracker) forget(partitions []int32) {
	for _, partition := range partitions {
		delete(t.last, partition)
	}
}

// Polled implements PollSink.
func (t *PollTracker) Polled(partition int32, records []PolledRecord, settled bool) {
	if len(records) == 0 {
		return
	}
	previous, ok := t.last[partition]
	ok = ok && settled
	for _, record := range records {
		if ok && record.Offset != previous+1 {
			t.jumps = append(t.jumps, PollJump{Partition: partition, From: previous, To: record.Offset})
		}
		previous, ok = record.Offset, true
		t.polled++
		if t.observations != nil {
			t.observations.Observe(t.observer, partition, record.Offset, record.Record)
		}
	}
	if settled {
		t.last[partition] = previous
	} else {
		delete(t.last, partition)
	}
}

// PolledRecords returns how many records the consumer polled.
func (t *PollTracker) PolledRecords() uint64 { return t.polled }

// Jumps returns the jumps seen so far.
func (t *PollTracker) Jumps() []PollJump { return t.jumps }

// SkipReference says which offsets of a topic hold records a consumer must
// not jump over.
type SkipReference interface {
	// Skipped counts the records a consumer must return among offsets
	// (from, to) of partition, and names the first of them.
	Skipped(partition int32, from, to int64) (count uint64, first int64, firstID RecordID)
}

// EveryOffset is the reference for a consumer that must return every
// offset below ends (per partition): a read_uncommitted reader that keeps
// control records, of a log that is never compacted. Offsets at or above a
// partition's end, and partitions without one, are not judged.
func EveryOffset(ends map[int32]int64) SkipReference { return everyOffset(ends) }

type everyOffset map[int32]int64

func (e everyOffset) Skipped(partition int32, from, to int64) (uint64, int64, RecordID) {
	end, ok := e[partition]
	high := min(to, end)
	if !ok || from+1 >= high {
		return 0, 0, 0
	}
	return uint64(high - from - 1), from + 1, 0
}

// PollVerdict is the verdict on the polls of some consumers.
type PollVerdict struct {
	// Polled counts records polled.
	Polled uint64
	// Skips counts records the reference returned in gaps between
	// consecutive polls (Counts.PollSkips).
	Skips uint64
	// NonMonotonic counts moves back (Counts.NonMonotonicPolls).
	NonMonotonic uint64
	// Anomalies names the first maxPollAnomalies of each kind.
	Anomalies []PollAnomaly
}

// maxPollAnomalies bounds the anomalies of each kind a verdict names.
const maxPollAnomalies = 10

// PollAnomaly is one poll skip or non-monotonic poll.
type PollAnomaly struct {
	Consumer string
	PollJump
	// Skipped counts the records jumped over (0 for a move back), the
	// first of them at FirstOffset, FirstRecord.
	Skipped     uint64
	FirstOffset int64
	FirstRecord RecordID
}

// String renders the anomaly, e.g. "pipeline worker 1 polled partition 3
// offset 17 then offset 25 without a reassignment or seek, skipping 6
// records (the first: offset 18, producer 0 seq 40)".
func (a PollAnomaly) String() string {
	text := fmt.Sprintf("%s polled partition %d offset %d then offset %d without a reassignment or seek", a.Consumer, a.Partition, a.From, a.To)
	if a.Backwards() {
		return text + ": non-monotonic"
	}
	first := fmt.Sprintf("offset %d", a.FirstOffset)
	if a.FirstRecord != 0 {
		first += ", " + a.FirstRecord.String()
	}
	return fmt.Sprintf("%s, skipping %d records (the first: %s)", text, a.Skipped, first)
}

// JudgePolls judges the polls of trackers, consumers of one topic, against
// reference (nil: gaps are not judged, only moves back).
func JudgePolls(trackers []*PollTracker, reference SkipReference) PollVerdict {
	var verdict PollVerdict
	var skipsNamed, backsNamed int
	for _, tracker := range trackers {
		verdict.Polled += tracker.polled
		for _, jump := range tracker.jumps {
			anomaly := PollAnomaly{Consumer: tracker.name, PollJump: jump}
			switch {
			case jump.Backwards():
				verdict.NonMonotonic++
				if backsNamed < maxPollAnomalies {
					verdict.Anomalies = append(verdict.Anomalies, anomaly)
					backsNamed++
				}
			case reference != nil:
				anomaly.Skipped, anomaly.FirstOffset, anomaly.FirstRecord = reference.Skipped(jump.Partition, jump.From, jump.To)
				verdict.Skips += anomaly.Skipped
				if anomaly.Skipped > 0 && skipsNamed < maxPollAnomalies {
					verdict.Anomalies = append(verdict.Anomalies, anomaly)
					skipsNamed++
				}
			}
		}
	}
	return verdict
}

// PollMark is what PollGate.Mark returns before a poll.
type PollMark struct{ epoch uint64 }

// PollGate puts the events of one consumer in one order for its sink: the
// assignment callbacks, which the client runs on its own goroutines, and
// the polls, reported by the polling goroutine. The polling goroutine
// calls Mark before each poll and Polled with its records after; a poll
// during which an assignment callback ran is reported unsettled. The
// sequence it guards against, with a cooperative rebalance moving
// partition 3 away and back:
//
//  1. the worker's poll returns records 100-120 of partition 3;
//  2. the client revokes partition 3, then assigns it again, and the
//     group's committed offset for it is 90;
//  3. the worker reports its poll: without the gate, the tracker would
//     see assignment, then 100-120, then the next poll's 90: a move back.
//
// With the gate, step 3's poll is unsettled (the epoch moved since Mark):
// nothing is compared across it. The client drops buffered fetches of
// revoked partitions before its revoke callback runs, so a poll marked
// after a callback holds no records fetched before it. mu guards epoch
// and serializes calls into sink.
type PollGate struct {
	mu    sync.Mutex
	sink  PollSink
	epoch uint64 // assignment changes so far
}

// NewPollGate returns a gate in front of sink.
func NewPollGate(sink PollSink) *PollGate { return &PollGate{sink: sink} }

// Assigned forwards an assignment.
func (g *PollGate) Assigned(partitions []int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.epoch++
	g.sink.Assigned(partitions)
}

// Revoked forwards a revocation (or loss).
func (g *PollGate) Revoked(partitions []int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.epoch++
	g.sink.Revoked(partitions)
}

// Rewound forwards a rewind, which the polling goroutine makes itself
// between its polls.
func (g *PollGate) Rewound(partitions []int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sink.Rewound(partitions)
}

// Mark is called before a poll.
func (g *PollGate) Mark() PollMark {
	g.mu.Lock()
	defer g.mu.Unlock()
	return PollMark{epoch: g.epoch}
}

// Polled forwards the records of partition one poll returned, the poll
// begun at mark.
func (g *PollGate) Polled(mark PollMark, partition int32, records []PolledRecord) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sink.Polled(partition, records, mark.epoch == g.epoch)
}
