package report

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files under testdata/")

const (
	kfakeFixture    = "testdata/results-v1-kfake-smoke.json"
	embeddedFixture = "testdata/results-v1-embedded-smoke.json"
	schemaGolden    = "testdata/schema-v1.golden"
)

// loadFixture reads a results fixture written by a real `exactly loadgen`
// run.
func loadFixture(t *testing.T, path string) *Results {
	t.Helper()
	results, err := LoadResults(path)
	if err != nil {
		t.Fatalf("load fixture: %v", err)
	}
	return results
}

// schemaPaths lists every JSON path of value with the JSON type found
// there, e.g. "runs[].throughput.ratio_to_baseline number". Object keys
// that are data (percentiles, latency kinds, error codes, client
// settings) are collapsed to "*".
func schemaPaths(value any, path string, into map[string]bool) {
	switch typed := value.(type) {
	case map[string]any:
		if path == "workload" {
			// The workload as run: its fields are the workload file's
			// (loadgen.Workload), pinned by loadgen's own tests.
			into[path+" object"] = true
			return
		}
		if dataKeyed(path) {
			for _, child := range typed {
				schemaPaths(child, path+".*", into)
			}
			into[path+" object"] = true
			return
		}
		for key, child := range typed {
			schemaPaths(child, strings.TrimPrefix(path+"."+key, "."), into)
		}
		if path == "" {
			path = "(root)"
		}
		into[path+" object"] = true
	case []any:
		for _, child := range typed {
			schemaPaths(child, path+"[]", into)
		}
		into[path+" array"] = true
	case string:
		into[path+" string"] = true
	case float64:
		into[path+" number"] = true
	case bool:
		into[path+" bool"] = true
	case nil:
		into[path+" null"] = true
	}
}

func dataKeyed(path string) bool {
	for _, suffix := range []string{".percentiles_ms", "].latency", ".errors_by_code", ".client_settings", "target.broker_settings"} {
		if strings.HasSuffix(path, suffix) {
			return true
		}
	}
	return false
}

// TestResultsSchemaGolden pins the field names and types of the results
// file: a field renamed, removed or retyped in Results changes the golden
// list, and then doc.go and SchemaVersion must change with it.
func TestResultsSchemaGolden(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	// Fill what a fault-free smoke run leaves empty, so that every field
	// appears with its type.
	run := results.Runs[0]
	run.Reason = "reason"
	run.TimeSeries = []Sample{{ElapsedSeconds: 1, RecordsPerSecond: 2, MegabytesPerSecond: 3, P99Milliseconds: 4}}
	run.ErrorsByCode = map[string]int64{"NOT_LEADER_FOR_PARTITION": 1}
	run.Checks[0].Violations = []string{"1 duplicated"}
	run.Checks[0].Counts.Unprotected = 1
	run.Checks[0].Counts.Lost, run.Checks[0].Counts.LostWrites, run.Checks[0].Counts.Unseen = 3, 2, 1
	run.Checks[0].Counts.InconsistentOffsets, run.Checks[0].Counts.PollSkips, run.Checks[0].Counts.NonMonotonicPolls = 1, 1, 1
	run.Checks = append(run.Checks, Check{Reader: PollReader, Topic: "t", Consumers: "pipeline workers", Complete: true,
		Violations: []string{}})
	run.Latency[LatencyTransactionCommit] = run.Latency[LatencyProduceAck]
	run.Latency[LatencyProduceAckUncorrected] = run.Latency[LatencyProduceAck]
	run.LatencyOrigin = LatencyFromSchedule
	shared := true
	results.Target.SharesMachine, results.Target.Sharing = &shared, "in process"
	results.Target.BrokerSettings = map[string]string{"log.fsync": "never (default)"}
	results.Machine.CPUModel, results.Machine.GOMAXPROCS, results.Machine.Kernel = "cpu", 2, "linux 6.1"
	run.FaultRunInfo = FaultRunInfo{FaultPlan: "ack-loss", LoadStartedAt: run.StartedAt,
		FaultEvents: []FaultEvent{{ElapsedSeconds: 1, Kind: "drop-response", Broker: "127.0.0.1:1", Detail: "Produce"}},
		Expectation: &Expectation{Expected: "lost = 0", Observed: "lost 0", Verdict: StatusPass, Why: "why", Offenders: []string{"none"}}}
	results.FindMax = &FindMax{Targets: []FindMaxTarget{{Target: results.Target, Modes: []FindMaxMode{{
		Name: "at-least-once", Mode: "at-least-once", Stopped: "error", Error: "error",
		Steps: []FindMaxStep{{TargetRecordsPerSecond: 1000, Why: "why", Status: StatusPass}}}}}}}
	run.Round, run.Slot = 1, "at-least-once"
	results.Overhead = overheadResults().Overhead
	results.Overhead.Loads[0].Rows[0].CommitIntervalMs = 10
	results.Overhead.Loads[0].Network = &NetworkPoint{Path: "clients", RTTMs: 5, Link: "delay 2.5ms", Plan: "ack-loss", MeasuredRTTMs: 5.3}
	for i := range results.Overhead.Loads[0].Rows {
		row := &results.Overhead.Loads[0].Rows[i]
		row.Runs, row.AckP99 = []string{row.Slot + " #1"}, row.Throughput
		row.KeptUp = new(bool)
	}
	encoded, err := json.Marshal(results)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(encoded, &generic); err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	schemaPaths(generic, "", paths)
	lines := make([]string, 0, len(paths))
	for path := range paths {
		lines = append(lines, path)
	}
	sort.Strings(lines)
	got := fmt.Sprintf("# results schema_version %d: JSON path and type; regenerate with go test -run TestResultsSchemaGolden -update\n%s\n",
		SchemaVersion, strings.Join(lines, "\n"))
	if *updateGolden {
		if err := os.WriteFile(schemaGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaGolden)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("results schema changed; if on purpose, bump SchemaVersion, update doc.go and run with -update.\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// TestResultsRoundTripKeepsEveryField decodes the fixtures written by real
// runs and encodes them again: every field a run wrote must survive, so
// the Go types cover the whole file.
func TestResultsRoundTripKeepsEveryField(t *testing.T) {
	for _, path := range []string{kfakeFixture, embeddedFixture, overheadFixture} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			original, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			results := loadFixture(t, path)
			encoded, err := json.Marshal(results)
			if err != nil {
				t.Fatal(err)
			}
			var before, after any
			if err := json.Unmarshal(original, &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(encoded, &after); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(before, after) {
				t.Errorf("re-encoded results differ from the file")
			}
		})
	}
}

// TestLoadResultsRefusesOtherSchemaVersions: a file of another schema
// version is refused with a message naming the version found and the
// versions this build reads; it is not rendered with guessed defaults.
func TestLoadResultsRefusesOtherSchemaVersions(t *testing.T) {
	cases := []struct {
		path  string
		wants []string
	}{
		{"testdata/results-v0.json", []string{"schema_version 0 is older", "reads (schema_version 1)", "re-run exactly loadgen"}},
		{"testdata/results-unversioned.json", []string{"no schema_version field", "exactly loadgen", "schema_version 1 only"}},
		{"testdata/results-v2.json", []string{"schema_version 2 is newer", "schema_version 1", "newer exactly"}},
	}
	for _, test := range cases {
		t.Run(filepath.Base(test.path), func(t *testing.T) {
			results, err := LoadResults(test.path)
			if err == nil {
				t.Fatalf("LoadResults accepted %s: %+v", test.path, results)
			}
			if !errors.Is(err, ErrUnsupportedSchema) {
				t.Errorf("error %v does not wrap ErrUnsupportedSchema", err)
			}
			for _, want := range append(test.wants, test.path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestDecodeResultsRejectsMalformedFiles(t *testing.T) {
	cases := map[string]struct {
		data, want string
	}{
		"not json":       {`{"schema_version": 1,`, "decode results"},
		"not results":    {`{"hello": "world"}`, "not an `exactly loadgen` results file"},
		"null run":       {`{"schema_version": 1, "tool": "exactly loadgen", "runs": [null]}`, "runs[0] is null"},
		"wrong type":     {`{"schema_version": 1, "tool": "exactly loadgen", "runs": [{"measured_seconds": "x"}]}`, "decode results"},
		"version string": {`{"schema_version": "1"}`, "decode results"},
	}
	for name, test := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeResults(name, []byte(test.data))
			if err == nil || !strings.Contains(err.Error(), test.want) {
				t.Fatalf("DecodeResults(%s) = %v, want an error containing %q", test.data, err, test.want)
			}
		})
	}
	if _, err := LoadResults(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "read results") {
		t.Errorf("LoadResults(missing) = %v, want a read error", err)
	}
}
