package main

import (
	"flag"
	"io"
	"testing"
)

// The sustainable-rate search of cost rounds at fractions loads the
// find-max workload with the command line's flags; --rounds is the cost
// workload's and must not make that load fail (it did: "workload find-max
// does not run interleaved rounds").
func TestSearchWorkloadIgnoresRounds(t *testing.T) {
	t.Parallel()
	var flags loadgenFlags
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags.register(fs)
	if err := fs.Parse([]string{"--workload", "cost", "--rounds", "2", "--record-size", "256"}); err != nil {
		t.Fatal(err)
	}
	search, err := flags.workloadNamed("find-max")
	if err != nil {
		t.Fatalf("load the search workload: %v", err)
	}
	if search.RecordSize != 256 {
		t.Errorf("the search workload's record size is %d; the flags' shape (256) should apply", search.RecordSize)
	}
	if flags.rounds != 2 {
		t.Errorf("loading the search workload changed --rounds to %d", flags.rounds)
	}
}
