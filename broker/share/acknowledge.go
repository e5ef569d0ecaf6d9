package share

import (
	"fmt"
	"time"
)

// Acknowledge applies one acknowledgement range from member (an
// AcknowledgementBatch of ShareFetch or ShareAcknowledge). It is all or
// nothing:
//   - a malformed range (First > Last, Types of a length other than 1 or
//     Last-First+1, an unknown type) is ErrInvalidRequest;
//   - a range not inside [SPSO, SPEO), or with an offset not Acquired by
//     member, or whose lock expired (deadline <= now, even if ExpireLocks
//     has not run yet), is ErrInvalidRecordState;
//
// and in both cases nothing changes. Otherwise AckAccept makes the record
// Acknowledged, AckReject and AckGap Archived, AckRelease Available (or
// Archived when its delivery count reached DeliveryLimit), and AckRenew
// moves its lock deadline to now+LockDuration. SPSO then advances over
// leading Acknowledged/Archived records.
func (p *Partition) Acknowledge(now time.Time, member string, r AckRange) (AckCounts, error) {
	if r.First > r.Last {
		return AckCounts{}, fmt.Errorf("acknowledge %d-%d: first offset after last: %w", r.First, r.Last, ErrInvalidRequest)
	}
	if n := len(r.Types); n != 1 && int64(n) != r.Last-r.First+1 {
		return AckCounts{}, fmt.Errorf("acknowledge %d-%d: %d acknowledge types: %w", r.First, r.Last, n, ErrInvalidRequest)
	}
	for _, t := range r.Types {
		if !t.valid() {
			return AckCounts{}, fmt.Errorf("acknowledge %d-%d: acknowledge type %d: %w", r.First, r.Last, t, ErrInvalidRequest)
		}
	}
	if r.First < p.start || r.Last >= p.end {
		return AckCounts{}, fmt.Errorf("acknowledge %d-%d: outside the in-flight window %d-%d: %w",
			r.First, r.Last, p.start, p.end-1, ErrInvalidRecordState)
	}
	nowNanos := now.UnixNano()
	for o := r.First; o <= r.Last; o++ {
		rec := p.rec(o)
		switch {
		case rec.state != Acquired:
			return AckCounts{}, fmt.Errorf("acknowledge %d-%d: offset %d is %v: %w", r.First, r.Last, o, rec.state, ErrInvalidRecordState)
		case rec.member != member:
			return AckCounts{}, fmt.Errorf("acknowledge %d-%d: offset %d is acquired by another member: %w", r.First, r.Last, o, ErrInvalidRecordState)
		case rec.deadline <= nowNanos:
			return AckCounts{}, fmt.Errorf("acknowledge %d-%d: the lock of offset %d expired: %w", r.First, r.Last, o, ErrInvalidRecordState)
		}
	}
	var counts AckCounts
	renewed := now.Add(p.cfg.LockDuration).UnixNano()
	for o := r.First; o <= r.Last; o++ {
		t := r.Types[0]
		if len(r.Types) > 1 {
			t = r.Types[o-r.First]
		}
		rec := p.rec(o)
		switch t {
		case AckAccept:
			p.setState(o, rec, Acknowledged)
			counts.Accepted++
		case AckReject:
			p.setState(o, rec, Archived)
			counts.Rejected++
		case AckGap:
			p.setState(o, rec, Archived)
			counts.Gaps++
		case AckRelease:
			if p.release(o, rec) == Archived {
				counts.Archived++
			} else {
				counts.Released++
			}
		case AckRenew:
			rec.deadline = renewed
			counts.Renewed++
		}
	}
	p.advance()
	return counts, nil
}

// release ends the acquisition of the Acquired record r at offset o: it
// becomes Available, or Archived when its delivery count reached the
// delivery limit (the invariant deliveryCount <= DeliveryLimit lives here
// and in Acquire, which never acquires a record at the limit). It returns
// the new state.
func (p *Partition) release(o int64, r *record) RecordState {
	s := Available
	if int(r.deliveryCount) >= p.cfg.DeliveryLimit {
		s = Archived
	}
	p.setState(o, r, s)
	return s
}

// ExpireLocks releases every acquisition whose deadline is at or before
// now (the record becomes Available, or Archived at the delivery limit)
// and returns how many locks timed out, and the earliest deadline of the
// locks still held (the zero Time if none) for the broker's next tick. It
// scans the window up to the last Acquired record.
func (p *Partition) ExpireLocks(now time.Time) (expired int, next time.Time) {
	nowNanos := now.UnixNano()
	var earliest int64
	held := false
	seen, total := 0, p.counts[Acquired]
	for o := p.start; o < p.end && seen < total; o++ {
		r := p.rec(o)
		if r.state != Acquired {
			continue
		}
		seen++
		if r.deadline <= nowNanos {
			p.release(o, r)
			expired++
			continue
		}
		if !held || r.deadline < earliest {
			earliest, held = r.deadline, true
		}
	}
	if expired > 0 {
		p.advance()
	}
	if held {
		next = time.Unix(0, earliest)
	}
	return expired, next
}

// ReleaseMember gives back every record acquired by member (its share
// session closed, or its connection ended): each becomes Available with
// its delivery count lowered by one, as Kafka does, because records still
// Acquired when a session ends were fetched but, as far as the broker can
// tell, never reached the application (a client releases what it handed
// out with AckRelease, which counts). So this acquisition does not count
// toward the delivery limit and never archives. It returns how many.
func (p *Partition) ReleaseMember(member string) int {
	released := 0
	seen, total := 0, p.counts[Acquired]
	for o := p.start; o < p.end && seen < total; o++ {
		r := p.rec(o)
		if r.state != Acquired {
			continue
		}
		seen++
		if r.member == member {
			if r.deliveryCount > 0 {
				r.deliveryCount--
			}
			p.setState(o, r, Available)
			released++
		}
	}
	if released > 0 {
		p.advance()
	}
	return released
}
