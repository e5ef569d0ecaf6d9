package share

import (
	"testing"
	"time"
)

// BenchmarkAcquireAcknowledge acquires a fresh 500-record batch and
// accepts it, once per iteration (the steady state of one consumer).
func BenchmarkAcquireAcknowledge(b *testing.B) {
	p := New(Config{}, 0)
	ack := AckRange{Types: []AckType{AckAccept}}
	now := t0
	b.ReportAllocs()
	for i := range b.N {
		first := int64(i) * 500
		got := p.Acquire(now, "member-1", 500, first+500, []Batch{{First: first, Last: first + 499}})
		if len(got) != 1 || got[0].Last != first+499 {
			b.Fatalf("acquired %+v", got)
		}
		ack.First, ack.Last = first, first+499
		if _, err := p.Acknowledge(now, "member-1", ack); err != nil {
			b.Fatal(err)
		}
		now = now.Add(time.Millisecond)
	}
}
