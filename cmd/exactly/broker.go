package main

import (
	"fmt"
	"io"
)

func runBroker(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("broker", "Runs a single Kafka-compatible broker.", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return fmt.Errorf("%w: the broker arrives with the single-node broker issue", errNotYetAvailable)
}
