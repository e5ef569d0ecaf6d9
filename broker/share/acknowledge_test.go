package share

import (
	"testing"
	"time"
)

// Each acknowledge type's transition, from records 0-4 acquired by m1.
func TestAcknowledgeTransitions(t *testing.T) {
	cases := []struct {
		name   string
		first  int64
		last   int64
		types  []AckType
		states string // offsets 0-4 after
		counts AckCounts
		start  int64
	}{
		{name: "accept", first: 0, last: 4, types: []AckType{AckAccept}, states: "xxxxx", counts: AckCounts{Accepted: 5}, start: 5},
		{name: "accept the middle", first: 1, last: 3, types: []AckType{AckAccept}, states: "qkkkq", counts: AckCounts{Accepted: 3}, start: 0},
		{name: "reject", first: 1, last: 1, types: []AckType{AckReject}, states: "qxqqq", counts: AckCounts{Rejected: 1}, start: 0},
		{name: "gap", first: 2, last: 2, types: []AckType{AckGap}, states: "qqxqq", counts: AckCounts{Gaps: 1}, start: 0},
		{name: "release", first: 0, last: 1, types: []AckType{AckRelease}, states: "aaqqq", counts: AckCounts{Released: 2}, start: 0},
		{name: "renew", first: 0, last: 4, types: []AckType{AckRenew}, states: "qqqqq", counts: AckCounts{Renewed: 5}, start: 0},
		{
			name: "one type per offset", first: 0, last: 4, types: []AckType{AckAccept, AckGap, AckRelease, AckReject, AckRenew},
			states: "xxaxq", counts: AckCounts{Accepted: 1, Gaps: 1, Released: 1, Rejected: 1, Renewed: 1}, start: 2,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(testConfig, 0)
			p.Acquire(t0, "m1", 5, 100, []Batch{one(0, 4)})
			got := mustAck(t, p, t0.Add(time.Second), "m1", c.first, c.last, c.types...)
			if got != c.counts {
				t.Fatalf("counts %+v, want %+v", got, c.counts)
			}
			// Offsets below SPSO read as Archived (done).
			if s := states(p, 0, 4); s != c.states {
				t.Fatalf("states %s, want %s", s, c.states)
			}
			if p.StartOffset() != c.start {
				t.Fatalf("SPSO %d, want %d", p.StartOffset(), c.start)
			}
			checkCounts(t, p)
		})
	}
}

// Refused acknowledgements change nothing.
func TestAcknowledgeRefusals(t *testing.T) {
	cases := []struct {
		name string
		// setup runs after 0-4 were acquired by m1 and 5-9 by m2, at t0.
		setup  func(t *testing.T, p *Partition)
		member string
		r      AckRange
		now    time.Time
		want   error
	}{
		{name: "acquired by another member", member: "m2", r: AckRange{First: 3, Last: 6, Types: []AckType{AckAccept}}, want: ErrInvalidRecordState},
		{name: "unknown member", member: "m3", r: AckRange{First: 0, Last: 0, Types: []AckType{AckAccept}}, want: ErrInvalidRecordState},
		{
			name: "available record", member: "m1", r: AckRange{First: 0, Last: 2, Types: []AckType{AckAccept}}, want: ErrInvalidRecordState,
			setup: func(t *testing.T, p *Partition) { mustAck(t, p, t0, "m1", 1, 1, AckRelease) },
		},
		{
			name: "acknowledged record", member: "m1", r: AckRange{First: 1, Last: 2, Types: []AckType{AckAccept}}, want: ErrInvalidRecordState,
			setup: func(t *testing.T, p *Partition) { mustAck(t, p, t0, "m1", 1, 1, AckAccept) },
		},
		{
			name: "renew an archived record", member: "m1", r: AckRange{First: 2, Last: 2, Types: []AckType{AckRenew}}, want: ErrInvalidRecordState,
			setup: func(t *testing.T, p *Partition) { mustAck(t, p, t0, "m1", 2, 2, AckReject) },
		},
		{name: "below SPSO", member: "m1", r: AckRange{First: -1, Last: 0, Types: []AckType{AckAccept}}, want: ErrInvalidRecordState},
		{name: "at SPEO", member: "m2", r: AckRange{First: 9, Last: 10, Types: []AckType{AckAccept}}, want: ErrInvalidRecordState},
		{name: "far past SPEO", member: "m2", r: AckRange{First: 50, Last: 60, Types: []AckType{AckAccept}}, want: ErrInvalidRecordState},
		{name: "lock expired", member: "m1", r: AckRange{First: 0, Last: 0, Types: []AckType{AckAccept}}, now: t0.Add(10 * time.Second), want: ErrInvalidRecordState},
		{name: "first after last", member: "m1", r: AckRange{First: 3, Last: 2, Types: []AckType{AckAccept}}, want: ErrInvalidRequest},
		{name: "no types", member: "m1", r: AckRange{First: 0, Last: 1}, want: ErrInvalidRequest},
		{name: "too few types", member: "m1", r: AckRange{First: 0, Last: 2, Types: []AckType{AckAccept, AckAccept}}, want: ErrInvalidRequest},
		{name: "too many types", member: "m1", r: AckRange{First: 0, Last: 0, Types: []AckType{AckAccept, AckAccept}}, want: ErrInvalidRequest},
		{name: "unknown type", member: "m1", r: AckRange{First: 0, Last: 0, Types: []AckType{5}}, want: ErrInvalidRequest},
		{name: "negative type", member: "m1", r: AckRange{First: 0, Last: 1, Types: []AckType{AckAccept, -1}}, want: ErrInvalidRequest},
		{name: "malformed and outside: the request error first", member: "m1", r: AckRange{First: 50, Last: 51, Types: []AckType{9}}, want: ErrInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(testConfig, 0)
			p.Acquire(t0, "m1", 5, 100, []Batch{one(0, 4)})
			p.Acquire(t0, "m2", 5, 100, []Batch{one(5, 9)})
			if c.setup != nil {
				c.setup(t, p)
			}
			before, beforeCounts := p.Snapshot(), counts(p, 0, 9)
			beforeStates := states(p, 0, 9)
			now := c.now
			if now.IsZero() {
				now = t0.Add(time.Second)
			}
			got, err := p.Acknowledge(now, c.member, c.r)
			wantErr(t, c.name, err, c.want)
			if got != (AckCounts{}) {
				t.Fatalf("refusal reported changes %+v", got)
			}
			after := p.Snapshot()
			if states(p, 0, 9) != beforeStates || counts(p, 0, 9) != beforeCounts || !sameSnapshot(before, after) {
				t.Fatalf("refused acknowledge changed %s to %s", beforeStates, states(p, 0, 9))
			}
			for o := int64(0); o < 10; o++ {
				if _, _, m := p.State(o); m != "" && m != map[bool]string{true: "m1", false: "m2"}[o < 5] {
					t.Fatalf("offset %d now held by %q", o, m)
				}
			}
		})
	}
}

// sameSnapshot compares snapshots.
func sameSnapshot(a, b Snapshot) bool {
	if a.StartOffset != b.StartOffset || a.EndOffset != b.EndOffset || a.LeaderEpoch != b.LeaderEpoch ||
		a.StateEpoch != b.StateEpoch || len(a.Batches) != len(b.Batches) {
		return false
	}
	for i := range a.Batches {
		if a.Batches[i] != b.Batches[i] {
			return false
		}
	}
	return true
}

// A release at the delivery limit archives; below it the record comes back.
func TestReleaseAtDeliveryLimit(t *testing.T) {
	p := New(testConfig, 0) // DeliveryLimit 3
	for delivery := int16(1); delivery <= 3; delivery++ {
		got := p.Acquire(t0, "m1", 1, 100, []Batch{one(0, 0), one(1, 1)})
		if !sameRanges(got, acquired(0, 0, int64(delivery))) {
			t.Fatalf("delivery %d: Acquire = %+v", delivery, got)
		}
		c := mustAck(t, p, t0, "m1", 0, 0, AckRelease)
		if delivery < 3 && (c.Released != 1 || states(p, 0, 0) != "a") {
			t.Fatalf("delivery %d: released %+v, state %s", delivery, c, states(p, 0, 0))
		}
		if delivery == 3 && (c.Archived != 1 || c.Released != 0) {
			t.Fatalf("release at the limit: %+v", c)
		}
	}
	// Archived at the front: SPSO moves past it.
	if p.StartOffset() != 1 || states(p, 0, 0) != "x" {
		t.Fatalf("SPSO %d", p.StartOffset())
	}
}

// Lock expiry: released at the deadline, archived at the delivery limit,
// renewals move the deadline, the next deadline is reported.
func TestExpireLocks(t *testing.T) {
	p := New(testConfig, 0) // LockDuration 10s, DeliveryLimit 3
	p.Acquire(t0, "m1", 3, 100, []Batch{one(0, 2)})
	p.Acquire(t0.Add(5*time.Second), "m2", 3, 100, []Batch{one(3, 5)})

	if n, next := p.ExpireLocks(t0.Add(9 * time.Second)); n != 0 || !next.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("before the deadline: %d %v", n, next)
	}
	// Renew 1 at t0+9s: its deadline moves to t0+19s.
	if c := mustAck(t, p, t0.Add(9*time.Second), "m1", 1, 1, AckRenew); c.Renewed != 1 {
		t.Fatalf("renew: %+v", c)
	}
	if d, _ := p.LockDeadline(1); !d.Equal(t0.Add(19 * time.Second)) {
		t.Fatalf("renewed deadline %v", d)
	}
	n, next := p.ExpireLocks(t0.Add(10 * time.Second)) // the deadline itself expires
	if n != 2 || states(p, 0, 5) != "aqaqqq" || !next.Equal(t0.Add(15*time.Second)) {
		t.Fatalf("at the deadline: %d expired, states %s, next %v", n, states(p, 0, 5), next)
	}
	if _, err := p.Acknowledge(t0.Add(10*time.Second), "m1", AckRange{First: 0, Last: 0, Types: []AckType{AckAccept}}); err == nil {
		t.Fatal("acknowledged an expired record")
	}
	n, next = p.ExpireLocks(t0.Add(time.Minute))
	if n != 4 || !next.IsZero() || states(p, 0, 5) != "aaaaaa" || p.Counts().Acquired != 0 {
		t.Fatalf("all expired: %d, next %v, states %s", n, next, states(p, 0, 5))
	}
	if counts(p, 0, 5) != "111111" {
		t.Fatalf("delivery counts %s", counts(p, 0, 5))
	}

	// Two more deliveries of 0: the third expiry archives it.
	for i := range 2 {
		now := t0.Add(time.Duration(2+i) * time.Minute)
		p.Acquire(now, "m1", 1, 100, []Batch{one(0, 0)})
		p.ExpireLocks(now.Add(time.Minute))
	}
	if states(p, 0, 0) != "x" || p.StartOffset() != 1 {
		t.Fatalf("after the third expiry: %s, SPSO %d", states(p, 0, 0), p.StartOffset())
	}
}

// ReleaseMember releases only the member's records.
func TestReleaseMember(t *testing.T) {
	p := New(testConfig, 0)
	p.Acquire(t0, "m1", 3, 100, []Batch{one(0, 2)})
	p.Acquire(t0, "m2", 3, 100, []Batch{one(3, 5)})
	p.Acquire(t0, "m1", 3, 100, []Batch{one(6, 7)})
	if n := p.ReleaseMember("m1"); n != 5 {
		t.Fatalf("released %d, want 5", n)
	}
	if s := states(p, 0, 7); s != "aaaqqqaa" {
		t.Fatalf("states %s", s)
	}
	if n := p.ReleaseMember("m1"); n != 0 {
		t.Fatalf("released again: %d", n)
	}
	// A departure does not count the acquisition: however often a member
	// leaves holding the record, it is never archived by the limit, and
	// its delivery count is what it was before.
	for range 2 * testConfig.DeliveryLimit {
		p.Acquire(t0, "m1", 1, 100, []Batch{one(0, 0)})
		p.ReleaseMember("m1")
	}
	if s, count, _ := p.State(0); s != Available || count != 0 {
		t.Fatalf("after departures: %v with delivery count %d, want available with 0", s, count)
	}
	// An AckRelease counts: at the limit it archives.
	for p.StartOffset() == 0 {
		got := p.Acquire(t0, "m1", 1, 100, []Batch{one(0, 0)})
		if len(got) != 1 {
			t.Fatalf("acquire at offset 0: %+v", got)
		}
		if _, err := p.Acknowledge(t0, "m1", AckRange{First: 0, Last: 0, Types: []AckType{AckRelease}}); err != nil {
			t.Fatal(err)
		}
	}
	if s := states(p, 0, 0); s != "x" {
		t.Fatalf("at the limit: %s", s)
	}
	checkCounts(t, p)
}

// SPSO advances over leading done records only, whatever order they are
// acknowledged in.
func TestStartOffsetAdvances(t *testing.T) {
	p := New(testConfig, 100)
	p.Acquire(t0, "m1", 10, 1000, []Batch{one(100, 109)})
	mustAck(t, p, t0, "m1", 103, 105, AckAccept)
	mustAck(t, p, t0, "m1", 101, 101, AckReject)
	if p.StartOffset() != 100 {
		t.Fatalf("SPSO %d while 100 is acquired", p.StartOffset())
	}
	mustAck(t, p, t0, "m1", 100, 100, AckAccept)
	if p.StartOffset() != 102 {
		t.Fatalf("SPSO %d, want 102", p.StartOffset())
	}
	mustAck(t, p, t0, "m1", 102, 102, AckGap)
	if p.StartOffset() != 106 || p.EndOffset() != 110 {
		t.Fatalf("window %d-%d, want 106-110", p.StartOffset(), p.EndOffset())
	}
	mustAck(t, p, t0, "m1", 106, 109, AckAccept)
	if p.StartOffset() != 110 || p.EndOffset() != 110 || p.Counts() != (Counts{}) {
		t.Fatalf("window %d-%d counts %+v", p.StartOffset(), p.EndOffset(), p.Counts())
	}
}

// AdvanceStart drops records below the new log start, acquired ones too.
func TestAdvanceStart(t *testing.T) {
	p := New(testConfig, 0)
	p.Acquire(t0, "m1", 10, 100, []Batch{one(0, 9)})
	mustAck(t, p, t0, "m1", 5, 5, AckAccept)
	p.AdvanceStart(3)
	if p.StartOffset() != 3 || p.Counts().Acquired != 6 {
		t.Fatalf("SPSO %d, %d acquired", p.StartOffset(), p.Counts().Acquired)
	}
	if _, err := p.Acknowledge(t0, "m1", AckRange{First: 2, Last: 2, Types: []AckType{AckAccept}}); err == nil {
		t.Fatal("acknowledged a dropped record")
	}
	p.AdvanceStart(2) // no-op
	p.AdvanceStart(5) // 5 is acknowledged: SPSO goes on to 6
	if p.StartOffset() != 6 {
		t.Fatalf("SPSO %d, want 6", p.StartOffset())
	}
	p.AdvanceStart(20) // past SPEO
	if p.StartOffset() != 20 || p.EndOffset() != 20 || p.Counts() != (Counts{}) {
		t.Fatalf("window %d-%d counts %+v", p.StartOffset(), p.EndOffset(), p.Counts())
	}
	if got := p.Acquire(t0, "m1", 10, 100, []Batch{one(15, 24)}); !sameRanges(got, acquired(20, 24, 1)) {
		t.Fatalf("Acquire after AdvanceStart = %+v", got)
	}
}

// Reset forgets the window and bumps the state epoch.
func TestReset(t *testing.T) {
	p := New(testConfig, 0)
	p.Acquire(t0, "m1", 10, 100, []Batch{one(0, 9)})
	p.Reset(4)
	if p.StartOffset() != 4 || p.EndOffset() != 4 || p.Counts() != (Counts{}) || p.StateEpoch() != 1 {
		t.Fatalf("after Reset: %d-%d %+v epoch %d", p.StartOffset(), p.EndOffset(), p.Counts(), p.StateEpoch())
	}
	if got := p.Acquire(t0, "m1", 3, 100, []Batch{one(0, 9)}); !sameRanges(got, acquired(4, 9, 1)) {
		t.Fatalf("Acquire after Reset = %+v (counts start over)", got)
	}
	p.Reset(0) // backwards too
	if o, ok := p.NextFetchOffset(100); o != 0 || !ok || p.StateEpoch() != 2 {
		t.Fatalf("after Reset(0): %d %v", o, ok)
	}
}

// Lag counts what is not done below the high watermark.
func TestLag(t *testing.T) {
	p := New(testConfig, 10)
	if l := p.Lag(20); l != 10 {
		t.Fatalf("lag %d, want 10", l)
	}
	p.Acquire(t0, "m1", 5, 100, []Batch{one(10, 14)})
	mustAck(t, p, t0, "m1", 12, 13, AckAccept)
	if l := p.Lag(20); l != 8 {
		t.Fatalf("lag %d, want 8", l)
	}
	if l := p.Lag(13); l != 2 {
		t.Fatalf("lag below SPEO %d, want 2", l)
	}
	if l := p.Lag(5); l != 0 {
		t.Fatalf("lag below SPSO %d", l)
	}
}

// The names of states and types.
func TestStrings(t *testing.T) {
	for s, want := range map[RecordState]string{Available: "Available", Acquired: "Acquired", Acknowledged: "Acknowledged", Archived: "Archived", 3: "RecordState(3)"} {
		if s.String() != want {
			t.Errorf("%d: %s", s, s)
		}
	}
	if AckRenew.String() != "Renew" || AckType(7).String() != "AckType(7)" {
		t.Error("AckType names")
	}
	if c := (Config{}).WithDefaults(); c != (Config{LockDuration: 30 * time.Second, MaxRecordLocks: 2000, DeliveryLimit: 5}) {
		t.Errorf("defaults %+v", c)
	}
}
