package storage

import "github.com/exactly-eos/exactly/internal/invariants"

// Run-time checks of the Log's invariants (the comment on Log.mu, the
// index formats in the package doc), compiled in only with the invariants build
// tag. They run where the published state changes, under Log.mu.

// assertInvariantsLocked checks the published state in invariants builds
// (caller holds mu): segments non-empty and contiguous, each one's base
// the previous one's end; logStart <= logEnd == the last segment's end;
// logStart >= the first segment's base; only the active segment holds an
// open transaction index; the active segment's newest index entries
// increasing and inside it.
func (l *Log) assertInvariantsLocked() {
	if invariants.Enabled {
		l.checkInvariantsLocked()
	}
}

// assertSegmentIndexesLocked checks all of a segment's loaded index
// entries (caller holds mu): used when a segment is sealed, once per
// segment, so the cost stays linear.
func (l *Log) assertSegmentIndexesLocked(s *segment) {
	if invariants.Enabled {
		checkIndexes(l.dir, s, s.offsets, s.times)
	}
}

func (l *Log) checkInvariantsLocked() {
	if l.closed && len(l.segments) == 0 {
		return // released
	}
	invariants.Check(len(l.segments) > 0, "log %s: no segments", l.dir)
	for i, s := range l.segments {
		invariants.Check(s.size >= 0 && s.base <= s.end, "log %s: segment %d: size %d, end %d", l.dir, s.base, s.size, s.end)
		invariants.Check(s.base <= s.lastBatchBase && (s.lastBatchBase < s.end || s.lastBatchBase == s.base),
			"log %s: segment %d: newest batch base %d outside [base, end %d)", l.dir, s.base, s.lastBatchBase, s.end)
		invariants.Check(s.txnFile == nil || i == len(l.segments)-1,
			"log %s: sealed segment %d keeps its transaction index open", l.dir, s.base)
		if i > 0 {
			previous := l.segments[i-1]
			invariants.Check(s.base == previous.end, "log %s: segment %d does not start at the previous segment's end %d (segment %d)",
				l.dir, s.base, previous.end, previous.base)
		}
	}
	first, last := l.segments[0], l.segments[len(l.segments)-1]
	invariants.Check(l.logStart <= l.logEnd, "log %s: log start %d above log end %d", l.dir, l.logStart, l.logEnd)
	invariants.Check(l.logEnd == last.end, "log %s: log end %d is not the active segment's end %d", l.dir, l.logEnd, last.end)
	invariants.Check(l.logStart >= first.base, "log %s: log start %d below the first segment's base %d", l.dir, l.logStart, first.base)
	checkIndexes(l.dir, last, tail(last.offsets, 2), tail(last.times, 2))
}

// checkIndexes checks that offset and time index entries of s increase and
// stay inside the segment (the rules recovery applies to index files).
func checkIndexes(dir string, s *segment, offsets []indexEntry, times []timeEntry) {
	invariants.Check(validOffsetIndex(offsets, s.size, s.end-s.base),
		"log %s: segment %d: offset index entries %v not increasing or outside the segment (size %d, end %d)",
		dir, s.base, offsets, s.size, s.end)
	invariants.Check(validTimeIndex(times, s.end-s.base),
		"log %s: segment %d: time index entries %v not increasing or outside the segment (end %d)", dir, s.base, times, s.end)
}

// tail is the last n elements of entries (all of them when fewer).
func tail[T any](entries []T, n int) []T {
	return entries[max(len(entries)-n, 0):]
}
