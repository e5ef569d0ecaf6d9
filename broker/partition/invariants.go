package partition

import "github.com/exactly-eos/exactly/internal/invariants"

// Run-time checks of the partition's field invariants (the comments on
// partition's fields), compiled in only with the invariants build tag
// (internal/invariants). They run where the transaction state is
// published: after every append and every marker.

// assertInvariantsLocked checks, in invariants builds, that unstableOffset
// is producers.FirstUnstableOffset() (or -1 when none is open) and lies in
// the log, that the published last stable offset is unstableOffset when a
// transaction is open and the log end otherwise — never above the high
// watermark — that a replicated partition's high watermark is within the
// log, and that no snapshot is ahead of the log (caller holds
// appendMu).
func (p *Partition) assertInvariantsLocked() {
	if invariants.Enabled {
		p.checkInvariantsLocked()
	}
}

func (p *Partition) checkInvariantsLocked() {
	firstUnstable := int64(-1)
	if offset, ok := p.producers.FirstUnstableOffset(); ok {
		firstUnstable = offset
	}
	invariants.Check(p.unstableOffset == firstUnstable,
		"partition %s: unstableOffset %d, but the producer state's first unstable offset is %d", p.Name(), p.unstableOffset, firstUnstable)
	logEnd := p.log.LogEndOffset()
	invariants.Check(p.unstableOffset < logEnd,
		"partition %s: unstableOffset %d at or beyond the log end %d", p.Name(), p.unstableOffset, logEnd)
	lastStable := p.lastStable.Load()
	invariants.Check(lastStable <= logEnd,
		"partition %s: last stable offset %d above the high watermark %d", p.Name(), lastStable, logEnd)
	want := logEnd
	if p.unstableOffset >= 0 {
		want = p.unstableOffset
	}
	invariants.Check(lastStable == want,
		"partition %s: last stable offset %d, want %d (unstableOffset %d, log end %d)", p.Name(), lastStable, want, p.unstableOffset, logEnd)
	if p.role.Load() != nil {
		invariants.Check(p.hw.Load() <= logEnd,
			"partition %s: high watermark %d above the log end %d", p.Name(), p.hw.Load(), logEnd)
	}
	invariants.Check(p.snapshotOffset <= logEnd,
		"partition %s: producer snapshot at %d beyond the log end %d", p.Name(), p.snapshotOffset, logEnd)
}
