//go:build !invariants

package invariants

// Enabled is false: this build does not check invariants (no invariants
// tag); checks guarded by it are compiled out.
const Enabled = false
