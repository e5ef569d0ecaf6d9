package share

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// t0 is the time tests start at.
var t0 = time.Unix(1_000_000, 0)

// testConfig is small enough to reach every cap in a test.
var testConfig = Config{LockDuration: 10 * time.Second, MaxRecordLocks: 100, DeliveryLimit: 3}

// one is a batch of the log.
func one(first, last int64) Batch { return Batch{First: first, Last: last} }

// skip is a control or aborted batch.
func skip(first, last int64) Batch { return Batch{First: first, Last: last, Skip: true} }

// states spells the states of [first, last] one letter per offset:
// a Available, q Acquired, k Acknowledged, x Archived.
func states(p *Partition, first, last int64) string {
	var b strings.Builder
	for o := first; o <= last; o++ {
		s, _, _ := p.State(o)
		b.WriteByte(map[RecordState]byte{Available: 'a', Acquired: 'q', Acknowledged: 'k', Archived: 'x'}[s])
	}
	return b.String()
}

// counts spells the delivery counts of [first, last], one digit per offset.
func counts(p *Partition, first, last int64) string {
	var b strings.Builder
	for o := first; o <= last; o++ {
		_, c, _ := p.State(o)
		b.WriteByte(byte('0' + c))
	}
	return b.String()
}

// acquired builds an expected Acquire result.
func acquired(ranges ...int64) []AcquiredRecords {
	var out []AcquiredRecords
	for i := 0; i+2 < len(ranges); i += 3 {
		out = append(out, AcquiredRecords{First: ranges[i], Last: ranges[i+1], DeliveryCount: int16(ranges[i+2])})
	}
	return out
}

// sameRanges compares Acquire results.
func sameRanges(got, want []AcquiredRecords) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// mustAck acknowledges and fails the test on an error.
func mustAck(t *testing.T, p *Partition, now time.Time, member string, first, last int64, types ...AckType) AckCounts {
	t.Helper()
	c, err := p.Acknowledge(now, member, AckRange{First: first, Last: last, Types: types})
	if err != nil {
		t.Fatalf("acknowledge %d-%d by %s: %v", first, last, member, err)
	}
	return c
}

// wantErr fails unless err wraps want.
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// checkCounts fails unless Counts matches a scan of the window.
func checkCounts(t *testing.T, p *Partition) {
	t.Helper()
	var want Counts
	for o := p.StartOffset(); o < p.EndOffset(); o++ {
		switch s, _, _ := p.State(o); s {
		case Available:
			want.Available++
		case Acquired:
			want.Acquired++
		case Acknowledged:
			want.Acknowledged++
		case Archived:
			want.Archived++
		}
	}
	if got := p.Counts(); got != want {
		t.Fatalf("Counts() = %+v, the window holds %+v", got, want)
	}
}
