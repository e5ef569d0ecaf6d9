package worker

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Role runs one worker role: it reports on reporter (ready once it can
// be killed meaningfully) and works until ctx ends (stdin closed) or its
// work is done. crash is the crash point the runner asked for.
type Role func(ctx context.Context, spec Spec, reporter *Reporter, crash *CrashPoint) error

// Serve is `exactly loadgen worker --spec JSON`: it decodes the spec,
// reads the runner's commands from stdin until it closes (which ends the
// role's context), and runs the spec's role, reporting on stdout; a
// role's error is reported as a fatal event too.
func Serve(args []string, stdin io.Reader, stdout io.Writer, roles map[string]Role) error {
	flags := flag.NewFlagSet("exactly loadgen worker", flag.ContinueOnError)
	specText := flags.String("spec", "", "the worker's settings, JSON")
	if err := flags.Parse(args); err != nil {
		return err
	}
	var spec Spec
	if err := json.Unmarshal([]byte(*specText), &spec); err != nil {
		return fmt.Errorf("worker spec: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The runner closes stdin to stop the worker (and so does its death);
	// lines before that are commands.
	crash := &CrashPoint{}
	go func() {
		readCommands(stdin, crash)
		cancel()
	}()
	reporter := NewReporter(stdout)
	var err error
	if role, ok := roles[spec.Role]; ok {
		err = role(ctx, spec, reporter, crash)
	} else {
		names := make([]string, 0, len(roles))
		for name := range roles {
			names = append(names, name)
		}
		slices.Sort(names)
		err = fmt.Errorf("worker role %q is not one of %s", spec.Role, strings.Join(names, ", "))
	}
	if err != nil {
		reporter.Emit(Event{Event: "fatal", Message: err.Error()})
	}
	return err
}
