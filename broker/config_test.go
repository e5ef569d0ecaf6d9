package broker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigUnknownSettingDidYouMean: an unknown key is one line naming
// the key, the file and line, and the closest known key; never the list
// of every key.
func TestConfigUnknownSettingDidYouMean(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "server.properties")
	content := "# comment\n\nnum.partitions=3\n! another comment\nlog.segment.bytes 1048576\n\nlog.retention.msec=60000\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadPropertiesFile(path)
	want := `unknown setting "log.retention.msec" in server.properties line 7; did you mean log.retention.ms?`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	var unknown *UnknownSettingError
	if !errors.As(err, &unknown) || unknown.Key != "log.retention.msec" || unknown.Closest != "log.retention.ms" {
		t.Errorf("error %#v", err)
	}
	_, err = ParseProperties([]string{"compltely.different=1"})
	if err == nil || strings.Count(err.Error(), ",") > 0 || !strings.Contains(err.Error(), "'exactly broker --help'") {
		t.Errorf("no near key: %v", err)
	}
	if err := CheckProperty("log.retention.ms", "x"); err == nil || !strings.Contains(err.Error(), "log.retention.ms") {
		t.Errorf("bad value: %v", err)
	}
}

// TestConfigReadPropertiesFile: Java's properties syntax as Kafka reads
// it: =, : or a blank between key and value, comments, continuations.
func TestConfigReadPropertiesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kafka.properties")
	content := "a=1\nb : 2\nc 3\n  # indented comment\nlisteners=PLAINTEXT://:9092,\\\n    CONTROLLER://:9093\nempty=\nmap=CONTROLLER:PLAINTEXT\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPropertiesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3},
		{"listeners", "PLAINTEXT://:9092,CONTROLLER://:9093", 5}, {"empty", "", 7}, {"map", "CONTROLLER:PLAINTEXT", 8}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if err := os.WriteFile(path, []byte("novalue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPropertiesFile(path); err == nil || !strings.Contains(err.Error(), "kafka.properties line 1") {
		t.Errorf("a key without a value: %v", err)
	}
}
