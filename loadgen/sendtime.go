package loadgen

import (
	"sync"
	"time"
)

// Latency origin. At a fixed rate a record's latency counts from its
// scheduled send time, the time the pacer's schedule said it should be
// sent, not from when the producer got round to creating it: a producer
// blocked behind a stalled broker (Produce blocks on a full buffer, a
// transaction's flush waits) falls behind its schedule, and a latency
// counted from the late creation would hide that wait (coordinated
// omission). The figure counted from the creation is kept beside it as
// the uncorrected one. Unpaced (maximum-rate) runs have no schedule:
// their latencies count from the creation, as before.

// sendTimeOf is the send time a record's header carries: due, its
// scheduled send time, or now when unpaced (due zero) or when the pacer
// let it go early (it does not sleep for less than a millisecond), so the
// corrected latency is never below the uncorrected one.
func sendTimeOf(due, now time.Time) time.Time {
	if due.IsZero() || now.Before(due) {
		return now
	}
	return due
}

// ackTimes are the times a record's produce-ack latency counts from: sent,
// the header's send time (scheduled at a fixed rate), and, at a fixed rate
// (paced), created, when it was handed to the client.
type ackTimes struct {
	sent    time.Time
	created time.Time
	paced   bool
}

// creationTimes remembers when each record of a paced producer still
// awaiting its outcome was handed to the client, by sequence: the
// uncorrected send time, which the record's header does not carry. The
// producer goroutine notes, the client's promise takes; a nil
// creationTimes (unpaced) keeps nothing.
type creationTimes struct {
	mu      sync.Mutex
	created map[uint64]int64 // sequence → Unix nanoseconds
}

// newCreationTimes returns a creationTimes for a paced producer, nil for
// an unpaced one.
func newCreationTimes(paced bool) *creationTimes {
	if !paced {
		return nil
	}
	return &creationTimes{created: make(map[uint64]int64)}
}

// note records that seq was handed to the client at now.
func (c *creationTimes) note(seq uint64, now time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.created[seq] = now.UnixNano()
	c.mu.Unlock()
}

// take returns and forgets when seq was handed to the client; ok is false
// when c is nil or seq was never noted. A record a single writer resends
// keeps the time it was first handed to the client.
func (c *creationTimes) take(seq uint64) (created time.Time, ok bool) {
	if c == nil {
		return time.Time{}, false
	}
	c.mu.Lock()
	nanos, ok := c.created[seq]
	delete(c.created, seq)
	c.mu.Unlock()
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(0, nanos), true
}
