package producers

import (
	"errors"
	"math"
	"testing"
	"time"
)

// fakeClock is a settable clock for Options.Now.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func newTestState(clock *fakeClock) *PartitionState {
	return NewPartitionState(Options{ExpirationAge: time.Hour, Now: clock.Now})
}

// testLog is a partition log that records only batch headers, the way the
// owner is meant to drive a PartitionState: Check, append, Update.
type testLog struct {
	state   *PartitionState
	batches []Batch
	next    int64
}

// produce runs Check and, if it says so, appends and Updates. It returns
// the verdict, whether the batch was written, and the error.
func (l *testLog) produce(b Batch) (Verdict, bool, error) {
	verdict, err := l.state.Check(b)
	if err != nil || verdict.Duplicate {
		return verdict, false, err
	}
	count := int64(b.LastSequence) - int64(b.BaseSequence) + 1
	if count <= 0 {
		count += math.MaxInt32 + 1
	}
	if b.ProducerID < 0 {
		count = 1
	}
	b.FirstOffset, b.LastOffset = l.next, l.next+count-1
	l.next += count
	l.batches = append(l.batches, b)
	l.state.Update(b)
	return verdict, true, nil
}

// batch returns an idempotent batch of count records.
func batch(producerID int64, epoch int16, base, count int32) Batch {
	return Batch{ProducerID: producerID, ProducerEpoch: epoch, BaseSequence: base,
		LastSequence: LastSequence(base, count), MaxTimestamp: 1000 + int64(base)}
}

func TestLastSequence(t *testing.T) {
	tests := []struct{ base, count, want int32 }{
		{0, 1, 0},
		{0, 10, 9},
		{math.MaxInt32, 1, math.MaxInt32},
		{math.MaxInt32, 2, 0},
		{math.MaxInt32 - 1, 4, 1},
		{5, math.MaxInt32, 3},
	}
	for _, test := range tests {
		if got := LastSequence(test.base, test.count); got != test.want {
			t.Errorf("LastSequence(%d, %d) = %d, want %d", test.base, test.count, got, test.want)
		}
	}
	if nextSequence(math.MaxInt32) != 0 || nextSequence(41) != 42 {
		t.Errorf("nextSequence does not wrap from MaxInt32 to 0")
	}
}

func TestCheckRules(t *testing.T) {
	const pid = 7
	// five is pid 7 epoch 0 with 6 batches of 2 records: sequences 0..11 at
	// offsets 0..11; the window holds the newest 5 (sequences 2..11).
	var five []Batch
	for i := int32(0); i < 6; i++ {
		five = append(five, batch(pid, 0, 2*i, 2))
	}
	tests := []struct {
		name    string
		setup   []Batch
		probe   Batch
		wantErr error
		// wantDuplicate gives the expected original offsets; nil means
		// "written" when wantErr is nil.
		wantDuplicate *[2]int64
	}{
		{name: "non-idempotent batch appends", probe: Batch{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LastSequence: -1}},
		{name: "unknown producer at sequence 0 appends", probe: batch(pid, 3, 0, 5)},
		{name: "unknown producer at sequence 5 is unknown", probe: batch(pid, 0, 5, 1), wantErr: ErrUnknownProducerID},
		{name: "next sequence appends", setup: five[:2], probe: batch(pid, 0, 4, 7)},
		{name: "gap is out of order", setup: five[:2], probe: batch(pid, 0, 5, 1), wantErr: ErrOutOfOrderSequence},
		{name: "sequence behind without matching range is out of order", setup: five[:3], probe: batch(pid, 0, 3, 1), wantErr: ErrOutOfOrderSequence},
		{name: "same first sequence, other last is out of order", setup: five[:3], probe: batch(pid, 0, 4, 1), wantErr: ErrOutOfOrderSequence},
		{name: "retry of newest batch is a duplicate", setup: five, probe: batch(pid, 0, 10, 2), wantDuplicate: &[2]int64{10, 11}},
		{name: "retry of 5th newest batch is a duplicate", setup: five, probe: batch(pid, 0, 2, 2), wantDuplicate: &[2]int64{2, 3}},
		{name: "retry of 6th newest batch is out of order", setup: five, probe: batch(pid, 0, 0, 2), wantErr: ErrOutOfOrderSequence},
		{name: "older epoch is fenced", setup: []Batch{batch(pid, 2, 0, 1)}, probe: batch(pid, 1, 1, 1), wantErr: ErrInvalidProducerEpoch},
		{name: "older epoch retry of a cached range is fenced", setup: []Batch{batch(pid, 1, 0, 1), batch(pid, 2, 0, 1)}, probe: batch(pid, 1, 0, 1), wantErr: ErrInvalidProducerEpoch},
		{name: "newer epoch at 0 appends", setup: five, probe: batch(pid, 1, 0, 3)},
		{name: "newer epoch not at 0 is out of order", setup: five, probe: batch(pid, 1, 12, 1), wantErr: ErrOutOfOrderSequence},
		{name: "after epoch bump the old window is gone", setup: []Batch{batch(pid, 0, 0, 1), batch(pid, 1, 0, 1)}, probe: batch(pid, 1, 1, 1)},
		{name: "after epoch bump a retry of the new batch is a duplicate", setup: []Batch{batch(pid, 0, 0, 1), batch(pid, 0, 1, 1), batch(pid, 1, 0, 1)}, probe: batch(pid, 1, 0, 1), wantDuplicate: &[2]int64{2, 2}},
		{name: "after epoch bump an old-epoch sequence is fenced", setup: []Batch{batch(pid, 0, 0, 1), batch(pid, 1, 0, 1)}, probe: batch(pid, 0, 1, 1), wantErr: ErrInvalidProducerEpoch},
		{name: "after MaxInt32 comes 0", setup: []Batch{batch(pid, 0, 0, math.MaxInt32)}, probe: batch(pid, 0, math.MaxInt32, 1)},
		{name: "wrap: 0 follows MaxInt32", setup: []Batch{batch(pid, 0, 0, math.MaxInt32), batch(pid, 0, math.MaxInt32, 1)}, probe: batch(pid, 0, 0, 3)},
		{name: "wrap: MaxInt32+1 is not 0", setup: []Batch{batch(pid, 0, 0, math.MaxInt32), batch(pid, 0, math.MaxInt32, 1)}, probe: batch(pid, 0, 1, 1), wantErr: ErrOutOfOrderSequence},
		{name: "wrap inside a batch", setup: []Batch{batch(pid, 0, 0, math.MaxInt32-1), batch(pid, 0, math.MaxInt32-1, 4)}, probe: batch(pid, 0, 2, 1)},
		{name: "wrap inside a batch: retry is a duplicate", setup: []Batch{batch(pid, 0, 0, math.MaxInt32-1), batch(pid, 0, math.MaxInt32-1, 4)}, probe: batch(pid, 0, math.MaxInt32-1, 4), wantDuplicate: &[2]int64{math.MaxInt32 - 1, math.MaxInt32 + 2}},
		{name: "other producers do not interfere", setup: []Batch{batch(pid, 0, 0, 3), batch(pid+1, 0, 0, 9)}, probe: batch(pid, 0, 3, 1)},
		{name: "negative sequence is invalid", probe: Batch{ProducerID: pid, ProducerEpoch: 0, BaseSequence: -1, LastSequence: -1}, wantErr: ErrInvalidBatch},
		{name: "negative epoch is invalid", probe: Batch{ProducerID: pid, ProducerEpoch: -1}, wantErr: ErrInvalidBatch},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			log := &testLog{state: newTestState(&fakeClock{now: time.Unix(1000, 0)})}
			for i, b := range test.setup {
				if _, written, err := log.produce(b); err != nil || !written {
					t.Fatalf("setup batch %d %+v: written %v, err %v", i, b, written, err)
				}
			}
			before := len(log.batches)
			verdict, written, err := log.produce(test.probe)
			switch {
			case test.wantErr != nil:
				if !errors.Is(err, test.wantErr) {
					t.Fatalf("err = %v, want %v", err, test.wantErr)
				}
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			case test.wantDuplicate != nil:
				if !verdict.Duplicate || verdict.FirstOffset != test.wantDuplicate[0] || verdict.LastOffset != test.wantDuplicate[1] {
					t.Fatalf("verdict %+v, want duplicate at %v", verdict, *test.wantDuplicate)
				}
				original := log.batches[indexOfOffset(log.batches, verdict.FirstOffset)]
				if verdict.MaxTimestamp != original.MaxTimestamp {
					t.Fatalf("duplicate timestamp %d, original %d", verdict.MaxTimestamp, original.MaxTimestamp)
				}
			default:
				if verdict.Duplicate || !written {
					t.Fatalf("verdict %+v, want written", verdict)
				}
			}
			wantLength := before
			if written {
				wantLength++
			}
			if len(log.batches) != wantLength {
				t.Fatalf("log has %d batches, want %d", len(log.batches), wantLength)
			}
		})
	}
}

func indexOfOffset(batches []Batch, offset int64) int {
	for i, b := range batches {
		if b.FirstOffset == offset {
			return i
		}
	}
	return -1
}

func TestCheckDoesNotChangeState(t *testing.T) {
	state := newTestState(&fakeClock{now: time.Unix(1000, 0)})
	b := batch(1, 0, 0, 1)
	for i := 0; i < 2; i++ {
		if verdict, err := state.Check(b); err != nil || verdict.Duplicate {
			t.Fatalf("check %d: %+v %v", i, verdict, err)
		}
	}
	if state.Len() != 0 {
		t.Fatalf("Check created state for %d producers", state.Len())
	}
}

func TestNonIdempotentBatchesKeepNoState(t *testing.T) {
	log := &testLog{state: newTestState(&fakeClock{now: time.Unix(1000, 0)})}
	for i := 0; i < 3; i++ {
		if _, written, err := log.produce(Batch{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LastSequence: -1}); err != nil || !written {
			t.Fatalf("batch %d: written %v err %v", i, written, err)
		}
	}
	if log.state.Len() != 0 || len(log.state.Producers()) != 0 {
		t.Fatalf("state tracks %d producers after non-idempotent batches", log.state.Len())
	}
}

func TestProducersDescribesState(t *testing.T) {
	log := &testLog{state: newTestState(&fakeClock{now: time.Unix(1000, 0)})}
	txn := batch(9, 3, 0, 2)
	txn.Transactional = true
	for _, b := range []Batch{batch(20, 0, 0, 4), txn, batch(20, 0, 4, 1)} {
		if _, written, err := log.produce(b); err != nil || !written {
			t.Fatalf("produce %+v: written %v err %v", b, written, err)
		}
	}
	got := log.state.Producers()
	want := []ProducerInfo{
		{ProducerID: 9, ProducerEpoch: 3, LastSequence: 1, LastTimestamp: 1000, CoordinatorEpoch: -1, CurrentTxnStartOffset: 4},
		{ProducerID: 20, ProducerEpoch: 0, LastSequence: 4, LastTimestamp: 1004, CoordinatorEpoch: -1, CurrentTxnStartOffset: -1},
	}
	if len(got) != len(want) {
		t.Fatalf("Producers() = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("producer %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestExpireIdle(t *testing.T) {
	start := time.Unix(1000, 0)
	clock := &fakeClock{now: start}
	log := &testLog{state: newTestState(clock)} // expiration age: 1 hour
	mustProduce(t, log, batch(1, 0, 0, 1))
	txn := batch(2, 0, 0, 1)
	txn.Transactional = true
	mustProduce(t, log, txn)
	clock.now = start.Add(30 * time.Minute)
	mustProduce(t, log, batch(3, 0, 0, 1))
	// The first sweep only stamps: every producer was active since the
	// previous one (there was none).
	if dropped := log.state.ExpireIdle(); dropped != 0 {
		t.Fatalf("first sweep dropped %d producers", dropped)
	}
	clock.now = start.Add(60 * time.Minute)
	mustProduce(t, log, batch(3, 0, 1, 1)) // producer 3 stays active
	clock.now = start.Add(90*time.Minute - time.Millisecond)
	if dropped := log.state.ExpireIdle(); dropped != 0 {
		t.Fatalf("dropped %d producers before the expiration age", dropped)
	}
	clock.now = start.Add(90 * time.Minute)
	if dropped := log.state.ExpireIdle(); dropped != 1 {
		t.Fatalf("dropped %d producers at the expiration age, want 1 (producer 1)", dropped)
	}
	// Producer 1 is forgotten: its next sequence is now unknown.
	if _, err := log.state.Check(batch(1, 0, 1, 1)); !errors.Is(err, ErrUnknownProducerID) {
		t.Fatalf("expired producer: err %v, want ErrUnknownProducerID", err)
	}
	// Producer 2 has an open transaction and is kept however old;
	// producer 3 expires an hour after the sweep that saw its last batch.
	// Producer 3's stamp is the sweep at 90 min - 1 ms.
	clock.now = start.Add(150*time.Minute - 2*time.Millisecond)
	if dropped := log.state.ExpireIdle(); dropped != 0 {
		t.Fatalf("producer 3 dropped before an hour after its stamp")
	}
	clock.now = start.Add(48 * time.Hour)
	if dropped := log.state.ExpireIdle(); dropped != 1 || log.state.Len() != 1 || log.state.Producers()[0].ProducerID != 2 {
		t.Fatalf("after 48h: dropped %d, producers %+v; want only producer 2 left", dropped, log.state.Producers())
	}
}

func mustProduce(t *testing.T, log *testLog, b Batch) {
	t.Helper()
	if _, written, err := log.produce(b); err != nil || !written {
		t.Fatalf("produce %+v: written %v err %v", b, written, err)
	}
}

func TestMarkers(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	log := &testLog{state: newTestState(clock)}
	first := batch(5, 1, 0, 2)
	first.Transactional = true
	mustProduce(t, log, first)
	second := batch(5, 1, 2, 1)
	second.Transactional = true
	mustProduce(t, log, second)
	if offset, ok := log.state.FirstUnstableOffset(); !ok || offset != 0 {
		t.Fatalf("FirstUnstableOffset = %d %v, want 0 true", offset, ok)
	}
	if err := log.state.CheckMarker(Marker{ProducerID: 5, ProducerEpoch: 0, CoordinatorEpoch: 0, Offset: 3}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old-epoch marker: err %v", err)
	}
	abort := Marker{ProducerID: 5, ProducerEpoch: 2, CoordinatorEpoch: 4, Offset: 3}
	if err := log.state.CheckMarker(abort); err != nil {
		t.Fatalf("CheckMarker: %v", err)
	}
	completed := log.state.ApplyMarker(abort)
	if want := (CompletedTransaction{ProducerID: 5, FirstOffset: 0, LastOffset: 3, Aborted: true}); completed != want {
		t.Fatalf("completed %+v, want %+v", completed, want)
	}
	if _, ok := log.state.FirstUnstableOffset(); ok {
		t.Fatalf("transaction still open after its marker")
	}
	if err := log.state.CheckMarker(Marker{ProducerID: 5, ProducerEpoch: 2, CoordinatorEpoch: 3, Offset: 4}); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("old coordinator marker: err %v", err)
	}
	// The marker bumped the epoch to 2: the producer restarts at 0, and
	// the epoch-1 batches are fenced.
	if _, err := log.state.Check(batch(5, 2, 3, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 3 after epoch bump: err %v", err)
	}
	if _, err := log.state.Check(second); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old-epoch retry after marker: err %v", err)
	}
	mustProduce(t, log, batch(5, 2, 0, 1))
}
