package loadgen

import (
	"strings"
	"testing"
	"time"
)

func TestShippedWorkloadsParse(t *testing.T) {
	t.Parallel()
	names := WorkloadNames()
	for _, want := range []string{"standard", "latency", "transactional-sweep", "smoke", "overhead", "commit-curve", "group-protocols"} {
		found := false
		for _, name := range names {
			found = found || name == want
		}
		if !found {
			t.Errorf("workload %s not shipped (have %v)", want, names)
		}
	}
	for _, name := range names {
		workload, err := LoadWorkload(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if workload.Name != name || workload.Records < 1 || workload.Duration <= 0 {
			t.Errorf("%s: name %q records %d duration %s", name, workload.Name, workload.Records, workload.Duration)
		}
	}
	standard, _ := LoadWorkload("standard.yaml")
	if strings.Join(standard.Modes, ",") != strings.Join(AllModes, ",") {
		t.Errorf("standard suite modes = %v, want every mode", standard.Modes)
	}
}

func TestParseWorkloadRejectsBadInput(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"unknown key":         "name: x\nrecrods: 5\n",
		"tiny record":         "record_size: 8\n",
		"no time bound":       "duration: 0s\n",
		"no record bound":     "records: 0\n",
		"bad duration":        "duration: ten\n",
		"unknown mode":        "modes: [exactly-twice]\n",
		"abort share":         "transaction: {abort_share: 1.5}\n",
		"bad distribution":    "keys: {distribution: gaussian, space: 3}\n",
		"zero interval":       "transaction: {commit_intervals: [0s]}\n",
		"not yaml":            "::: [",
		"negative rate":       "rate: -1\n",
		"too many partitions": "partitions: 100000\n",
		"no rounds":           "overhead: {rounds: 0}\n",
		"negative load":       "overhead: {rounds: 2, rates: [-5]}\n",
		"bad fraction":        "overhead: {rounds: 2, fractions: [1.5]}\n",
		"unknown cost plan":   "overhead: {rounds: 2, faults: [{plan: no-such-plan}]}\n",
		"unknown protocol":    "group_protocol: eager\n",
		"no protocol rounds":  "group_protocols: {rounds: 0}\n",
		"protocols, overhead": "group_protocols: {rounds: 2}\noverhead: {rounds: 2}\n",
	}
	for name, text := range cases {
		if _, err := ParseWorkload([]byte(text)); err == nil {
			t.Errorf("%s: accepted %q", name, text)
		}
	}
	workload, err := ParseWorkload([]byte("name: mine\nmodes: [idempotent]\nduration: 250ms\ntransaction: {commit_intervals: [1ms, 1s]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if workload.Duration != Duration(250*time.Millisecond) || len(workload.Transaction.CommitIntervals) != 2 || workload.Partitions != 4 {
		t.Fatalf("parsed %+v", workload)
	}
	if _, err := LoadWorkload("no-such-workload"); err == nil || !strings.Contains(err.Error(), "standard") {
		t.Fatalf("missing workload error = %v, want the list of shipped workloads", err)
	}
}

// A mistake in a workload file is one line naming the line and the key:
// an unknown key with a did-you-mean, a value of the wrong type in words.
func TestWorkloadFileMistakesAreOneLine(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"name: x\npartitons: 3\n":                  "line 2: unknown key partitons; did you mean partitions?",
		"name: x\nrate: fast\n":                    "line 2: fast is not a whole number",
		"transaction: {abort_shar: 0.5}\n":         "line 1: unknown key abort_shar; did you mean abort_share?",
		"name: x\ntransaction: {abort_share: 2}\n": "transaction.abort_share: 2 is outside 0..1",
	} {
		_, err := ParseWorkload([]byte(text))
		if err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
}

// Every shipped workload has a description and an estimate of how long
// it takes (what --list-workloads shows).
func TestShippedWorkloadsDescribeThemselves(t *testing.T) {
	t.Parallel()
	for _, name := range WorkloadNames() {
		workload, err := LoadWorkload(name)
		if err != nil {
			t.Fatal(err)
		}
		expected, _, err := EstimatedDuration(workload)
		if err != nil || expected <= 0 || workload.Description == "" {
			t.Errorf("%s: estimate %v (%v), description %q", name, expected, err, workload.Description)
		}
	}
}
