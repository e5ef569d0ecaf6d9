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
// this command (embeddedTarget), which hands it to loadgen.StartTarget:
// loadgen itself does not link the broker. `exactly loadgen` parses and
// checks its flags and maps them to a suite of package loadgen/suite,
// which runs it and writes its results. Its delivery modes are listed
// in `exactly loadgen --help` from their registry, package loadgen/modes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

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
		printFlags(stderr, fs)
	}
	return fs
}

// fromWorkload holds, per flag set, the flags whose unset value means
// "the workload's": their help says so instead of a placeholder default.
var fromWorkload sync.Map // *flag.FlagSet -> map[string]bool

// markFromWorkload notes that the named flags of fs default to the
// workload's values.
func markFromWorkload(fs *flag.FlagSet, names ...string) {
	marked := map[string]bool{}
	if old, ok := fromWorkload.Load(fs); ok {
		marked = old.(map[string]bool)
	}
	for _, name := range names {
		marked[name] = true
	}
	fromWorkload.Store(fs, marked)
}

// printFlags prints every flag of fs in the style of the flag package,
// with two dashes: "  --name type", then its description indented, with
// "(default X)" for a default that is not the type's zero value and
// "(default: the workload's)" for flags that take the workload's value
// when unset.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	marked := map[string]bool{}
	if found, ok := fromWorkload.Load(fs); ok {
		marked = found.(map[string]bool)
	}
	fs.VisitAll(func(f *flag.Flag) {
		var line strings.Builder
		fmt.Fprintf(&line, "  %s", dashed(f.Name))
		kind, usage := flag.UnquoteUsage(f)
		if kind != "" {
			line.WriteString(" " + kind)
		}
		switch {
		case marked[f.Name]:
			usage += " (default: the workload's)"
		case !zeroDefault(f):
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %v)", f.DefValue)
			}
		}
		for _, text := range wrap(usage, helpWidth) {
			line.WriteString("\n    \t" + text)
		}
		fmt.Fprintln(w, line.String())
	})
}

// dashed is how a flag is written: --name, or -o for a single letter.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// helpWidth is the width a flag's description is wrapped at, after its
// indent: the help reads in an 80-column terminal.
const helpWidth = 72

// wrap breaks text into lines of at most width runes at spaces (a word
// longer than width gets a line of its own); newlines in text are kept.
func wrap(text string, width int) []string {
	var lines []string
	for _, paragraph := range strings.Split(text, "\n") {
		line := ""
		for _, word := range strings.Fields(paragraph) {
			switch {
			case line == "":
				line = word
			case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width:
				lines = append(lines, line)
				line = word
			default:
				line += " " + word
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// zeroDefault reports whether f's default is its type's zero value,
// which the help leaves out (as the flag package does).
func zeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "0s", "false", "[]":
		return true
	}
	return false
}

// parseFlags parses args. --help prints the whole usage; any other
// mistake (an unknown flag, a value that does not parse, a stray argument)
// is one line, a usageErr, with a did-you-mean for a misspelt flag.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q (flags start with --; values with spaces need quotes)", fs.Arg(0))
	}
	return nil
}

// parseFlagsOnly is parseFlags for a command that takes arguments after
// its flags: they are left in fs.Args().
func parseFlagsOnly(fs *flag.FlagSet, args []string) error {
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
			return fmt.Sprintf("%s %s: %s", dashed(name), value, flagValueReason(fs.Lookup(name), reason))
		}
	}
	// invalid boolean value "maybe" for -quiet: parse error
	if rest, ok := strings.CutPrefix(message, "invalid boolean value "); ok {
		if value, name, ok := strings.Cut(rest, " for -"); ok {
			name, _, _ = strings.Cut(name, ":")
			return fmt.Sprintf("%s=%s: not true or false", dashed(name), value)
		}
	}
	if name, ok := strings.CutPrefix(message, "flag needs an argument: -"); ok {
		return fmt.Sprintf("%s needs a value", dashed(name))
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
