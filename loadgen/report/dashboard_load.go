package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// SupportedSchemaVersions lists the results schema versions this build
// reads and renders. Schema versions before 1 were never written by a
// released `exactly loadgen`; a file without schema_version, or with one not
// listed here, is refused by LoadResults with a message that names these.
var SupportedSchemaVersions = []int{SchemaVersion}

// ErrUnsupportedSchema is wrapped by the errors LoadResults and
// DecodeResults return for a results file of a schema version this build
// does not read.
var ErrUnsupportedSchema = errors.New("unsupported results schema")

// LoadResults reads a results file for rendering. Unlike Read, it tells an
// older or newer schema apart from a file that is not a results file, and
// checks what the dashboard relies on (no null runs).
func LoadResults(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	return DecodeResults(path, data)
}

// DecodeResults decodes the results file data; name labels errors.
func DecodeResults(name string, data []byte) (*Results, error) {
	var probe struct {
		SchemaVersion *int   `json:"schema_version"`
		Tool          string `json:"tool"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("decode results %s: %w", name, err)
	}
	supported := supportedVersionsText()
	switch {
	case probe.SchemaVersion == nil && probe.Tool == "":
		return nil, fmt.Errorf("results %s: %w: no schema_version and no tool field, not an `exactly loadgen` results file (this build reads %s)",
			name, ErrUnsupportedSchema, supported)
	case probe.SchemaVersion == nil:
		return nil, fmt.Errorf("results %s: %w: no schema_version field (written by %q before results were versioned?); this build reads %s only",
			name, ErrUnsupportedSchema, probe.Tool, supported)
	case *probe.SchemaVersion > SchemaVersion:
		return nil, fmt.Errorf("results %s: %w: schema_version %d is newer than this build, which reads %s; use a newer exactly",
			name, ErrUnsupportedSchema, *probe.SchemaVersion, supported)
	case !slices.Contains(SupportedSchemaVersions, *probe.SchemaVersion):
		return nil, fmt.Errorf("results %s: %w: schema_version %d is older than this build reads (%s); re-run exactly loadgen to produce a current file",
			name, ErrUnsupportedSchema, *probe.SchemaVersion, supported)
	}
	var results Results
	decoder := json.NewDecoder(bytes.NewReader(data))
	if err := decoder.Decode(&results); err != nil {
		return nil, fmt.Errorf("decode results %s: %w", name, err)
	}
	for index, run := range results.Runs {
		if run == nil {
			return nil, fmt.Errorf("results %s: runs[%d] is null", name, index)
		}
	}
	return &results, nil
}

func supportedVersionsText() string {
	texts := make([]string, len(SupportedSchemaVersions))
	for index, version := range SupportedSchemaVersions {
		texts[index] = fmt.Sprint(version)
	}
	return "schema_version " + strings.Join(texts, ", ")
}

// FindProfiles lists the profiles of the run runID found in dirs: files
// whose name contains the run id (other than results JSON and dashboards),
// and the files inside a directory whose name contains it (pkg/profile
// writes cpu.pprof, mem.pprof, trace.out into one directory per run).
// Paths are returned sorted and without duplicates; unreadable directories
// are skipped.
func FindProfiles(runID string, dirs ...string) []string {
	if runID == "" {
		return nil
	}
	seen := map[string]bool{}
	var found []string
	add := func(path string) {
		if clean := filepath.Clean(path); !seen[clean] {
			seen[clean] = true
			found = append(found, clean)
		}
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, entry := range entries {
			if !strings.Contains(entry.Name(), runID) {
				continue
			}
			path := filepath.Join(dir, entry.Name())
			if !entry.IsDir() {
				if extension := filepath.Ext(entry.Name()); extension != ".json" && extension != ".html" {
					add(path)
				}
				continue
			}
			inner, err := os.ReadDir(path)
			if err != nil {
				continue
			}
			for _, file := range inner {
				if !file.IsDir() {
					add(filepath.Join(path, file.Name()))
				}
			}
		}
	}
	sort.Strings(found)
	return found
}
