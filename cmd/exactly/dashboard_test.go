package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	kfakeResults    = "../../loadgen/report/testdata/results-v1-kfake-smoke.json"
	embeddedResults = "../../loadgen/report/testdata/results-v1-embedded-smoke.json"
)

// TestDashboardCommand renders two results files with the flag after the
// files, as the issue writes the command.
func TestDashboardCommand(t *testing.T) {
	output := filepath.Join(t.TempDir(), "out", "dashboard.html")
	var stdout, stderr bytes.Buffer
	code := run([]string{"dashboard", kfakeResults, embeddedResults, "-o", output}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "dashboard: "+output {
		t.Errorf("stdout %q", got)
	}
	page, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>exactly loadgen: A kfake vs B embedded</title>", `data-chart="throughput"`, "Targets compared"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestDashboardCommandErrors(t *testing.T) {
	dir := t.TempDir()
	older := filepath.Join(dir, "old.json")
	if err := os.WriteFile(older, []byte(`{"schema_version": 0, "tool": "exactly loadgen"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"dashboard"}, 2, "no results files given"},
		{[]string{"dashboard", "-o"}, 2, "flag needs an argument"},
		{[]string{"dashboard", filepath.Join(dir, "missing.json")}, 1, "read results"},
		{[]string{"dashboard", older, "-o", filepath.Join(dir, "x.html")}, 1, "schema_version 0 is older than this build reads (schema_version 1)"},
	}
	for _, test := range cases {
		var stdout, stderr bytes.Buffer
		if code := run(test.args, &stdout, &stderr); code != test.code || !strings.Contains(stderr.String(), test.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", test.args, code, stderr.String(), test.code, test.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.html")); !os.IsNotExist(err) {
		t.Errorf("a refused input still wrote a page: %v", err)
	}
}
