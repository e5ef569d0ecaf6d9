package main

import (
	"fmt"
	"io"
)

func runLoadgen(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("loadgen", "Measures what each delivery guarantee costs and checks every record.", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "exactly loadgen will run the standard suite: at-most-once (acks=0), at-least-once (acks=all, retries, enable.idempotence=false), idempotent (enable.idempotence=true), transactional (transactional.id, commit every 100 ms) and eos-pipeline (read_committed consume-transform-produce) against an embedded broker on 127.0.0.1, checking every record for loss, duplication, reordering and aborted reads.")
	return nil
}
