package share

import (
	"testing"
	"time"
)

// Acquire: which offsets it takes, archives or leaves, from a fresh
// partition starting at offset 10.
func TestAcquire(t *testing.T) {
	cases := []struct {
		name       string
		cfg        Config
		maxRecords int
		limit      int64
		batches    []Batch
		want       []AcquiredRecords
		states     string // offsets 10-29
		start, end int64
	}{
		{
			name: "one batch", maxRecords: 100, limit: 100, batches: []Batch{one(10, 14)},
			want: acquired(10, 14, 1), states: "qqqqqaaaaaaaaaaaaaaa", start: 10, end: 15,
		},
		{
			name: "whole batch past maxRecords", maxRecords: 2, limit: 100, batches: []Batch{one(10, 14), one(15, 19)},
			want: acquired(10, 14, 1), states: "qqqqqaaaaaaaaaaaaaaa", start: 10, end: 15,
		},
		{
			name: "limit cuts the batch (LSO)", maxRecords: 100, limit: 13, batches: []Batch{one(10, 14), one(15, 19)},
			want: acquired(10, 12, 1), states: "qqqaaaaaaaaaaaaaaaaa", start: 10, end: 13,
		},
		{
			name: "batch at the limit", maxRecords: 100, limit: 10, batches: []Batch{one(10, 14)},
			states: "aaaaaaaaaaaaaaaaaaaa", start: 10, end: 10,
		},
		{
			name: "MaxRecordLocks cuts the batch", cfg: Config{MaxRecordLocks: 3}, maxRecords: 100, limit: 100, batches: []Batch{one(10, 14)},
			want: acquired(10, 12, 1), states: "qqqaaaaaaaaaaaaaaaaa", start: 10, end: 13,
		},
		{
			name: "skip batch in front is archived and SPSO passes it", maxRecords: 100, limit: 100,
			batches: []Batch{skip(10, 11), one(12, 14)},
			want:    acquired(12, 14, 1), states: "xxqqqaaaaaaaaaaaaaaa", start: 12, end: 15,
		},
		{
			name: "skip batch in the middle", maxRecords: 100, limit: 100,
			batches: []Batch{one(10, 11), skip(12, 12), one(13, 14)},
			want:    acquired(10, 11, 1, 13, 14, 1), states: "qqxqqaaaaaaaaaaaaaaa", start: 10, end: 15,
		},
		{
			name: "only a skip batch", maxRecords: 100, limit: 100, batches: []Batch{skip(10, 12)},
			states: "xxxaaaaaaaaaaaaaaaaa", start: 13, end: 13,
		},
		{
			name: "gaps are acquired with the batch after them", maxRecords: 100, limit: 100,
			batches: []Batch{one(12, 13), one(16, 17)},
			want:    acquired(10, 17, 1), states: "qqqqqqqqaaaaaaaaaaaa", start: 10, end: 18,
		},
		{
			name: "a gap before a skip batch is archived", maxRecords: 100, limit: 100,
			batches: []Batch{one(10, 10), skip(13, 13), one(14, 14)},
			want:    acquired(10, 10, 1, 14, 14, 1), states: "qxxxqaaaaaaaaaaaaaaa", start: 10, end: 15,
		},
		{
			name: "a batch straddling the start", maxRecords: 100, limit: 100, batches: []Batch{one(5, 12)},
			want: acquired(10, 12, 1), states: "qqqaaaaaaaaaaaaaaaaa", start: 10, end: 13,
		},
		{
			name: "malformed batches are ignored", maxRecords: 100, limit: 100, batches: []Batch{one(12, 11), one(10, 10)},
			want: acquired(10, 10, 1), states: "qaaaaaaaaaaaaaaaaaaa", start: 10, end: 11,
		},
		{
			name: "no batches", maxRecords: 100, limit: 100,
			states: "aaaaaaaaaaaaaaaaaaaa", start: 10, end: 10,
		},
		{
			name: "maxRecords zero", maxRecords: 0, limit: 100, batches: []Batch{one(10, 14)},
			states: "aaaaaaaaaaaaaaaaaaaa", start: 10, end: 10,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig
			if c.cfg.MaxRecordLocks != 0 {
				cfg.MaxRecordLocks = c.cfg.MaxRecordLocks
			}
			p := New(cfg, 10)
			got := p.Acquire(t0, "m1", c.maxRecords, c.limit, c.batches)
			if !sameRanges(got, c.want) {
				t.Fatalf("Acquire = %+v, want %+v", got, c.want)
			}
			if s := states(p, 10, 29); s != c.states {
				t.Fatalf("states %s, want %s", s, c.states)
			}
			if p.StartOffset() != c.start || p.EndOffset() != c.end {
				t.Fatalf("window %d-%d, want %d-%d", p.StartOffset(), p.EndOffset(), c.start, c.end)
			}
			checkCounts(t, p)
		})
	}
}

// Window records are acquired one by one, skipping what is not
// Available, with per-record delivery counts merged into ranges.
func TestAcquireWindowRecords(t *testing.T) {
	p := New(testConfig, 0)
	p.Acquire(t0, "m1", 10, 100, []Batch{one(0, 9)})
	// Release 2-3 and 6-7, accept 4-5; 0-1 and 8-9 stay acquired.
	mustAck(t, p, t0, "m1", 2, 7, AckRelease, AckRelease, AckAccept, AckAccept, AckRelease, AckRelease)
	if s := states(p, 0, 9); s != "qqaakkaaqq" {
		t.Fatalf("states %s", s)
	}
	if o, ok := p.NextFetchOffset(100); o != 2 || !ok {
		t.Fatalf("NextFetchOffset = %d %v, want 2 true", o, ok)
	}
	// A read from 2: the released records go again (count 2), then new
	// ones (count 1).
	got := p.Acquire(t0, "m2", 3, 100, []Batch{one(0, 9), one(10, 14)})
	if want := acquired(2, 3, 2, 6, 6, 2); !sameRanges(got, want) {
		t.Fatalf("Acquire = %+v, want %+v (maxRecords counts window records one by one)", got, want)
	}
	got = p.Acquire(t0, "m2", 10, 100, []Batch{one(0, 9), one(10, 14)})
	if want := acquired(7, 7, 2, 10, 14, 1); !sameRanges(got, want) {
		t.Fatalf("Acquire = %+v, want %+v", got, want)
	}
	if _, c, m := p.State(3); c != 2 || m != "m2" {
		t.Fatalf("offset 3: count %d member %q", c, m)
	}
	checkCounts(t, p)
}

// A window record reached inside a Skip batch (read_committed reading an
// aborted transaction) is archived.
func TestAcquireArchivesSkippedWindowRecords(t *testing.T) {
	p := New(testConfig, 0)
	p.Acquire(t0, "m1", 10, 100, []Batch{one(0, 4)})
	mustAck(t, p, t0, "m1", 0, 0, AckAccept)
	mustAck(t, p, t0, "m1", 1, 4, AckRelease)
	got := p.Acquire(t0, "m1", 10, 100, []Batch{one(1, 2), skip(3, 4)})
	if want := acquired(1, 2, 2); !sameRanges(got, want) {
		t.Fatalf("Acquire = %+v, want %+v", got, want)
	}
	if s := states(p, 1, 5); s != "qqxxa" || p.EndOffset() != 5 {
		t.Fatalf("states %s end %d", s, p.EndOffset())
	}
}

// NextFetchOffset refuses at the limit and at the MaxRecordLocks cap.
func TestNextFetchOffset(t *testing.T) {
	p := New(Config{MaxRecordLocks: 5}, 0)
	if o, ok := p.NextFetchOffset(0); o != 0 || ok {
		t.Fatalf("empty log: %d %v", o, ok)
	}
	if o, ok := p.NextFetchOffset(1); o != 0 || !ok {
		t.Fatalf("one record: %d %v", o, ok)
	}
	p.Acquire(t0, "m1", 100, 100, []Batch{one(0, 9)})
	if o, ok := p.NextFetchOffset(100); o != 5 || ok {
		t.Fatalf("at the lock cap: %d %v, want 5 false", o, ok)
	}
	if got := p.Acquire(t0, "m1", 100, 100, []Batch{one(5, 9)}); got != nil {
		t.Fatalf("Acquire past the lock cap = %+v", got)
	}
	mustAck(t, p, t0, "m1", 0, 0, AckAccept)
	if o, ok := p.NextFetchOffset(100); o != 5 || !ok {
		t.Fatalf("one lock free: %d %v", o, ok)
	}
	if got := p.Acquire(t0, "m1", 100, 100, []Batch{one(5, 9)}); !sameRanges(got, acquired(5, 5, 1)) {
		t.Fatalf("Acquire with one lock free = %+v", got)
	}
}

// Acquired records carry the lock deadline now+LockDuration.
func TestAcquireSetsDeadline(t *testing.T) {
	p := New(testConfig, 0)
	p.Acquire(t0, "m1", 1, 100, []Batch{one(0, 0)})
	if d, ok := p.LockDeadline(0); !ok || !d.Equal(t0.Add(testConfig.LockDuration)) {
		t.Fatalf("deadline %v %v", d, ok)
	}
	if _, ok := p.LockDeadline(1); ok {
		t.Fatal("deadline of a record never acquired")
	}
	if _, next := p.ExpireLocks(t0); !next.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("next deadline %v", next)
	}
}

// An empty member acquires nothing.
func TestAcquireEmptyMember(t *testing.T) {
	p := New(testConfig, 0)
	if got := p.Acquire(t0, "", 10, 100, []Batch{one(0, 4)}); got != nil || p.EndOffset() != 0 {
		t.Fatalf("Acquire by no member = %+v, end %d", got, p.EndOffset())
	}
}
