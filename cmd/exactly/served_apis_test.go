package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kversion"
)

var update = flag.Bool("update", false, "rewrite the generated table of served APIs in docs/compatibility.md")

const (
	servedAPIsBegin = "<!-- served-apis:begin -->\n"
	servedAPIsEnd   = "<!-- served-apis:end -->\n"
)

// servedAPIsDoc is the page the table of served APIs lives in.
var servedAPIsDoc = filepath.Join(repoRoot, "docs", "compatibility.md")

// TestServedAPITable: the table of served APIs in docs/compatibility.md,
// between the served-apis markers, is what the handler registry gives
// now. When an API or a version is added, it fails until the page is
// regenerated with -update.
func TestServedAPITable(t *testing.T) {
	data, err := os.ReadFile(servedAPIsDoc)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	begin := strings.Index(page, servedAPIsBegin)
	end := strings.Index(page, servedAPIsEnd)
	if begin < 0 || end < begin {
		t.Fatalf("docs/compatibility.md: the markers %q and %q are missing or out of order", strings.TrimSpace(servedAPIsBegin), strings.TrimSpace(servedAPIsEnd))
	}
	current := page[begin+len(servedAPIsBegin) : end]
	want := servedAPIsMarkdown()
	if current == want {
		return
	}
	if *update {
		page = page[:begin+len(servedAPIsBegin)] + want + page[end:]
		if err := os.WriteFile(servedAPIsDoc, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the table of served APIs in docs/compatibility.md")
		return
	}
	t.Errorf("docs/compatibility.md: the table of served APIs is out of date (first difference: %s).\n"+
		"It is generated from the broker's handlers; to update it run\n"+
		"\tgo test ./cmd/exactly -run TestServedAPITable -update\n"+
		"(or go generate ./cmd/exactly) and commit the page.", firstDifference(current, want))
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d of the section is %q, want %q", i+1, gl, wl)
		}
	}
	return "none"
}

// TestBrokerHelpListsServedAPIs: `exactly broker --help` lists every
// served API with its versions, and every Kafka 4.x API it does not serve,
// in lines that fit 80 columns.
func TestBrokerHelpListsServedAPIs(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"broker", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	help := stderr.String()
	rows := servedRows()
	if len(rows) == 0 {
		t.Fatal("no served APIs")
	}
	if !strings.Contains(help, fmt.Sprintf("Kafka APIs served (%d)", len(rows))) {
		t.Errorf("help does not say %d APIs are served", len(rows))
	}
	// Each entry is "Name versions", followed by a "*" when the range
	// differs from Kafka 4.1's, then "," or the end of the line.
	entries := map[string]bool{}
	for _, line := range strings.Split(help, "\n") {
		for _, e := range strings.Split(line, ",") {
			entries[strings.TrimSpace(e)] = true
		}
	}
	for _, r := range rows {
		entry := r.name + " " + r.served.text("-")
		if r.difference("-") != "" {
			entry += "*"
		}
		if !entries[entry] {
			t.Errorf("help lacks %q", entry)
		}
	}
	for _, k := range missingAPIs(rows) {
		if !entries[k.name] {
			t.Errorf("help does not list %s among the APIs not served", k.name)
		}
	}
	listing := servedAPIsHelp()
	if !strings.Contains(help, listing) {
		t.Error("help does not hold the listing of served APIs")
	}
	for _, line := range strings.Split(listing, "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("help line of %d columns: %q", n, line)
		}
	}
}

// TestKafka4TableAgreesWithKversion: the Kafka 4.0 and 4.1 versions the
// table compares with have the newest versions franz-go's kversion
// records for those releases (from real brokers' ApiVersions answers),
// and the table has each key once, in order.
func TestKafka4TableAgreesWithKversion(t *testing.T) {
	for _, release := range []struct {
		name     string
		versions *kversion.Versions
		of       func(kafkaAPI) versionRange
	}{
		{"4.0", kversion.V4_0_0(), func(k kafkaAPI) versionRange { return k.v40 }},
		{"4.1", kversion.V4_1_0(), func(k kafkaAPI) versionRange { return k.v41 }},
	} {
		for i, k := range kafka4 {
			if i > 0 && kafka4[i-1].key >= k.key {
				t.Errorf("kafka4: key %d after %d", k.key, kafka4[i-1].key)
			}
			r := release.of(k)
			max, ok := release.versions.LookupMaxKeyVersion(k.key)
			switch {
			case ok != r.present():
				t.Errorf("Kafka %s %s (%d): the table says present=%v, kversion %v", release.name, k.name, k.key, r.present(), ok)
			case ok && max != r.max:
				t.Errorf("Kafka %s %s (%d): the table's newest version is %d, kversion's %d", release.name, k.name, k.key, r.max, max)
			case ok && r.min > r.max:
				t.Errorf("Kafka %s %s (%d): range %d..%d", release.name, k.name, k.key, r.min, r.max)
			}
		}
	}
}

// TestReadmeLinksServedAPITable: the README, the landing page, points to
// the table.
func TestReadmeLinksServedAPITable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "(docs/compatibility.md#kafka-apis-and-versions)") {
		t.Error("README.md does not link to docs/compatibility.md#kafka-apis-and-versions, the table of served APIs")
	}
}
