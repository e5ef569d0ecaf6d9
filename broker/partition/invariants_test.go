//go:build invariants

package partition

import (
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/internal/invariants"
	"github.com/exactly-eos/exactly/wire"
)

// TestInvariantUnstableOffset (invariants build tag only): a partition
// whose unstableOffset disagrees with its producer state (a transaction
// open where none is) fails the invariant at the next append, which
// publishes the last stable offset.
func TestInvariantUnstableOffset(t *testing.T) {
	t.Parallel()
	p := openTestPartition(t, t.TempDir(), 0)
	records, err := wire.BuildBatch(wire.PlainBatchOptions(), []wire.BuilderRecord{{TimestampMillis: 1, Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendProduced(records, nil); err != nil {
		t.Fatalf("produce: %v", err)
	}
	info, err := Analyze(OriginClient, records, 0, 1<<62, nil)
	if err != nil {
		t.Fatal(err)
	}

	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.unstableOffset = 0 // as if a transaction were open at offset 0
	defer func() {
		p.unstableOffset = -1 // restore, so the partition closes cleanly
		recovered := recover()
		if !invariants.IsViolation(recovered) {
			t.Fatalf("recovered %v, want an invariant violation", recovered)
		}
		if message := recovered.(invariants.Violation).Message; !strings.Contains(message, "first unstable offset") {
			t.Fatalf("violation %q, want one about unstableOffset", message)
		}
	}()
	p.appendLocked(OriginClient, records, &info, &AppendOptions{})
	t.Fatal("the append published a last stable offset that disagrees with the producer state")
}
