package main

import (
	"fmt"
	"io"

	"github.com/exactly-eos/exactly/internal/buildinfo"
)

// versionLine is what `exactly version` and `exactly --version` print
// (buildinfo.Line).
func versionLine() string { return buildinfo.Line() }

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "Prints the version of this binary: module version, VCS revision and Go version.", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, versionLine())
	return nil
}
