//go:build invariants

package storage

import (
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/internal/invariants"
)

// These tests run only with the invariants build tag
// (go test -tags invariants): each breaks one invariant of the Log by
// hand and checks that the next state change reports it.

// expectViolation runs fn and checks it panics with an invariants
// Violation whose message contains want.
func expectViolation(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		recovered := recover()
		if !invariants.IsViolation(recovered) {
			t.Fatalf("recovered %v, want an invariant violation about %q", recovered, want)
		}
		if message := recovered.(invariants.Violation).Message; !strings.Contains(message, want) {
			t.Fatalf("violation %q, want one about %q", message, want)
		}
	}()
	fn()
	t.Fatalf("no invariant violation, want one about %q", want)
}

// corruptedLog opens a log with a few batches and applies corrupt to its
// published state under mu. The log is left open: the violation panics
// with mu held, so it cannot be closed (its directory goes with the test).
func corruptedLog(t *testing.T, corrupt func(l *Log)) *Log {
	t.Helper()
	l, _, err := Open(t.TempDir(), Options{IndexIntervalBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	for seq := int32(0); seq < 3; seq++ {
		if _, err := l.Append(testBatch(t, seq, 2, 10, int64(1000+seq))); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.Lock()
	corrupt(l)
	l.mu.Unlock()
	return l
}

func TestInvariantLogEndIsActiveSegmentEnd(t *testing.T) {
	t.Parallel()
	l := corruptedLog(t, func(l *Log) { l.logEnd++ })
	expectViolation(t, "is not the active segment's end", func() { l.DeleteRecordsBefore(1) })
}

func TestInvariantLogStartNotAboveLogEnd(t *testing.T) {
	t.Parallel()
	l := corruptedLog(t, func(l *Log) { l.logStart = l.logEnd + 10 })
	expectViolation(t, "above log end", func() { l.Append(testBatch(t, 3, 1, 10, 2000)) })
}

func TestInvariantSegmentsContiguous(t *testing.T) {
	t.Parallel()
	l := corruptedLog(t, func(l *Log) {})
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.segments[0].end-- // the second segment no longer starts where the first ends
	l.mu.Unlock()
	expectViolation(t, "does not start at the previous segment's end", func() { l.Append(testBatch(t, 3, 1, 10, 2000)) })
}

func TestInvariantOffsetIndexIncreasing(t *testing.T) {
	t.Parallel()
	l := corruptedLog(t, func(l *Log) {
		active := l.active()
		if len(active.offsets) == 0 {
			t.Fatal("no offset index entries to corrupt")
		}
		active.offsets[len(active.offsets)-1].position = 0 // not above the entry before it
	})
	expectViolation(t, "offset index entries", func() { l.Roll() })
}
