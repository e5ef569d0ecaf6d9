// Package buildinfo names the running binary's version, from the build
// information the Go toolchain embeds.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Line is what `exactly version` prints and a load generator worker
// names itself by in its handshake: the
// module version (a tag for `go install …@v1.2.3`, "(devel)" for a build
// from a clone), the VCS revision and whether the tree had changes, and the
// Go version, all read from the binary's build info.
func Line() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "exactly (no build info)"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var revision, modified, when string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		case "vcs.time":
			when = s.Value
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "exactly %s", version)
	if len(revision) > 12 {
		revision = revision[:12]
	}
	// Since Go 1.24 a build from a clone carries a pseudo-version that
	// already names the revision (v0.0.0-<time>-<revision>[+dirty]).
	if revision != "" && !strings.Contains(version, revision) {
		fmt.Fprintf(&b, " revision %s%s", revision, modified)
	}
	if when != "" {
		fmt.Fprintf(&b, " committed %s", when)
	}
	fmt.Fprintf(&b, " %s %s/%s", info.GoVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
