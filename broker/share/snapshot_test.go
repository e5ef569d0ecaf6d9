package share

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// A snapshot writes Acquired as Available with its count, merges runs and
// survives the binary round trip.
func TestSnapshotRoundTrip(t *testing.T) {
	p := New(testConfig, 10)
	p.SetLeaderEpoch(7)
	p.Reset(10)                                                                   // state epoch 1
	p.Acquire(t0, "m1", 10, 100, []Batch{one(10, 14), skip(15, 15), one(16, 19)}) // 10-14, 16-19 acquired
	mustAck(t, p, t0, "m1", 11, 12, AckAccept)
	mustAck(t, p, t0, "m1", 13, 13, AckRelease)
	s := p.Snapshot()
	want := Snapshot{StartOffset: 10, EndOffset: 20, LeaderEpoch: 7, StateEpoch: 1, Batches: []SnapshotBatch{
		{First: 10, Last: 10, DeliveryCount: 1, State: Available}, // acquired
		{First: 11, Last: 12, DeliveryCount: 1, State: Acknowledged},
		{First: 13, Last: 14, DeliveryCount: 1, State: Available}, // released + acquired
		{First: 15, Last: 15, DeliveryCount: 0, State: Archived},
		{First: 16, Last: 19, DeliveryCount: 1, State: Available},
	}}
	if !sameSnapshot(s, want) {
		t.Fatalf("snapshot\n%+v, want\n%+v", s, want)
	}
	b, err := s.MarshalBinary()
	if err != nil || len(b) != 30+19*5 {
		t.Fatalf("marshal: %d bytes, %v", len(b), err)
	}
	var back Snapshot
	if err := back.UnmarshalBinary(b); err != nil || !sameSnapshot(back, s) {
		t.Fatalf("unmarshal: %+v %v", back, err)
	}
	r, err := Restore(testConfig, back)
	if err != nil {
		t.Fatal(err)
	}
	if states(r, 10, 19) != "akkaaxaaaa" || counts(r, 10, 19) != "1111101111" || r.Counts().Acquired != 0 {
		t.Fatalf("restored %s %s", states(r, 10, 19), counts(r, 10, 19))
	}
	if r.LeaderEpoch() != 7 || r.StateEpoch() != 1 || r.StartOffset() != 10 || r.EndOffset() != 20 {
		t.Fatalf("restored epochs/window %d %d %d-%d", r.LeaderEpoch(), r.StateEpoch(), r.StartOffset(), r.EndOffset())
	}
	// Redelivery after the "crash": count 2.
	if got := r.Acquire(t0, "m2", 1, 100, []Batch{one(10, 10)}); !sameRanges(got, acquired(10, 10, 2)) {
		t.Fatalf("redelivery %+v", got)
	}
	// An empty partition.
	e := New(Config{}, 5).Snapshot()
	b, _ = e.MarshalBinary()
	if err := back.UnmarshalBinary(b); err != nil || back.Batches != nil || back.StartOffset != 5 || back.EndOffset != 5 {
		t.Fatalf("empty: %+v %v", back, err)
	}
	if _, err := Restore(Config{}, back); err != nil {
		t.Fatal(err)
	}
}

// The documented layout, byte by byte.
func TestSnapshotLayout(t *testing.T) {
	s := Snapshot{StartOffset: 1, EndOffset: 3, LeaderEpoch: -1, StateEpoch: 2,
		Batches: []SnapshotBatch{{First: 1, Last: 2, DeliveryCount: 3, State: Archived}}}
	b, _ := s.MarshalBinary()
	want := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, 0, 0, 0, 1,
		0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 3, 4}
	if !bytes.Equal(b, want) {
		t.Fatalf("layout\n%v, want\n%v", b, want)
	}
}

// UnmarshalBinary refuses bad encodings.
func TestSnapshotUnmarshalRefusals(t *testing.T) {
	good, _ := Snapshot{StartOffset: 1, EndOffset: 3, Batches: []SnapshotBatch{{First: 1, Last: 2, State: Available}}}.MarshalBinary()
	huge := bytes.Clone(good)
	binary.BigEndian.PutUint32(huge[26:], 0xffffffff)
	version := bytes.Clone(good)
	version[1] = 2
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short header":   good[:29],
		"truncated":      good[:len(good)-1],
		"trailing bytes": append(bytes.Clone(good), 0),
		"huge count":     huge,
		"version":        version,
	} {
		var s Snapshot
		if err := s.UnmarshalBinary(b); !errors.Is(err, ErrInvalidSnapshot) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Restore refuses snapshots that are not canonical.
func TestRestoreRefusals(t *testing.T) {
	run := func(first, last int64, count int16, s RecordState) SnapshotBatch {
		return SnapshotBatch{First: first, Last: last, DeliveryCount: count, State: s}
	}
	for name, s := range map[string]Snapshot{
		"negative start":    {StartOffset: -1, EndOffset: -1},
		"end before start":  {StartOffset: 5, EndOffset: 4},
		"window too large":  {StartOffset: 0, EndOffset: MaxWindow + 1, Batches: []SnapshotBatch{run(0, MaxWindow, 1, Available)}},
		"gap at the start":  {StartOffset: 0, EndOffset: 3, Batches: []SnapshotBatch{run(1, 2, 1, Available)}},
		"gap":               {StartOffset: 0, EndOffset: 4, Batches: []SnapshotBatch{run(0, 0, 1, Available), run(2, 3, 2, Available)}},
		"overlap":           {StartOffset: 0, EndOffset: 4, Batches: []SnapshotBatch{run(0, 1, 1, Available), run(1, 3, 2, Available)}},
		"short of the end":  {StartOffset: 0, EndOffset: 4, Batches: []SnapshotBatch{run(0, 2, 1, Available)}},
		"past the end":      {StartOffset: 0, EndOffset: 2, Batches: []SnapshotBatch{run(0, 2, 1, Available)}},
		"last before first": {StartOffset: 0, EndOffset: 2, Batches: []SnapshotBatch{run(0, -1, 1, Available)}},
		"acquired":          {StartOffset: 0, EndOffset: 1, Batches: []SnapshotBatch{run(0, 0, 1, Acquired)}},
		"unknown state":     {StartOffset: 0, EndOffset: 1, Batches: []SnapshotBatch{run(0, 0, 1, 3)}},
		"negative count":    {StartOffset: 0, EndOffset: 1, Batches: []SnapshotBatch{run(0, 0, -1, Available)}},
		"done first":        {StartOffset: 0, EndOffset: 2, Batches: []SnapshotBatch{run(0, 0, 1, Acknowledged), run(1, 1, 1, Available)}},
		"unmerged":          {StartOffset: 0, EndOffset: 2, Batches: []SnapshotBatch{run(0, 0, 1, Available), run(1, 1, 1, Available)}},
		"no batches":        {StartOffset: 0, EndOffset: 2},
	} {
		if _, err := Restore(testConfig, s); !errors.Is(err, ErrInvalidSnapshot) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Anything that unmarshals never panics, re-marshals to the same bytes,
// and, if it restores, snapshots back to the same bytes.
func FuzzSnapshotUnmarshal(f *testing.F) {
	p := New(testConfig, 3)
	p.Acquire(t0, "m1", 10, 100, []Batch{one(3, 6), skip(7, 7), one(8, 12)})
	mustAckF(f, p, 4, 5)
	for _, s := range []Snapshot{p.Snapshot(), New(Config{}, 0).Snapshot(), {StartOffset: 1, EndOffset: 2, Batches: []SnapshotBatch{{First: 1, Last: 1, State: Archived}}}} {
		b, _ := s.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Snapshot
		if err := s.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrInvalidSnapshot) {
				t.Fatalf("unmarshal error %v does not wrap ErrInvalidSnapshot", err)
			}
			return
		}
		again, err := s.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-marshal differs: %v", err)
		}
		r, err := Restore(testConfig, s)
		if err != nil {
			if !errors.Is(err, ErrInvalidSnapshot) {
				t.Fatalf("restore error %v does not wrap ErrInvalidSnapshot", err)
			}
			return
		}
		restored, err := r.Snapshot().MarshalBinary()
		if err != nil || !bytes.Equal(restored, b) {
			t.Fatalf("restored snapshot marshals differently: %v", err)
		}
		// The restored partition works.
		if o, ok := r.NextFetchOffset(r.EndOffset() + 1); ok {
			r.Acquire(t0, "m", 5, o+5, []Batch{one(o, o+4)})
			checkCounts(t, r)
		}
	})
}

// mustAckF accepts [first, last] for m1 in a fuzz seed.
func mustAckF(f *testing.F, p *Partition, first, last int64) {
	if _, err := p.Acknowledge(t0.Add(time.Second), "m1", AckRange{First: first, Last: last, Types: []AckType{AckAccept}}); err != nil {
		f.Fatal(err)
	}
}
