package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen"
)

// TestRoundsFlag: --rounds sets an overhead or security workload's round count and
// is refused, with the workload to use, on a workload without rounds.
func TestRoundsFlag(t *testing.T) {
	apply := func(workloadName string, args ...string) (loadgen.Workload, error) {
		t.Helper()
		return applyLoadgenFlags(t, workloadName, args...)
	}
	workload, err := apply("overhead", "--rounds", "7")
	if err != nil || workload.Overhead.Rounds != 7 {
		t.Fatalf("--rounds 7 on overhead: rounds %+v, err %v", workload.Overhead, err)
	}
	workload, err = apply("security", "--rounds", "3")
	if err != nil || workload.Security.Rounds != 3 {
		t.Fatalf("--rounds 3 on security: %+v, err %v", workload.Security, err)
	}
	if _, err := apply("security", "--rounds", "-2"); err == nil || !strings.Contains(err.Error(), "--rounds -2: must be 1 or more") {
		t.Errorf("--rounds -2: %v, want a refusal", err)
	}
	if _, err := apply("latency", "--rounds", "3"); err == nil || !strings.Contains(err.Error(), "--workload overhead") {
		t.Errorf("--rounds on the latency workload: %v, want a refusal naming --workload overhead", err)
	}
	workload, err = apply("standard", "--rounds", "5")
	if err != nil || workload.Overhead == nil || workload.Overhead.Rounds != 5 {
		t.Errorf("--rounds 5 on the standard suite: its cost rounds %+v, err %v", workload.Overhead, err)
	}
	workload, err = apply("standard", "--group-protocol", "both", "--rounds", "4")
	if err != nil || workload.GroupProtocols == nil || workload.GroupProtocols.Rounds != 4 {
		t.Errorf("--group-protocol both --rounds 4: %+v, err %v", workload.GroupProtocols, err)
	}
	workload, err = apply("standard", "--group-protocol", "consumer")
	if err != nil || workload.GroupProtocol != loadgen.GroupProtocolConsumer || workload.GroupProtocols != nil {
		t.Errorf("--group-protocol consumer: %q %+v, err %v", workload.GroupProtocol, workload.GroupProtocols, err)
	}
	if _, err := apply("standard", "--group-protocol", "eager"); err == nil || !strings.Contains(err.Error(), "classic, consumer or both") {
		t.Errorf("--group-protocol eager: %v", err)
	}
	if _, err := apply("group-protocols", "--group-protocol", "classic"); err == nil {
		t.Error("--group-protocol classic on the comparison workload: accepted")
	}
}

// TestFaultsFlagOnCostRounds: --faults makes an overhead workload's
// rounds run under the plans (it has no matrix to replace); on the
// standard suite it replaces the matrix and leaves the cost rounds out,
// unless --rounds asks for them under the same plans; --mode picks the
// cost rounds' slots as well as the matrix's modes.
func TestFaultsFlagOnCostRounds(t *testing.T) {
	apply := func(workloadName string, args ...string) loadgen.Workload {
		t.Helper()
		workload, err := applyLoadgenFlags(t, workloadName, args...)
		if err != nil {
			t.Fatalf("%s %v: %v", workloadName, args, err)
		}
		return workload
	}
	plans := func(entries []loadgen.MatrixEntry) []string {
		var names []string
		for _, entry := range entries {
			names = append(names, entry.Plan)
		}
		return names
	}
	overhead := apply("overhead", "--faults", "ack-loss,zombie-producer")
	if len(overhead.Faults) != 0 || !slices.Equal(plans(overhead.Overhead.Faults), []string{"ack-loss", "zombie-producer"}) {
		t.Errorf("overhead --faults: matrix %v, rounds under %v", plans(overhead.Faults), plans(overhead.Overhead.Faults))
	}
	standard := apply("standard", "--faults", "conn-reset")
	if !slices.Equal(plans(standard.Faults), []string{"conn-reset"}) || standard.Overhead != nil {
		t.Errorf("standard --faults conn-reset: matrix %v, cost rounds %+v; want the matrix only", plans(standard.Faults), standard.Overhead)
	}
	standard = apply("standard", "--faults", "conn-reset", "--rounds", "2")
	if !slices.Equal(plans(standard.Faults), []string{"conn-reset"}) || standard.Overhead == nil ||
		!slices.Equal(plans(standard.Overhead.Faults), []string{"conn-reset"}) || standard.Overhead.Rounds != 2 {
		t.Errorf("standard --faults conn-reset --rounds 2: matrix %v, cost rounds %+v", plans(standard.Faults), standard.Overhead)
	}
	if standard := apply("standard", "--mode", "at-least-once,idempotent"); len(standard.Overhead.Modes) != 0 {
		t.Errorf("standard --mode: the cost rounds keep their own modes %v", standard.Overhead.Modes)
	}
}

// applyLoadgenFlags loads a workload and applies loadgen flags to it, as
// the command does.
func applyLoadgenFlags(t *testing.T, workloadName string, args ...string) (loadgen.Workload, error) {
	t.Helper()
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var flags loadgenFlags
	flags.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	workload, err := loadgen.LoadWorkload(workloadName)
	if err != nil {
		t.Fatal(err)
	}
	return workload, flags.apply(&workload)
}

// TestRTTFlags: --rtt replaces a workload's sweep or gives one to any
// workload with cost rounds, --rtt-path picks the path, and mistakes are
// refused with what to give.
func TestRTTFlags(t *testing.T) {
	workload, err := applyLoadgenFlags(t, "network", "--rtt", "0,500us,5ms")
	if err != nil || workload.Overhead.Network == nil ||
		!slices.Equal(workload.Overhead.Network.RTTs, []loadgen.Duration{0, loadgen.Duration(500 * time.Microsecond), loadgen.Duration(5 * time.Millisecond)}) {
		t.Fatalf("--rtt on network: %+v, %v", workload.Overhead, err)
	}
	workload, err = applyLoadgenFlags(t, "commit-curve", "--rtt", "0,50ms", "--rtt-path", "follower")
	if err != nil || workload.Overhead.Network == nil || workload.Overhead.Network.Path != loadgen.NetworkPathFollower {
		t.Fatalf("--rtt --rtt-path follower on commit-curve: %+v, %v", workload.Overhead, err)
	}
	for args, want := range map[string]string{
		"latency --rtt 5ms":            "has no cost rounds",
		"network --rtt 5ms,fast":       "is not a round-trip time",
		"network --rtt -5ms":           "is not a round-trip time",
		"overhead --rtt-path follower": "give the round-trip times with --rtt",
		"network --rtt-path sideways":  "not clients or follower",
		"network --rtt 5ms,5ms":        "given twice",
	} {
		fields := strings.Fields(args)
		if _, err := applyLoadgenFlags(t, fields[0], fields[1:]...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", args, err, want)
		}
	}
}
