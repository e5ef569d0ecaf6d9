//go:build invariants

package txn

import (
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/internal/invariants"
)

// TestInvariantPublishedMetadata (invariants build tag only): a state
// that breaks Metadata's field invariants is refused when it is installed,
// instead of being served to DescribeTransactions and the completion.
func TestInvariantPublishedMetadata(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(c *Coordinator, m *Metadata)
		want    string
	}{
		{"participants out of order", func(_ *Coordinator, m *Metadata) {
			m.Partitions = []TopicPartition{{"b", 0}, {"a", 0}}
		}, "not sorted and unique"},
		{"group without its offsets partition", func(_ *Coordinator, m *Metadata) {
			m.Groups = []string{"g"}
		}, "is not a participant"},
		{"closed with participants", func(_ *Coordinator, m *Metadata) {
			m.State = StateCompleteCommit
			m.StartTime = noTimestamp
		}, "with participants"},
		{"open without start time", func(_ *Coordinator, m *Metadata) {
			m.StartTime = noTimestamp
		}, "without a start time"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.start()
			p := h.init("tx", 60_000)
			h.add(p, TopicPartition{"a", 0})
			e, err := h.c.lockEntry("tx", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer e.mu.Unlock()
			next := e.meta.clone()
			if next.State != StateOngoing || len(next.Partitions) != 1 {
				t.Fatalf("set-up state %s with %v, want Ongoing with one participant", next.State, next.Partitions)
			}
			tc.corrupt(h.c, &next)
			defer func() {
				recovered := recover()
				if !invariants.IsViolation(recovered) {
					t.Fatalf("recovered %v, want an invariant violation", recovered)
				}
				if message := recovered.(invariants.Violation).Message; !strings.Contains(message, tc.want) {
					t.Fatalf("violation %q, want one saying %q", message, tc.want)
				}
			}()
			h.c.publish(e, next)
			t.Fatal("publish installed a state that breaks Metadata's invariants")
		})
	}
}
