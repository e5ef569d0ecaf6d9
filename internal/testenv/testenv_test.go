package testenv

import (
	"os/exec"
	"testing"
)

func TestProgramFindsGo(t *testing.T) {
	want, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: go is not on PATH here")
	}
	if got := Program(t, "go", "it runs these tests"); got != want {
		t.Fatalf("Program(go) = %q, want %q", got, want)
	}
}

// fakeTB records how Missing ended a test without ending this one.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()                          {}
func (f *fakeTB) Skipf(format string, args ...any) { f.skipped = true }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = true
}

func TestMissingSkipsOutsideCIAndFailsInCI(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv("EXACTLY_CI", "")
	local := &fakeTB{}
	Missing(local, "kcat", "apt-get install kcat")
	if !local.skipped || local.failed {
		t.Fatalf("outside CI: skipped %v failed %v, want a skip", local.skipped, local.failed)
	}
	t.Setenv("EXACTLY_CI", "1")
	ci := &fakeTB{}
	Missing(ci, "kcat", "apt-get install kcat")
	if !ci.failed || ci.skipped {
		t.Fatalf("in CI: skipped %v failed %v, want a failure", ci.skipped, ci.failed)
	}
}
