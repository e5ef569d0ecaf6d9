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
	"strings"

	"github.com/exactly-eos/exactly/internal/suggest"
)

// subcommand is one `exactly <name>` entry point. run receives the arguments
// after the subcommand name and returns an error to print; errUsage means the
// flag package already printed what was wrong.
type subcommand struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// errUsage marks errors whose message has already been printed.
var errUsage = errors.New("usage")

// usageErr is a mistake on the command line: run prints it as one line,
// "exactly <command>: <message>", then where the flags are described, and
// exits with status 2. It never prints the whole usage.
type usageErr struct{ message string }

func (e *usageErr) Error() string { return e.message }

// usageError returns a usageErr with a formatted message; the message names
// the flag and what it accepts (e.g. "--rate -5: must be 0 or more").
func usageError(format string, args ...any) error {
	return &usageErr{message: fmt.Sprintf(format, args...)}
}

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
		var mistake *usageErr
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &mistake):
			fmt.Fprintf(stderr, "exactly %s: %s\nsee 'exactly %s --help'\n", sc.name, mistake.message, sc.name)
			return 2
		case errors.Is(err, errUsage):
			return 2
		default:
			fmt.Fprintf(stderr, "exactly %s: %v\n", sc.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "exactly: unknown command %q%s\nsee 'exactly --help'\n", args[0], suggest.DidYouMean(args[0], subcommandNames()))
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

// parseFlags parses args. --help prints the whole usage; any other
// mistake (an unknown flag, a value that does not parse, a stray argument)
// is one line, a usageErr, with a did-you-mean for a misspelt flag.
func parseFlags(fs *flag.FlagSet, args []string) error {
	output, usage := fs.Output(), fs.Usage
	// The flag package prints the error and the whole usage itself;
	// silence both and let run print the one line.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(output)
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return err
		}
		return usageError("%s", flagMistake(fs, err))
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q (flags start with --; values with spaces need quotes)", fs.Arg(0))
	}
	return nil
}

// flagMistake rewords the flag package's parse error in the words of
// this command line: "unknown flag --rat; did you mean --rate?".
func flagMistake(fs *flag.FlagSet, err error) string {
	const undefined = "flag provided but not defined: -"
	message := err.Error()
	if name, ok := strings.CutPrefix(message, undefined); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if best := suggest.Closest(name, names); best != "" {
			return fmt.Sprintf("unknown flag --%s; did you mean --%s?", name, best)
		}
		return fmt.Sprintf("unknown flag --%s", name)
	}
	// invalid value "x" for flag -brokers: parse error
	if rest, ok := strings.CutPrefix(message, "invalid value "); ok {
		if value, after, ok := strings.Cut(rest, " for flag -"); ok {
			name, reason, _ := strings.Cut(after, ": ")
			return fmt.Sprintf("--%s %s: %s", name, value, flagValueReason(fs.Lookup(name), reason))
		}
	}
	// invalid boolean value "maybe" for -quiet: parse error
	if rest, ok := strings.CutPrefix(message, "invalid boolean value "); ok {
		if value, name, ok := strings.Cut(rest, " for -"); ok {
			name, _, _ = strings.Cut(name, ":")
			return fmt.Sprintf("--%s=%s: not true or false", name, value)
		}
	}
	if name, ok := strings.CutPrefix(message, "flag needs an argument: -"); ok {
		return fmt.Sprintf("--%s needs a value", name)
	}
	return message
}

// flagValueReason says what a flag of f's kind accepts, for a value that
// did not parse.
func flagValueReason(f *flag.Flag, reason string) string {
	if f == nil {
		return reason
	}
	type boolFlag interface{ IsBoolFlag() bool }
	switch value := f.Value.(type) {
	case boolFlag:
		if value.IsBoolFlag() {
			return "not true or false"
		}
	}
	switch fmt.Sprintf("%T", f.Value) {
	case "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value":
		return "not a whole number"
	case "*flag.float64Value":
		return "not a number"
	case "*flag.durationValue":
		return "not a duration (e.g. 500ms, 30s, 2m)"
	}
	return reason
}

func subcommandNames() []string {
	var names []string
	for _, sc := range subcommands() {
		names = append(names, sc.name)
	}
	return names
}
