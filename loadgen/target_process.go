package loadgen

import (
	"github.com/exactly-eos/exactly/internal/loopback"

	"context"
	"fmt"
	"os"
	"time"

	"github.com/exactly-eos/exactly/loadgen/faults"
)

// SelfCommand is how the load generator runs the `exactly` binary again:
// to launch brokers it can kill (process faults) and client workers it can
// stop or kill (client faults). Args come before the subcommand's own.
type SelfCommand struct {
	Path string
	Args []string
	Env  []string
}

// DefaultSelfCommand runs this executable; it works under `go run` too,
// since the built binary is the executable.
func DefaultSelfCommand() (SelfCommand, error) {
	path, err := os.Executable()
	if err != nil {
		return SelfCommand{}, fmt.Errorf("locate the exactly binary for subprocesses: %w", err)
	}
	return SelfCommand{Path: path}, nil
}

// command returns the argument list for subcommand args.
func (s SelfCommand) command(args ...string) []string {
	return append(append([]string(nil), s.Args...), args...)
}

// launchedBroker is an `exactly broker` subprocess started for one run of
// a fault plan with process faults, on a fixed loopback port (so a restart
// keeps its address) and its own data directory, removed on close.
type launchedBroker struct {
	process *faults.Process
	dataDir string
}

// launchBroker starts a broker subprocess; its kills, restarts and pauses
// are recorded in log.
func launchBroker(ctx context.Context, self SelfCommand, log *faults.EventLog) (*launchedBroker, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	dataDir, err := os.MkdirTemp("", "exactly-loadgen-broker-*")
	if err != nil {
		return nil, fmt.Errorf("launched broker data directory: %w", err)
	}
	process, err := faults.NewProcess(faults.ProcessConfig{
		Name: "broker 0 (" + addr + ")", Path: self.Path,
		Args: self.command(faults.BrokerArgs(addr, dataDir, 0)...), Env: self.Env,
		DataDir: dataDir, Addr: addr, StartTimeout: 20 * time.Second, Log: log,
	})
	if err == nil {
		err = process.Start(ctx)
	}
	if err != nil {
		os.RemoveAll(dataDir)
		return nil, fmt.Errorf("launch broker: %w", err)
	}
	return &launchedBroker{process: process, dataDir: dataDir}, nil
}

// describe says what the broker is, for results.
func (b *launchedBroker) describe() string {
	return fmt.Sprintf("exactly broker subprocess launched for this run (pid %d), %s, data in %s",
		b.process.PID(), b.process.Addr(), b.dataDir)
}

// close stops the broker and removes its data.
func (b *launchedBroker) close() error {
	err := b.process.Stop(10 * time.Second)
	if removeErr := os.RemoveAll(b.dataDir); removeErr != nil && err == nil {
		err = removeErr
	}
	return err
}

// freeLoopbackAddr returns a loopback address nothing listens on now, on
// this process's own loopback IP so that no other process takes it before
// the broker binds it, or binds it while the broker is down for a restart
// fault (internal/loopback).
func freeLoopbackAddr() (string, error) {
	return loopback.FreeAddr()
}
