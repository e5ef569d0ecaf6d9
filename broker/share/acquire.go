package share

import "time"

// Acquire acquires records for member (a ShareFetch): up to maxRecords
// offsets that lie in the given batches (in offset order, as read from the
// log starting at NextFetchOffset) and below limit, each Available in the
// window or at/after EndOffset. It returns the acquired offsets as ranges
// of equal delivery count, in order, or nil when nothing was acquired.
//
// The rules:
//   - Processing starts at NextFetchOffset and goes through the batches in
//     order; it stops at limit, at SPSO+MaxWindow, and when maxRecords or
//     the MaxRecordLocks cap is used up.
//   - Offsets of a Skip batch that are Available or new are archived,
//     never acquired; archiving uses no budget.
//   - Offsets between the previous position and a batch that lie in no
//     batch (compacted away) are gaps: they go with the batch after them,
//     acquired with it (the client acknowledges them as AckGap) or, before
//     a Skip batch, archived with it.
//   - Window records are acquired one by one: at most maxRecords of them.
//   - New records (at or after EndOffset) are acquired a batch (with the
//     gap before it) at a time, as Kafka does, so the last batch may take
//     the count past maxRecords; MaxRecordLocks is never passed (a batch
//     is cut at it). SPEO advances past every new offset taken.
//   - Each acquired record's delivery count is incremented and its lock
//     deadline set to now+LockDuration. An Available record whose count
//     already reached DeliveryLimit (possible only after the limit was
//     lowered) is archived instead.
//
// An empty member or maxRecords <= 0 acquires nothing. SPSO advances over
// leading records archived here.
func (p *Partition) Acquire(now time.Time, member string, maxRecords int, limit int64, batches []Batch) []AcquiredRecords {
	if member == "" || maxRecords <= 0 {
		return nil
	}
	a := acquisition{
		p:         p,
		member:    member,
		deadline:  now.Add(p.cfg.LockDuration).UnixNano(),
		remaining: maxRecords,
		limit:     min(limit, p.start+MaxWindow),
	}
	cursor := p.firstAvailable()
	for _, b := range batches {
		if b.Last < b.First || b.Last < cursor {
			continue // malformed, or already passed
		}
		if b.First >= a.limit || cursor >= a.limit {
			break
		}
		last := min(b.Last, a.limit-1)
		if !a.take(cursor, last, b.Skip) {
			break
		}
		cursor = last + 1
	}
	p.advance()
	return a.ranges
}

// acquisition is the progress of one Acquire call.
type acquisition struct {
	p        *Partition
	member   string
	deadline int64
	// remaining is what is left of maxRecords (it may go negative when a
	// new batch passes it).
	remaining int
	limit     int64
	ranges    []AcquiredRecords
}

// take processes the offsets [first, last] (a batch and the gap before
// it), all below limit; first is at most the SPEO. It reports whether to
// go on with the next batch (false when the budget ran out).
func (a *acquisition) take(first, last int64, skip bool) bool {
	p := a.p
	// Window records, one by one.
	for o := first; o <= last && o < p.end; o++ {
		r := p.rec(o)
		if r.state != Available {
			continue
		}
		switch {
		case skip || int(r.deliveryCount) >= p.cfg.DeliveryLimit:
			p.setState(o, r, Archived)
		case a.remaining <= 0 || p.counts[Acquired] >= p.cfg.MaxRecordLocks:
			return false
		default:
			a.lock(o, r)
			a.remaining--
		}
	}
	if last < p.end {
		return true
	}
	// New records: the offsets [SPEO, last] at once. first <= SPEO holds
	// because processing runs contiguously from NextFetchOffset <= SPEO.
	if first > p.end {
		return false
	}
	n := last - p.end + 1
	if skip {
		for range n {
			p.push(record{state: Archived})
		}
		return true
	}
	room := int64(p.cfg.MaxRecordLocks - p.counts[Acquired])
	if a.remaining <= 0 || room <= 0 {
		return false
	}
	take := min(n, room)
	for range take {
		p.push(record{state: Available})
		o := p.end - 1
		a.lock(o, p.rec(o))
	}
	a.remaining -= int(take)
	return take == n
}

// lock acquires the Available record r at offset o for the member.
func (a *acquisition) lock(o int64, r *record) {
	a.p.setState(o, r, Acquired)
	r.member, r.deadline = a.member, a.deadline
	r.deliveryCount++
	if n := len(a.ranges); n > 0 && a.ranges[n-1].Last == o-1 && a.ranges[n-1].DeliveryCount == r.deliveryCount {
		a.ranges[n-1].Last = o
		return
	}
	a.ranges = append(a.ranges, AcquiredRecords{First: o, Last: o, DeliveryCount: r.deliveryCount})
}
