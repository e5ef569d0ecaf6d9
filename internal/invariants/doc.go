// Package invariants holds the switch and the helpers for run-time checks
// of the invariants written as comments next to the fields they constrain
// (as pebble's invariants package does).
//
// Built with the invariants tag (go test -tags invariants ./...), Enabled
// is true and the checks run; without it Enabled is the constant false, so
// every check written as
//
//	if invariants.Enabled {
//		invariants.Check(l.logStart <= l.logEnd, "log start %d above log end %d", l.logStart, l.logEnd)
//	}
//
// is removed by the compiler and costs nothing. A failed check panics with
// a Violation: an invariant broken at run time is a bug, never a condition
// to handle. Code that turns panics into errors (the broker's per-connection
// recover) re-panics on a Violation, so a test run with the tag fails loudly.
package invariants

import "fmt"

// Violation is the panic value of a failed check.
type Violation struct {
	// Message says which invariant broke, with the values involved.
	Message string
}

// Error makes a Violation print as its message.
func (v Violation) Error() string { return "invariant violated: " + v.Message }

// Check panics with a Violation when cond is false. Call it under
// `if Enabled`, so that the arguments are not even evaluated in builds
// without the tag.
func Check(cond bool, format string, args ...any) {
	if !cond {
		Fail(format, args...)
	}
}

// Fail panics with a Violation carrying the formatted message.
func Fail(format string, args ...any) {
	panic(Violation{Message: fmt.Sprintf(format, args...)})
}

// IsViolation reports whether a recovered panic value is a Violation.
func IsViolation(recovered any) bool {
	_, ok := recovered.(Violation)
	return ok
}
