package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestVersion checks that `exactly version` and `exactly --version` print
// one line naming the binary and the Go version it was built with.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("exactly %v: exit %d, stderr %q", args, code, stderr.String())
		}
		out := stdout.String()
		if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "exactly ") || !strings.Contains(out, runtime.Version()) {
			t.Errorf("exactly %v printed %q; want one line starting with \"exactly \" and naming %s", args, out, runtime.Version())
		}
	}
}
