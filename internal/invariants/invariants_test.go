package invariants

import "testing"

func TestCheckPanicsWithViolation(t *testing.T) {
	defer func() {
		recovered := recover()
		if !IsViolation(recovered) {
			t.Fatalf("recovered %v (%T), want a Violation", recovered, recovered)
		}
		if got, want := recovered.(Violation).Error(), "invariant violated: 1 > 0"; got != want {
			t.Fatalf("message %q, want %q", got, want)
		}
	}()
	Check(true, "not reached")
	Check(false, "%d > %d", 1, 0)
	t.Fatal("Check(false) returned")
}
