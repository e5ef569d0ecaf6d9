package share

import "time"

// MaxWindow caps the window: SPEO-SPSO never exceeds it. Acquire does not
// extend the window past SPSO+MaxWindow (NextFetchOffset reports nothing
// to acquire instead) and Restore refuses larger snapshots, so a corrupt
// snapshot cannot make Restore allocate without bound. Kafka caps the
// window with group.share.partition.max.record.locks; here that setting
// caps the Acquired records and this constant only guards memory.
const MaxWindow = 1 << 20

// record is the state of one offset of the window.
type record struct {
	// member holds the acquisition lock; set only while state == Acquired.
	member string
	// deadline is when the lock expires, as now.UnixNano() + LockDuration;
	// set only while state == Acquired.
	deadline int64
	// deliveryCount counts the acquisitions, less those given back by a
	// session's end (ReleaseMember); never above the delivery limit (a
	// release or lock expiry at the limit archives the record).
	deliveryCount int16
	state         RecordState
}

// Partition is the state of one share-partition: the in-flight window of
// one share group on one topic partition, kept by the partition leader.
//
// A Partition is not safe for concurrent use: the broker holds a mutex per
// share-partition around every call. It never reads the clock: the
// methods that need the time take it as now.
type Partition struct {
	cfg Config

	// start is the SPSO, end the SPEO. Invariants: start <= end; every
	// offset below start is done (Acknowledged or Archived); the record
	// at start, if start < end, is not done (leading done records are
	// dropped as soon as they appear, by advance); offsets at or after end
	// were never acquired.
	start, end int64
	// buf[head:] is the window: buf[head+i] is offset start+i, and
	// len(buf)-head == end-start. Records dropped from the front are
	// cleared and skipped by moving head; buf is compacted when head
	// passes half of it (amortized O(1) per dropped record).
	buf  []record
	head int
	// counts[s] is the number of records of the window in state s
	// (indexed by the RecordState value); counts[Acquired] is the number
	// of locks held. Kept by setState, append and drop.
	counts [Archived + 1]int
	// availableFrom is a lower bound of the first Available record: no
	// record in [start, availableFrom) is Available. firstAvailable moves
	// it forward; making a record Available moves it back.
	availableFrom int64

	leaderEpoch int32
	stateEpoch  int32
}

// New returns an empty share-partition whose SPSO and SPEO are
// startOffset. Zero fields of cfg take their defaults.
func New(cfg Config, startOffset int64) *Partition {
	return &Partition{cfg: cfg.WithDefaults(), start: startOffset, end: startOffset, availableFrom: startOffset}
}

// Config is the partition's configuration (with defaults filled).
func (p *Partition) Config() Config { return p.cfg }

// StartOffset is the share-partition start offset (SPSO): every offset
// below it is acknowledged or archived.
func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset is the share-partition end offset (SPEO): the first offset
// never acquired.
func (p *Partition) EndOffset() int64 { return p.end }

// LeaderEpoch is the leader epoch the next Snapshot carries.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch }

// SetLeaderEpoch sets the leader epoch snapshots carry (the epoch of the
// partition leader that keeps this state; the share coordinator fences
// writes of older leaders with it).
func (p *Partition) SetLeaderEpoch(epoch int32) { p.leaderEpoch = epoch }

// StateEpoch is the state epoch: Reset bumps it.
func (p *Partition) StateEpoch() int32 { return p.stateEpoch }

// NextFetchOffset is the lowest offset >= SPSO that could be acquired
// now: the first Available record of the window, else EndOffset. ok is
// false when nothing can be acquired: the offset is at or beyond limit
// (the high watermark, or the last stable offset for read_committed),
// MaxRecordLocks records are already Acquired, or the window is full
// (MaxWindow) and offset is EndOffset.
func (p *Partition) NextFetchOffset(limit int64) (offset int64, ok bool) {
	offset = p.firstAvailable()
	switch {
	case offset >= limit, p.counts[Acquired] >= p.cfg.MaxRecordLocks:
		return offset, false
	case offset == p.end && p.end-p.start >= MaxWindow:
		return offset, false
	}
	return offset, true
}

// firstAvailable is the first Available offset of the window, else end.
func (p *Partition) firstAvailable() int64 {
	o := max(p.availableFrom, p.start)
	for o < p.end && p.rec(o).state != Available {
		o++
	}
	p.availableFrom = o
	return o
}

// AdvanceStart moves SPSO up to offset because the log start passed it
// (retention, DeleteRecords): the records below it leave the window,
// Acquired ones too (their locks are dropped; acknowledging them later is
// refused). A no-op when offset <= SPSO.
func (p *Partition) AdvanceStart(offset int64) {
	if offset <= p.start {
		return
	}
	if offset >= p.end {
		p.drop(p.end - p.start)
		p.start, p.end = offset, offset
		p.availableFrom = offset
		return
	}
	p.drop(offset - p.start)
	p.advance()
}

// Reset sets SPSO and SPEO to offset, forgets the window and bumps the
// state epoch (AlterShareGroupOffsets). The broker calls it only while
// the share group has no members, so no lock is held.
func (p *Partition) Reset(offset int64) {
	p.drop(p.end - p.start)
	p.buf, p.head = p.buf[:0], 0
	p.start, p.end, p.availableFrom = offset, offset, offset
	p.stateEpoch++
}

// Counts counts the records of the window by state.
func (p *Partition) Counts() Counts {
	return Counts{
		Available:    p.counts[Available],
		Acquired:     p.counts[Acquired],
		Acknowledged: p.counts[Acknowledged],
		Archived:     p.counts[Archived],
	}
}

// Lag is the number of records in [SPSO, highWatermark) that are not yet
// Acknowledged or Archived: highWatermark - SPSO minus the done records of
// the window below highWatermark. Never negative.
func (p *Partition) Lag(highWatermark int64) int64 {
	if highWatermark <= p.start {
		return 0
	}
	var finished int64
	if highWatermark >= p.end {
		finished = int64(p.counts[Acknowledged] + p.counts[Archived])
	} else {
		for o := p.start; o < highWatermark; o++ {
			if p.rec(o).state.done() {
				finished++
			}
		}
	}
	return highWatermark - p.start - finished
}

// State reports one offset's state, delivery count and, while it is
// Acquired, the member holding it. Offsets below SPSO report Archived
// with delivery count 0 (they are done; which final state they reached is
// forgotten); offsets at or after SPEO report Available with count 0.
func (p *Partition) State(offset int64) (state RecordState, deliveryCount int16, member string) {
	switch {
	case offset < p.start:
		return Archived, 0, ""
	case offset >= p.end:
		return Available, 0, ""
	}
	r := p.rec(offset)
	return r.state, r.deliveryCount, r.member
}

// LockDeadline is when the acquisition lock of offset expires; ok is false
// when the offset is not Acquired.
func (p *Partition) LockDeadline(offset int64) (deadline time.Time, ok bool) {
	if offset < p.start || offset >= p.end || p.rec(offset).state != Acquired {
		return time.Time{}, false
	}
	return time.Unix(0, p.rec(offset).deadline), true
}

// rec is the record of offset, which must lie in [start, end). The
// pointer is valid until the window next grows or shrinks.
func (p *Partition) rec(offset int64) *record {
	return &p.buf[p.head+int(offset-p.start)]
}

// setState moves r to state s, keeping counts (and availableFrom when r
// becomes Available at offset) in step. It clears the lock unless s is
// Acquired.
func (p *Partition) setState(offset int64, r *record, s RecordState) {
	p.counts[r.state]--
	p.counts[s]++
	r.state = s
	if s != Acquired {
		r.member, r.deadline = "", 0
	}
	if s == Available && offset < p.availableFrom {
		p.availableFrom = offset
	}
}

// push appends a record at end (extending the window by one offset).
func (p *Partition) push(r record) {
	p.buf = append(p.buf, r)
	p.counts[r.state]++
	p.end++
}

// drop removes the first n records of the window, moving start up by n.
func (p *Partition) drop(n int64) {
	if n <= 0 {
		return
	}
	dropped := p.buf[p.head : p.head+int(n)]
	for i := range dropped {
		p.counts[dropped[i].state]--
	}
	clear(dropped) // let the member strings go
	p.head += int(n)
	p.start += n
	live := len(p.buf) - p.head
	switch {
	case live == 0:
		p.buf, p.head = p.buf[:0], 0
	case p.head >= live && p.head >= 64:
		// Compact: copying live records is paid for by the head >= live
		// records dropped since the last compaction.
		copy(p.buf, p.buf[p.head:])
		clear(p.buf[live:])
		p.buf, p.head = p.buf[:live], 0
	}
}

// advance moves SPSO over leading done records (the invariant of start).
func (p *Partition) advance() {
	var n int64
	for p.start+n < p.end && p.buf[p.head+int(n)].state.done() {
		n++
	}
	p.drop(n)
}
