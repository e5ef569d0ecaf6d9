package share

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// modelRecord is the reference model's state of one offset.
type modelRecord struct {
	state    RecordState
	count    int16
	member   string
	deadline time.Time
}

// model is the reference: a map offset → state (missing offsets are
// Available with count 0), with SPSO and SPEO kept by simple loops.
type model struct {
	cfg        Config
	recs       map[int64]modelRecord
	start, end int64
}

func (m *model) get(o int64) modelRecord { return m.recs[o] }

func (m *model) locks() int {
	n := 0
	for o := m.start; o < m.end; o++ {
		if m.recs[o].state == Acquired {
			n++
		}
	}
	return n
}

// advance moves SPSO over done records.
func (m *model) advance() {
	for m.start < m.end && m.recs[m.start].state.done() {
		m.start++
	}
}

// depart is what a session's end does to a record its member acquired:
// Available again, the acquisition not counted.
func (m *model) depart(o int64) {
	r := m.recs[o]
	r.state, r.member, r.deadline = Available, "", time.Time{}
	r.count = max(r.count-1, 0)
	m.recs[o] = r
}

// release is what a release or an expiry does.
func (m *model) release(o int64) {
	r := m.recs[o]
	r.state, r.member, r.deadline = Available, "", time.Time{}
	if int(r.count) >= m.cfg.DeliveryLimit {
		r.state = Archived
	}
	m.recs[o] = r
}

// acquire is Acquire's documented rules, one offset at a time.
func (m *model) acquire(now time.Time, member string, maxRecords int, limit int64, batches []Batch) (acquired []int64) {
	if member == "" || maxRecords <= 0 {
		return nil
	}
	limit = min(limit, m.start+MaxWindow)
	cursor := m.start
	for cursor < m.end && m.recs[cursor].state != Available {
		cursor++
	}
	remaining, locks := maxRecords, m.locks()
	lock := func(o int64) {
		r := m.recs[o]
		r.state, r.member, r.deadline = Acquired, member, now.Add(m.cfg.LockDuration)
		r.count++
		m.recs[o] = r
		acquired = append(acquired, o)
		locks++
	}
	for _, b := range batches {
		if b.Last < b.First || b.Last < cursor {
			continue
		}
		if b.First >= limit || cursor >= limit {
			break
		}
		last := min(b.Last, limit-1)
		for o := cursor; o <= last && o < m.end; o++ {
			r := m.recs[o]
			if r.state != Available {
				continue
			}
			if b.Skip || int(r.count) >= m.cfg.DeliveryLimit {
				r.state = Archived
				m.recs[o] = r
				continue
			}
			if remaining <= 0 || locks >= m.cfg.MaxRecordLocks {
				m.advance()
				return acquired
			}
			lock(o)
			remaining--
		}
		if last >= m.end {
			if b.Skip {
				for ; m.end <= last; m.end++ {
					m.recs[m.end] = modelRecord{state: Archived}
				}
			} else {
				if remaining <= 0 || locks >= m.cfg.MaxRecordLocks {
					break
				}
				for ; m.end <= last && locks < m.cfg.MaxRecordLocks; m.end++ {
					lock(m.end)
					remaining--
				}
				if m.end <= last {
					break
				}
			}
		}
		cursor = last + 1
	}
	m.advance()
	return acquired
}

// propertyLog is a random log: batches of 1-8 records, some skipped
// (control or aborted), some compacted away (gaps).
func propertyLog(rng *rand.Rand, size int64) []Batch {
	var log []Batch
	for o := int64(0); o < size; {
		n := int64(1 + rng.Intn(8))
		switch x := rng.Intn(10); {
		case x == 0: // compacted away
		case x == 1:
			log = append(log, skip(o, o+n-1))
		default:
			log = append(log, one(o, o+n-1))
		}
		o += n
	}
	return log
}

// read is what the broker reads: up to k batches from offset on.
func read(log []Batch, offset int64, k int) []Batch {
	for i, b := range log {
		if b.Last >= offset {
			return log[i:min(len(log), i+k)]
		}
	}
	return nil
}

// TestProperties runs random operations against the model and checks the
// invariants after each.
func TestProperties(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runProperties(t, seed, 3000) })
	}
}

func runProperties(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	cfg := Config{LockDuration: 10 * time.Second, MaxRecordLocks: 5 + rng.Intn(60), DeliveryLimit: 1 + rng.Intn(4)}
	log := propertyLog(rng, 4000)
	p := New(cfg, 0)
	m := &model{cfg: p.Config(), recs: map[int64]modelRecord{}}
	members := []string{"m1", "m2", "m3"}
	now := t0
	hw := int64(0)
	var (
		ops      = map[string]int{}
		acquires int
	)
	for step := range steps {
		now = now.Add(time.Duration(rng.Intn(3000)) * time.Millisecond)
		hw = min(hw+int64(rng.Intn(4)), 4000)
		member := members[rng.Intn(len(members))]
		var what string
		switch x := rng.Intn(100); {
		case x < 35:
			what = "acquire"
			offset, ok := p.NextFetchOffset(hw)
			batches := read(log, offset, 1+rng.Intn(4))
			maxRecords := rng.Intn(20)
			before := *m
			before.recs = clone(m.recs)
			got := p.Acquire(now, member, maxRecords, hw, batches)
			want := m.acquire(now, member, maxRecords, hw, batches)
			if !ok && len(got) > 0 {
				t.Fatalf("step %d: acquired %+v though NextFetchOffset said no", step, got)
			}
			var flat []int64
			for _, r := range got {
				for o := r.First; o <= r.Last; o++ {
					flat = append(flat, o)
					// Acquired again only after a release, expiry or
					// departure: it was Available (or new) before.
					if prev := before.get(o); prev.state != Available {
						t.Fatalf("step %d: acquired %d in state %v", step, o, prev.state)
					}
					if _, c, _ := p.State(o); c != r.DeliveryCount {
						t.Fatalf("step %d: range %+v but offset %d has count %d", step, r, o, c)
					}
				}
			}
			if fmt.Sprint(flat) != fmt.Sprint(want) {
				t.Fatalf("step %d: acquired %v, the model %v (batches %+v)", step, flat, want, batches)
			}
			if len(got) > 0 {
				acquires++
			}
		case x < 65:
			what = "ack"
			ackStep(t, rng, p, m, now, member, step)
		case x < 75:
			what = "expire"
			var wantNext time.Time
			wantExpired := 0
			for o := m.start; o < m.end; o++ {
				r := m.recs[o]
				if r.state != Acquired {
					continue
				}
				if !r.deadline.After(now) {
					m.release(o)
					wantExpired++
				} else if wantNext.IsZero() || r.deadline.Before(wantNext) {
					wantNext = r.deadline
				}
			}
			m.advance()
			n, next := p.ExpireLocks(now)
			if n != wantExpired || !next.Equal(wantNext) {
				t.Fatalf("step %d: expired %d next %v, the model %d %v", step, n, next, wantExpired, wantNext)
			}
		case x < 80:
			what = "leave"
			want := 0
			for o := m.start; o < m.end; o++ {
				if r := m.recs[o]; r.state == Acquired && r.member == member {
					m.depart(o)
					want++
				}
			}
			m.advance()
			if n := p.ReleaseMember(member); n != want {
				t.Fatalf("step %d: released %d, the model %d", step, n, want)
			}
		case x < 88:
			what = "restore"
			p = snapshotRestore(t, p, m, step)
		case x < 90:
			what = "advance start"
			to := p.StartOffset() + int64(rng.Intn(10)) - 2
			p.AdvanceStart(to)
			if to > m.start {
				for o := m.start; o < to; o++ {
					delete(m.recs, o)
				}
				m.start = to
				m.end = max(m.end, to)
				m.advance()
			}
		default:
			what = "snapshot only"
			s := p.Snapshot()
			if _, err := Restore(p.Config(), s); err != nil {
				t.Fatalf("step %d: restore of a fresh snapshot: %v", step, err)
			}
		}
		ops[what]++
		checkModel(t, p, m, step, what)
	}
	t.Logf("ops %v, %d acquires, final window %d-%d, counts %+v, hw %d", ops, acquires, p.StartOffset(), p.EndOffset(), p.Counts(), hw)
	if acquires < steps/20 || ops["ack"] < steps/5 {
		t.Fatalf("too little happened: %d acquires, %v", acquires, ops)
	}
}

// ackStep acknowledges a random range: usually one the member holds, at
// times a random one (mostly refused).
func ackStep(t *testing.T, rng *rand.Rand, p *Partition, m *model, now time.Time, member string, step int) {
	var r AckRange
	if rng.Intn(4) > 0 {
		// A run the member holds, if any.
		var held []int64
		for o := m.start; o < m.end; o++ {
			if rec := m.recs[o]; rec.state == Acquired && rec.member == member {
				held = append(held, o)
			}
		}
		if len(held) == 0 {
			return
		}
		r.First = held[rng.Intn(len(held))]
		r.Last = r.First
		for r.Last+1 < m.end && m.recs[r.Last+1].member == member && rng.Intn(8) > 0 {
			r.Last++
		}
	} else {
		r.First = m.start - 2 + int64(rng.Intn(int(m.end-m.start)+4))
		r.Last = r.First + int64(rng.Intn(4))
	}
	if rng.Intn(2) == 0 {
		r.Types = []AckType{AckType(rng.Intn(5))}
	} else {
		for range r.Last - r.First + 1 {
			r.Types = append(r.Types, AckType(rng.Intn(5)))
		}
	}
	// The model's verdict.
	valid := r.First >= m.start && r.Last < m.end
	for o := r.First; valid && o <= r.Last; o++ {
		rec := m.recs[o]
		valid = rec.state == Acquired && rec.member == member && rec.deadline.After(now)
	}
	got, err := p.Acknowledge(now, member, r)
	if !valid {
		if err == nil {
			t.Fatalf("step %d: acknowledged %+v by %s, the model refuses", step, r, member)
		}
		return
	}
	if err != nil {
		t.Fatalf("step %d: acknowledge %+v by %s: %v", step, r, member, err)
	}
	var want AckCounts
	for o := r.First; o <= r.Last; o++ {
		typ := r.Types[0]
		if len(r.Types) > 1 {
			typ = r.Types[o-r.First]
		}
		rec := m.recs[o]
		switch typ {
		case AckAccept:
			rec = modelRecord{state: Acknowledged, count: rec.count}
			want.Accepted++
		case AckReject:
			rec = modelRecord{state: Archived, count: rec.count}
			want.Rejected++
		case AckGap:
			rec = modelRecord{state: Archived, count: rec.count}
			want.Gaps++
		case AckRenew:
			rec.deadline = now.Add(m.cfg.LockDuration)
			want.Renewed++
		case AckRelease:
			m.release(o)
			rec = m.recs[o]
			if rec.state == Archived {
				want.Archived++
			} else {
				want.Released++
			}
		}
		m.recs[o] = rec
	}
	m.advance()
	if got != want {
		t.Fatalf("step %d: counts %+v, the model %+v", step, got, want)
	}
}

// snapshotRestore round-trips p through its binary snapshot; the restored
// partition replaces p (a crash) and the model forgets its locks.
func snapshotRestore(t *testing.T, p *Partition, m *model, step int) *Partition {
	b, err := p.Snapshot().MarshalBinary()
	if err != nil {
		t.Fatalf("step %d: marshal: %v", step, err)
	}
	var s Snapshot
	if err := s.UnmarshalBinary(b); err != nil {
		t.Fatalf("step %d: unmarshal: %v", step, err)
	}
	r, err := Restore(p.Config(), s)
	if err != nil {
		t.Fatalf("step %d: restore: %v", step, err)
	}
	for o := p.StartOffset() - 1; o <= p.EndOffset(); o++ {
		ps, pc, _ := p.State(o)
		rs, rc, rm := r.State(o)
		if ps == Acquired {
			ps = Available
		}
		if ps != rs || pc != rc || rm != "" {
			t.Fatalf("step %d: offset %d restored as %v/%d/%q, was %v/%d", step, o, rs, rc, rm, ps, pc)
		}
	}
	for o := m.start; o < m.end; o++ {
		if rec := m.recs[o]; rec.state == Acquired {
			m.recs[o] = modelRecord{state: Available, count: rec.count}
		}
	}
	return r
}

// checkModel compares p with the model and checks the invariants.
func checkModel(t *testing.T, p *Partition, m *model, step int, what string) {
	t.Helper()
	if p.StartOffset() != m.start || p.EndOffset() != m.end {
		t.Fatalf("step %d (%s): window %d-%d, the model %d-%d", step, what, p.StartOffset(), p.EndOffset(), m.start, m.end)
	}
	lag := int64(0)
	for o := max(0, m.start-20); o < m.end+5; o++ {
		s, c, member := p.State(o)
		want := m.get(o)
		if o < m.start {
			// Below SPSO everything is done.
			if !want.state.done() && want != (modelRecord{}) {
				t.Fatalf("step %d (%s): offset %d below SPSO %d is %v in the model", step, what, o, m.start, want.state)
			}
			continue
		}
		if s != want.state || c != want.count || member != want.member {
			t.Fatalf("step %d (%s): offset %d is %v/%d/%q, the model %v/%d/%q", step, what, o, s, c, member, want.state, want.count, want.member)
		}
		if int(c) > m.cfg.DeliveryLimit {
			t.Fatalf("step %d (%s): offset %d delivered %d times, limit %d", step, what, o, c, m.cfg.DeliveryLimit)
		}
		if s == Acquired {
			if d, ok := p.LockDeadline(o); !ok || !d.Equal(want.deadline) {
				t.Fatalf("step %d (%s): offset %d deadline %v, the model %v", step, what, o, d, want.deadline)
			}
		}
		if o < m.end && !s.done() {
			lag++
		}
	}
	if m.start < m.end && m.recs[m.start].state.done() {
		t.Fatalf("step %d (%s): SPSO %d is done", step, what, m.start)
	}
	if p.Counts().Acquired > m.cfg.MaxRecordLocks {
		t.Fatalf("step %d (%s): %d locks, cap %d", step, what, p.Counts().Acquired, m.cfg.MaxRecordLocks)
	}
	if got := p.Lag(m.end); got != lag {
		t.Fatalf("step %d (%s): lag %d, want %d", step, what, got, lag)
	}
	checkCounts(t, p)
}

func clone(recs map[int64]modelRecord) map[int64]modelRecord {
	c := make(map[int64]modelRecord, len(recs))
	for k, v := range recs {
		c[k] = v
	}
	return c
}
