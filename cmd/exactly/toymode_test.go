package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// toyMode is a delivery mode that exists only in this file: a copy of
// at-least-once's spec under another name. Registering it is all it
// takes for the mode to be listed by --help and --mode, to run as cells
// of a fault matrix and to be judged there.
const toyMode = "toy-at-least-once"

func init() {
	modes.Register(modes.Spec{
		Name:  toyMode,
		Help:  "a test's copy of at-least-once: acks=all, retries, enable.idempotence=false",
		Order: 1000,
		Road:  modes.BrokerRoad,
		ProducerOptions: func(modes.ProducerParams) []kgo.Opt {
			return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
				kgo.MaxProduceRequestsInflightPerBroker(modes.MaxInFlight)}
		},
		Settings: func(_ modes.RunParams, settings map[string]string) {
			settings["enable.idempotence"] = "false"
		},
		RelaysUnderChurn: true,
		Readers:          []modes.Reader{{Isolation: verify.ReadCommitted}},
		Expect: modes.Expectation{UnderFaults: modes.Bounds{MayDuplicate: true, MayReorder: true},
			AckLossShowsDuplicates: true},
		ClientFaults: []faults.ClientActionKind{faults.ClientGroupChurn},
	})
}

// TestToyModeInHelp: the mode added by a spec alone is listed in
// `exactly loadgen --help` with its help line, among --mode's choices and
// among the modes of the client faults that apply to it.
func TestToyModeInHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	run([]string{"loadgen", "--help"}, &stdout, &stderr)
	help := stderr.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  toy-at-least-once +a test's copy of at-least-once: acks=all, retries, enable.idempotence=false$`),
		regexp.MustCompile(`comma-separated delivery modes to run:[a-z0-9,\s-]*,\s+toy-at-least-once`), // wrapped over lines
		regexp.MustCompile(`(?m)^  group-churn .*\(modes: at-least-once, .*toy-at-least-once\)$`),
	} {
		if !want.MatchString(help) {
			t.Errorf("help does not match %s:\n%s", want, help)
		}
	}
}

// TestToyModeRunsInTheMatrix runs the toy mode as cells of a fault matrix
// against the embedded broker: without faults and under lost Produce acks
// (where, as at-least-once, it must pass with the duplicates its retries
// write), and under zombie-producer, which its spec does not accept (not
// applicable).
func TestToyModeRunsInTheMatrix(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the embedded broker for a few seconds")
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"loadgen", "--mode", toyMode, "--faults", "none,ack-loss,zombie-producer",
		"--duration", "2s", "--rate", "1000", "--drain", "10s", "--out", out}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	paths, _ := filepath.Glob(filepath.Join(out, "loadgen-*.json"))
	if len(paths) != 1 {
		t.Fatalf("results files %v", paths)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var results struct {
		Runs []struct {
			Name, Mode, Status, Reason string
			ClientSettings             map[string]string `json:"client_settings"`
			Expectation                struct{ Expected, Observed string }
		}
	}
	if err := json.Unmarshal(data, &results); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{toyMode + ":none": "pass", toyMode + ":ack-loss": "pass", toyMode + ":zombie-producer": "not-applicable"}
	if len(results.Runs) != len(want) {
		t.Fatalf("%d runs, want %d:\n%s", len(results.Runs), len(want), stdout.String())
	}
	for _, cell := range results.Runs {
		if cell.Mode != toyMode || want[cell.Name] != cell.Status {
			t.Errorf("run %s (mode %s): %s (%s), want %s", cell.Name, cell.Mode, cell.Status, cell.Reason, want[cell.Name])
		}
		if cell.Name == toyMode+":ack-loss" && !strings.Contains(cell.Expectation.Expected, "dup > 0 shows the fault acted") {
			t.Errorf("ack-loss cell expected %q: the spec's bounds are not the ones judged", cell.Expectation.Expected)
		}
		if cell.Status == "pass" && cell.ClientSettings["enable.idempotence"] != "false" {
			t.Errorf("run %s client settings %v: the spec's settings are not stated", cell.Name, cell.ClientSettings)
		}
	}
	if !regexp.MustCompile(`(?m)^\[2/3\] PASS +toy-at-least-once:ack-loss `).MatchString(stdout.String()) {
		t.Errorf("no PASS line for the ack-loss cell:\n%s", stdout.String())
	}
}
