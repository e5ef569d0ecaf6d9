package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// TestFindMaxTwoTargetsInOneRun runs --find-max on the embedded broker and
// kfake in one invocation with two tiny steps per mode and a confirmation
// step: every step is printed as it ends, the tables give each mode's rate
// per target and the ratio of kfake's to the embedded broker's, and the
// results file holds the find_max section with both targets.
func TestFindMaxTwoTargetsInOneRun(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"loadgen", "--find-max", "--targets", "embedded,kfake", "--mode", "at-least-once,idempotent",
		"--find-max-start", "200", "--find-max-steps", "2", "--find-max-p99", "1s", "--warmup", "0s", "--duration", "1s",
		"--find-max-confirm", "2s", "--consumers", "0", "--out", out}, &stdout, &stderr)
	text := stdout.String()
	if code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, text, stderr.String())
	}
	for _, want := range []string{"find-max on embedded", "find-max on kfake",
		"embedded at-least-once step 1: target 200 rec/s", "kfake idempotent step 2: target 400 rec/s",
		"kfake idempotent step 3: target 400 rec/s (confirmation)", "confirmed by a 2 s step",
		"sustainable rec/s", "kfake/embedded"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	results := readOnlyResults(t, out)
	section := results.FindMax
	if section == nil || len(section.Targets) != 2 || section.Targets[0].Target.Kind != "embedded" || section.Targets[1].Target.Kind != "kfake" {
		t.Fatalf("find_max section %+v, want embedded then kfake", section)
	}
	// The search's results describe the target like a run's: the steps
	// ran in this process, so client and broker shared the machine.
	for _, target := range append([]report.Target{results.Target}, section.Targets[0].Target, section.Targets[1].Target) {
		if target.SharesMachine == nil || !*target.SharesMachine || target.Sharing == "" {
			t.Errorf("target %s: shares_machine %v, sharing %q; want true and why", target.Kind, target.SharesMachine, target.Sharing)
		}
	}
	for _, target := range section.Targets {
		if len(target.Modes) != 2 || target.Modes[0].Name != "at-least-once" || len(target.Modes[0].Steps) < 3 {
			t.Fatalf("%s: modes %+v", target.Target.Kind, target.Modes)
		}
		// The short steps held 200 and 400 (the step bound ended the
		// search); the long steps confirmed a rate: 400, or on a starved
		// machine (a 2 s step at 400 rec/s can miss 99 % when the CPU is
		// busy elsewhere) a lower one that a long step held. Either way
		// the answer is the highest long step that held.
		for _, mode := range target.Modes {
			last := mode.Steps[len(mode.Steps)-1]
			highestHeld := 0
			for _, step := range mode.Steps {
				if step.Confirmation && step.Held {
					highestHeld = max(highestHeld, step.TargetRecordsPerSecond)
				}
			}
			if !last.Confirmation || !mode.Confirmed || mode.SearchedRecordsPerSecond != 400 ||
				mode.SustainableRecordsPerSecond != highestHeld || highestHeld < 200 || highestHeld > 400 {
				t.Errorf("%s %s: sustainable %d (searched %d, confirmed %v, highest held long step %d), last step %+v", target.Target.Kind, mode.Name,
					mode.SustainableRecordsPerSecond, mode.SearchedRecordsPerSecond, mode.Confirmed, highestHeld, last)
			}
		}
		if section.Criteria.ConfirmSeconds != 2 || section.Criteria.Confirmations != 5 {
			t.Errorf("criteria %+v, want a 2 s confirmation step, 5 at most", section.Criteria)
		}
	}
	if dashboards, _ := filepath.Glob(filepath.Join(out, "loadgen-*.html")); len(dashboards) != 1 {
		t.Errorf("dashboards %v, want one beside the results", dashboards)
	}
}

// The flags of --find-max and --rate-fraction that cannot work with the
// workload end the command before any run, with one line saying why
// (the mistakes in the flags alone are in cli_test.go).
func TestFindMaxFlagErrors(t *testing.T) {
	for _, test := range []struct {
		args []string
		want string
	}{
		{[]string{"--find-max", "--mode", "idempotent", "--rate-fraction", "0.5", "--target", "kfake"}, "add it to --mode"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append(append([]string{"loadgen"}, test.args...), "--out", t.TempDir()), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), test.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", test.args, code, stderr.String(), test.want)
		}
	}
}

// TestRateFractionsOfAGivenRate runs the latency workload's cells at 50 %
// and 100 % of --sustainable-rate: each mode once per fraction, at that
// rate, named after it, with equal_load saying which rates ran.
func TestRateFractionsOfAGivenRate(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"loadgen", "--rate-fraction", "0.5,1", "--sustainable-rate", "400", "--target", "kfake",
		"--mode", "at-least-once,idempotent", "--warmup", "0s", "--duration", "1s", "--consumers", "0", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	results := readOnlyResults(t, out)
	load := results.FindMax.EqualLoad
	if load == nil || load.BaselineRecordsPerSecond != 400 || len(load.Cells) != 2 || load.Cells[0].RecordsPerSecond != 200 || load.Cells[1].RecordsPerSecond != 400 {
		t.Fatalf("equal_load %+v", load)
	}
	want := []string{"at-least-once at 50%", "idempotent at 50%", "at-least-once at 100%", "idempotent at 100%"}
	if len(results.Runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(results.Runs), len(want))
	}
	for i, run := range results.Runs {
		rate := float64(load.Cells[i/2].RecordsPerSecond)
		if run.Name != want[i] || run.Status != report.StatusPass || run.Throughput.RecordsPerSecond < 0.9*rate || run.Throughput.RecordsPerSecond > 1.1*rate {
			t.Errorf("run %d: %s %s at %.0f rec/s; want %s, pass, about %.0f", i, run.Name, run.Status, run.Throughput.RecordsPerSecond, want[i], rate)
		}
	}
	if !strings.Contains(stdout.String(), "equal offered load: fractions of at-least-once's sustainable rate 400 rec/s (--sustainable-rate): 50 % = 200 rec/s, 100 % = 400 rec/s") {
		t.Errorf("output lacks the equal-load line:\n%s", stdout.String())
	}
}

// TestLatencyWorkloadRunsAtEqualLoad runs the latency workload without a
// fixed --rate: it searches at-least-once's sustainable rate alone (two
// short steps and a confirmation), then runs every mode given at 50 % and
// 80 % of it, and says so.
func TestLatencyWorkloadRunsAtEqualLoad(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"loadgen", "--workload", "latency", "--target", "kfake", "--mode", "at-least-once,idempotent",
		"--find-max-start", "200", "--find-max-steps", "2", "--find-max-p99", "1s", "--find-max-confirm", "1s",
		"--warmup", "0s", "--duration", "1s", "--consumers", "0", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	results := readOnlyResults(t, out)
	if results.FindMax == nil || len(results.FindMax.Targets) != 1 {
		t.Fatalf("find_max %+v, want one target", results.FindMax)
	}
	searched := results.FindMax.Targets[0].Modes
	if len(searched) != 1 || searched[0].Mode != "at-least-once" || !searched[0].Confirmed || searched[0].SustainableRecordsPerSecond != 400 {
		t.Fatalf("searched %+v, want at-least-once alone, confirmed at 400 rec/s", searched)
	}
	load := results.FindMax.EqualLoad
	if load == nil || load.BaselineRecordsPerSecond != 400 || len(load.Cells) != 2 ||
		load.Cells[0].RecordsPerSecond != 200 || load.Cells[1].RecordsPerSecond != 320 {
		t.Fatalf("equal_load %+v, want 50 %% and 80 %% of 400", load)
	}
	want := []string{"at-least-once at 50%", "idempotent at 50%", "at-least-once at 80%", "idempotent at 80%"}
	if len(results.Runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(results.Runs), len(want))
	}
	for i, run := range results.Runs {
		if run.Name != want[i] || run.Status != report.StatusPass {
			t.Errorf("run %d: %s %s; want %s, pass", i, run.Name, run.Status, want[i])
		}
	}
	var workload struct{ Name string }
	if err := json.Unmarshal(results.Workload, &workload); err != nil || workload.Name != "latency" {
		t.Errorf("results name workload %q (%v), want latency", workload.Name, err)
	}
	if !strings.Contains(stdout.String(), "equal offered load: fractions of at-least-once's sustainable rate 400 rec/s (find-max on kfake): 50 % = 200 rec/s, 80 % = 320 rec/s") {
		t.Errorf("output lacks the equal-load line:\n%s", stdout.String())
	}
}

// readOnlyResults reads the one results file a run wrote into out.
func readOnlyResults(t *testing.T, out string) *report.Results {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "loadgen-*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("results files %v (%v), want one", files, err)
	}
	results, err := report.Read(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return results
}
