//go:build invariants

package group

import (
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/internal/invariants"
)

// TestInvariantMembersInCurrentGeneration (invariants build tag only): a
// Stable group with a member left in an older generation fails the
// group's invariant when the next operation (a heartbeat) releases it.
func TestInvariantMembersInCurrentGeneration(t *testing.T) {
	h := newHarness(t, nil)
	first := h.join(newJoin("g", ""))
	joined := h.join(newJoin("g", first.MemberID))
	if joined.err != nil {
		t.Fatalf("join: %v", joined.err)
	}
	if synced := h.sync(newSync("g", joined.MemberID, joined.Generation, map[string]string{joined.MemberID: "a"})); synced.err != nil {
		t.Fatalf("sync: %v", synced.err)
	}
	var corrupted *group
	h.inspect("g", func(g *group) bool {
		if g.state != stateStable {
			t.Fatalf("group %v, want Stable", g.state)
		}
		g.members[joined.MemberID].joinedGeneration-- // as if it had missed the last join
		corrupted = g
		return true
	})

	defer func() {
		recovered := recover()
		if recovered != nil {
			// The check panicked with the group locked: repair and
			// release it, so the harness can close the coordinator.
			corrupted.members[joined.MemberID].joinedGeneration++
			corrupted.mu.Unlock()
		}
		if !invariants.IsViolation(recovered) {
			t.Fatalf("recovered %v, want an invariant violation", recovered)
		}
		if message := recovered.(invariants.Violation).Message; !strings.Contains(message, "joined generation") {
			t.Fatalf("violation %q, want one about the member's generation", message)
		}
	}()
	h.heartbeat("g", joined.MemberID, joined.Generation)
	t.Fatal("the heartbeat released a group whose member is in an older generation")
}
