// Command exactly is a Kafka-wire-compatible broker that implements the
// machinery of exactly-once delivery, and a load generator that measures what
// each delivery guarantee costs and checks what it delivered.
//
//	exactly broker     run a single Kafka broker
//	exactly cluster    run a local multi-broker cluster
//	exactly loadgen    run the delivery-guarantee benchmark suite
//	exactly dashboard  render result JSON files as an HTML dashboard
//	exactly version    print the version (also: exactly --version)
//
// The load generator (package loadgen) runs against the broker embedded in
// this command (target_embedded.go), which hands it to loadgen.StartTarget:
// loadgen itself does not link the broker. Its delivery modes are listed
// in `exactly loadgen --help` from their registry, package loadgen/modes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// subcommand is one `exactly <name>` entry point. run receives the arguments
// after the subcommand name and returns an error to print; errUsage means the
// flag package already printed what was wrong.
type subcommand struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// errUsage marks errors whose message flag parsing has already printed.
var errUsage = errors.New("usage")

// errNotYetAvailable is returned by subcommands that a later issue fills in.
var errNotYetAvailable = errors.New("not yet available")

func subcommands() []subcommand {
	return []subcommand{
		{"broker", "run a Kafka-compatible broker with idempotence and transactions", runBroker},
		{"cluster", "run a local cluster of brokers with replication", runCluster},
		{"loadgen", "measure delivery guarantees (at-most-once … exactly-once) and check every record", runLoadgen},
		{"dashboard", "render results JSON files into one self-contained HTML page", runDashboard},
		{"version", "print the version, VCS revision and Go version of this binary", runVersion},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		fmt.Fprintln(stdout, versionLine())
		return 0
	}
	for _, sc := range subcommands() {
		if sc.name != args[0] {
			continue
		}
		err := sc.run(args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		default:
			fmt.Fprintf(stderr, "exactly %s: %v\n", sc.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "exactly: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "exactly: a Kafka-compatible broker with exactly-once machinery, and a load generator that proves what each delivery guarantee delivers.")
	fmt.Fprintln(w, "\nUsage: exactly <command> [flags]\n\nCommands:")
	for _, sc := range subcommands() {
		fmt.Fprintf(w, "  %-10s %s\n", sc.name, sc.summary)
	}
	fmt.Fprintln(w, "\nRun 'exactly <command> --help' for the command's flags.")
}

// newFlagSet returns a flag set that prints its usage with a description
// line to stderr and returns errors instead of exiting.
func newFlagSet(name, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("exactly "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: exactly %s [flags]\n\n%s\n\nFlags:\n", name, description)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and maps flag errors to errUsage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %v\n", fs.Args())
		fs.Usage()
		return errUsage
	}
	return nil
}
