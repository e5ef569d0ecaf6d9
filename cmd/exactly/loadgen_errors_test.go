package main

import (
	"bytes"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// closedPort returns a loopback port that was just listened on and
// closed: nothing listens there.
func closedPort(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	listener.Close()
	return port
}

// The errors a new user meets first — no broker at --bootstrap, a topic
// the cluster refuses to create, a PostgreSQL URL that does not connect —
// end `exactly loadgen` before any run, with exit status 1 and one line
// on stderr that names the problem and the fix (and no password).
func TestLoadgenFirstErrorsAreOneActionableLine(t *testing.T) {
	t.Parallel()
	port := closedPort(t)
	small := []string{"--faults", "none", "--mode", "idempotent", "--duration", "1s", "--records", "100", "--drain", "2s"}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"no broker at --bootstrap", append([]string{"--bootstrap", "127.0.0.1:" + port}, small...),
			[]string{"no Kafka broker answers at 127.0.0.1:" + port, "(connection refused)",
				"start one (exactly broker --listen 127.0.0.1:9092) or point --bootstrap at a running cluster"}},
		{"replication factor beyond the embedded broker", append([]string{"--replication-factor", "3"}, small...),
			[]string{"the embedded broker at", "refused to create topic", "INVALID_REPLICATION_FACTOR",
				"replication factor 3 is more than its 1 broker", "use --replication-factor 1 or fewer"}},
		{"PostgreSQL that does not connect", []string{"--db", "postgres://nobody:secret@127.0.0.1:" + port + "/x",
			"--mode", "consumer-dedup", "--faults", "none", "--duration", "1s", "--records", "100", "--drain", "2s"},
			[]string{"application database postgres://nobody@127.0.0.1:" + port + "/x", "cannot connect (connection refused)",
				"check the URL and that PostgreSQL is running", "leave --db out to use a temporary SQLite file"}},
	}
	for _, test := range cases {
		t.Run(test.name, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(append(append([]string{"loadgen"}, test.args...), "--out", out), &stdout, &stderr)
			elapsed := time.Since(start)
			text := stderr.String()
			if code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n"); len(lines) != 1 || !strings.HasSuffix(text, "\n") {
				t.Errorf("stderr is %d lines, want exactly one:\n%s", len(lines), text)
			}
			if !strings.HasPrefix(text, "exactly loadgen: ") {
				t.Errorf("stderr %q does not start with the command's name", text)
			}
			for _, want := range test.want {
				if !strings.Contains(text, want) {
					t.Errorf("stderr %q lacks %q", text, want)
				}
			}
			for _, leak := range []string{"secret", "goroutine", "panic"} {
				if strings.Contains(text, leak) {
					t.Errorf("stderr shows %q: %q", leak, text)
				}
			}
			// No run started: nothing on stdout, no results file, and
			// well under one run's second of load plus its drain.
			if stdout.Len() > 0 {
				t.Errorf("stdout holds output, so a run started:\n%s", stdout.String())
			}
			if files, err := os.ReadDir(out); err != nil || len(files) > 0 {
				t.Errorf("results directory holds %v (%v), want nothing", files, err)
			}
			if elapsed > 3*time.Second {
				t.Errorf("took %v: the error should come before any run", elapsed)
			}
		})
	}
}
