package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/exactly-eos/exactly/internal/buildinfo"
)

// Role runs one worker role: it reports on reporter (ready once it can
// be killed meaningfully) and works until ctx ends (stdin closed) or its
// work is done. crash is the crash point the runner asked for.
type Role func(ctx context.Context, spec Spec, reporter *Reporter, crash *CrashPoint) error

// Serve is `exactly loadgen worker`: it says hello (the protocol it
// speaks), reads the runner's handshake (its spec) from the first line of
// stdin, then the runner's commands until stdin closes (which ends the
// role's context), and runs the spec's role, reporting on stdout; a
// role's error is reported as a fatal event too. password receives the
// handshake's SASL password (the role reads it from there).
func Serve(args []string, stdin io.Reader, stdout io.Writer, roles map[string]Role) error {
	flags := flag.NewFlagSet("exactly loadgen worker", flag.ContinueOnError)
	if err := flags.Parse(args); err != nil {
		return err
	}
	reporter := NewReporter(stdout)
	reporter.hello(Hello{Protocol: Protocol, Version: buildinfo.Line()})
	fail := func(err error) error {
		reporter.Emit(Event{Event: "fatal", Message: err.Error()})
		return err
	}
	in := bufio.NewReaderSize(stdin, 64<<10)
	line, err := in.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return fail(fmt.Errorf("no handshake from the runner on stdin: %w", err))
	}
	var handshake Handshake
	if err := json.Unmarshal(line, &handshake); err != nil {
		return fail(fmt.Errorf("the runner's handshake does not decode (an exactly of another version?): %w", err))
	}
	if handshake.Protocol != Protocol {
		return fail(fmt.Errorf("the runner speaks worker protocol %d and this worker %d (%s): run the same exactly version on every host",
			handshake.Protocol, Protocol, buildinfo.Line()))
	}
	spec := handshake.Spec
	spec.Password = handshake.Password
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The runner closes stdin to stop the worker (and so does its death);
	// lines before that are commands.
	crash := &CrashPoint{}
	go func() {
		readCommands(in, crash)
		cancel()
	}()
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
		return fail(err)
	}
	return nil
}
