package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
)

// A mistake on the command line is one line naming the flag and what it
// accepts (or a did-you-mean), then where the flags are described, with
// exit status 2, before anything starts: no broker, nothing on stdout,
// no results file.
func TestCommandLineMistakesAreOneLine(t *testing.T) {
	dir := t.TempDir()
	badWorkload := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badWorkload, []byte("name: bad\npartitons: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"loadgen", "--rate", "-5"}, "--rate -5: must be 0 (as fast as acknowledged) or more records/s"},
		{[]string{"loadgen", "--partitions", "0"}, "--partitions 0: must be 1..10000"},
		{[]string{"loadgen", "--producers", "0"}, "--producers 0: must be 1..256"},
		{[]string{"loadgen", "--replication-factor", "0"}, "--replication-factor 0: must be 1..32"},
		{[]string{"loadgen", "--record-size", "10"}, "--record-size 10: must be 32..1048576 bytes"},
		{[]string{"loadgen", "--abort-share", "2"}, "--abort-share 2: must be a fraction in 0..1"},
		{[]string{"loadgen", "--warmup", "-1s"}, "--warmup -1s: must be 0s or more (e.g. 2s)"},
		{[]string{"loadgen", "--duration", "0s"}, "--duration 0s: must be more than 0s (e.g. 10s)"},
		{[]string{"loadgen", "--consumers", "-1"}, "--consumers -1: must be 0..256"},
		{[]string{"loadgen", "--rounds", "-2"}, "--rounds -2: must be 1 or more"},
		{[]string{"loadgen", "--dedup-window", "0"}, "--dedup-window 0: must be 1 or more offsets"},
		{[]string{"loadgen", "--commit-interval", "0ms"}, "--commit-interval 0ms: must be more than 0 (e.g. 100ms)"},
		{[]string{"loadgen", "--find-max", "--find-max-steps", "0"}, "--find-max-steps 0: must be 1 or more"},
		{[]string{"loadgen", "--rat", "5"}, "unknown flag --rat; did you mean --rate?"},
		{[]string{"loadgen", "--mode", "idempotnet"}, "--mode idempotnet: not a delivery mode; did you mean idempotent?"},
		{[]string{"loadgen", "--mode", "at-least-once,qqq"}, "--mode qqq: not a delivery mode (one of " + strings.Join(modes.Names(), ", ") + ")"},
		{[]string{"loadgen", "--faults", "none,ack-los"}, "--faults ack-los: not a fault plan or a file; did you mean ack-loss?"},
		{[]string{"loadgen", "--faults", filepath.Join(dir, "missing.yaml")}, "--faults " + filepath.Join(dir, "missing.yaml") + ": no such file"},
		{[]string{"loadgen", "--workload", "standrd"}, "--workload standrd: not a workload or a file; did you mean standard?"},
		{[]string{"loadgen", "--target", "kfak"}, "--target kfak: not a target; did you mean kfake?"},
		{[]string{"loadgen", "--group-protocol", "clasic"}, "--group-protocol clasic: not a group protocol; did you mean classic?"},
		{[]string{"loadgen", "--keys", "zip"}, "--keys zip: not a key distribution; did you mean zipf?"},
		{[]string{"loadgen", "--profile", "heap"}, "--profile heap: not a profile (one of cpu, mem, block, mutex, trace)"},
		{[]string{"loadgen", "--targets", "embedded,kfake"}, "--targets is for --find-max only; use --target for one target"},
		{[]string{"loadgen", "--find-max", "--targets", "embedded,nowhere"}, "--targets nowhere: not a target --find-max starts (one of embedded, kfake)"},
		{[]string{"loadgen", "--find-max", "--targets", "kfake", "--bootstrap", "127.0.0.1:1"},
			"--targets names targets the load generator starts (embedded, kfake); use --bootstrap alone for an existing cluster"},
		{[]string{"loadgen", "--rate-fraction", "0.5"}, "--rate-fraction needs --find-max, or at-least-once's sustainable rate in --sustainable-rate"},
		{[]string{"loadgen", "--rate-fraction", "1.5", "--sustainable-rate", "1000"}, "--rate-fraction 1.5: must be fractions in (0, 1] (e.g. 0.5,0.8)"},
		{[]string{"loadgen", "--group-protocol", "consumer", "--workload", "group-protocols"},
			"--group-protocol consumer: workload group-protocols compares both protocols; use --group-protocol both or another workload"},
		{[]string{"cluster", "--brokers", "0"}, "--brokers 0: must be 1..100"},
		{[]string{"cluster", "--brokers", "101", "--data-dir", dir}, "--brokers 101: must be 1..100"},
		{[]string{"cluster", "--stop-timeout", "-1s", "--data-dir", dir}, "--stop-timeout -1s: must be more than 0s (e.g. 20s)"},
		{[]string{"cluster"}, "--data-dir is required (e.g. --data-dir /tmp/exactly-cluster)"},
		{[]string{"cluster", "--data-dir", dir, "--sasl-listen", "127.0.0.1:9500"}, "--sasl-listen needs --users-file (the SASL users every broker knows)"},
		{[]string{"cluster", "drain"}, "--broker is required (the id of the broker to drain)"},
		{[]string{"cluster", "add-broker"}, "--data-dir is required (the --data-dir of the running `exactly cluster`)"},
		{[]string{"cluster", "add-broker", "--data-dir", dir, "--id", "2"}, "--id 2: must be 4..100 (ids 1..3 are the quorum's voters)"},
		{[]string{"dashboard"}, "no results files given (exactly dashboard results/a.json [results/b.json ...])"},
		{[]string{"dashboard", "--tittle", "x", "a.json"}, "unknown flag --tittle; did you mean --title?"},
	}
	for _, test := range cases {
		t.Run(strings.Join(test.args, " "), func(t *testing.T) {
			out := t.TempDir()
			args := test.args
			if args[0] == "loadgen" {
				args = append(args, "--out", out)
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			want := "exactly " + args[0] + ": " + test.want + "\nsee 'exactly " + args[0] + " --help'\n"
			if code != 2 || stderr.String() != want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, stderr.String(), want)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout holds output, so something ran:\n%s", stdout.String())
			}
			if files, _ := os.ReadDir(out); len(files) > 0 {
				t.Errorf("results directory holds %v", files)
			}
		})
	}
}

// A workload file with a mistake names the file, the line and the key.
func TestWorkloadFileMistakeNamesFileAndKey(t *testing.T) {
	dir := t.TempDir()
	for text, want := range map[string]string{
		"name: bad\npartitons: 3\n":  "line 2: unknown key partitons; did you mean partitions?",
		"name: bad\npartitions: 0\n": "partitions: 0 is outside 1..10000",
	} {
		path := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := run([]string{"loadgen", "--workload", path, "--out", dir}, &stdout, &stderr)
		if line := "exactly loadgen: workload file " + path + ": " + want + "\n"; code != 1 || stderr.String() != line {
			t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr.String(), line)
		}
	}
}

// --help prints every flag as "  --name type" with its real default, and
// "(default: the workload's)" where the flag takes the workload's value
// when unset; never the -1 placeholders. It exits 0.
func TestLoadgenHelpShowsRealDefaults(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"loadgen", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	help := stderr.String()
	for _, unwanted := range []string{"(default -1)", "(default -1ns)", "(default -1s)", "\n  -rate"} {
		if strings.Contains(help, unwanted) {
			t.Errorf("help shows %q", unwanted)
		}
	}
	for _, want := range []string{"\n  --rate int\n", "\n  --warmup duration\n", "\n  --quiet\n", "\n  --wide\n", "\n  --csv string\n",
		"(default \"results\")", "(default 1m0s)"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	// Every flag is listed, each with "(default: the workload's)" where
	// it takes the workload's value.
	fs := newFlagSet("loadgen", "", &bytes.Buffer{})
	var flags loadgenFlags
	flags.register(fs)
	entries := strings.Split(help, "\n  --")
	for _, name := range []string{"rate", "warmup", "consumers", "commit-records", "abort-share", "partitions"} {
		found := false
		for _, entry := range entries {
			if strings.HasPrefix(entry, name+" ") {
				found = strings.Contains(strings.Join(strings.Fields(entry), " "), "(default: the workload's)")
			}
		}
		if !found {
			t.Errorf("--%s does not say it defaults to the workload's", name)
		}
	}
	count := 0
	fs.VisitAll(func(f *flag.Flag) {
		count++
		if !strings.Contains(help, "\n  --"+f.Name+" ") && !strings.Contains(help, "\n  --"+f.Name+"\n") {
			t.Errorf("help lacks --%s", f.Name)
		}
	})
	if count < 40 {
		t.Errorf("only %d flags registered", count)
	}
}

// --list-workloads lists every shipped workload with how long it takes
// and what it measures, each line within 120 columns.
func TestListWorkloads(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"loadgen", "--list-workloads"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	text := stdout.String()
	for _, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > 120 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	for _, name := range loadgen.WorkloadNames() {
		workload, err := loadgen.LoadWorkload(name)
		if err != nil {
			t.Fatal(err)
		}
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` +(\d+m\d*s?|\d+s|\d+m) +(\S.*)$`).FindStringSubmatch(text)
		if row == nil {
			t.Errorf("no row for %s with a duration:\n%s", name, text)
			continue
		}
		if first := strings.Fields(workload.Description)[0]; !strings.HasPrefix(row[2], first) {
			t.Errorf("%s: %q does not start with its description %q", name, row[2], workload.Description)
		}
	}
}

// --list-plans lists every shipped fault plan with its description, each
// line within 120 columns.
func TestListPlans(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"loadgen", "--list-plans"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	text := stdout.String()
	for _, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > 120 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	for _, name := range faults.PlanNames() {
		plan, err := faults.LoadPlan(name)
		if err != nil {
			t.Fatal(err)
		}
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` +(\S.*)$`).FindStringSubmatch(text)
		if row == nil {
			t.Errorf("no row for %s:\n%s", name, text)
			continue
		}
		if first := strings.Fields(plan.Description)[0]; !strings.HasPrefix(row[1], first) {
			t.Errorf("%s: %q does not start with its description %q", name, row[1], plan.Description)
		}
	}
}
