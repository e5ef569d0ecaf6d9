// Package testenv decides what a test does when something outside Go that
// it needs — a program such as kcat, a server such as PostgreSQL — is
// missing: outside CI it skips with one line saying what is missing and how
// to get it, so `go test ./...` passes on a machine with only Go; in CI
// (CI=true or EXACTLY_CI set, as ci/test.sh does) it fails, because CI
// installs everything and a missing program there is a broken CI.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run in CI, where nothing may be skipped
// for lack of a program or server.
func InCI() bool {
	return os.Getenv("CI") == "true" || os.Getenv("EXACTLY_CI") != ""
}

// Missing skips the test outside CI and fails it in CI, with one line:
// what is missing and how to provide it.
func Missing(t testing.TB, what, howToGet string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s is missing, and CI must run this test: %s", what, howToGet)
		return
	}
	t.Skipf("skipped: %s is missing (%s)", what, howToGet)
}

// Program returns the path of the program name, or skips (outside CI) or
// fails (in CI) the test when it is not on PATH.
func Program(t testing.TB, name, howToGet string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, howToGet)
		return ""
	}
	return path
}
