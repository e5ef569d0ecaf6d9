package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/exactly-eos/exactly/internal/selfsigned"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// secureKfake starts a kfake cluster that authenticates with SASL (user
// alice, SCRAM-SHA-512) and, with tlsOn, listens with TLS only, its
// certificate signed by a throw-away CA; it returns the cluster's address
// and the CA file.
func secureKfake(t *testing.T, tlsOn bool) (address, caFile string) {
	t.Helper()
	caFile, pair := testCertificate(t)
	options := []kfake.Opt{kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "alice", "alice-secret")}
	if tlsOn {
		options = append(options, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}))
	}
	cluster, err := kfake.NewCluster(options...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	return cluster.ListenAddrs()[0], caFile
}

// testCertificate makes a throw-away CA and a certificate for 127.0.0.1
// signed by it; it returns the CA file and the certificate with its key.
func testCertificate(t *testing.T) (caFile string, pair tls.Certificate) {
	t.Helper()
	ca, err := selfsigned.NewCA("exactly-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Sign("kfake", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	files, err := ca.WriteFiles(t.TempDir(), "kfake", leaf)
	if err != nil {
		t.Fatal(err)
	}
	if pair, err = tls.LoadX509KeyPair(files.Cert, files.Key); err != nil {
		t.Fatal(err)
	}
	return files.CA, pair
}

// runSecureLoadgen runs a short loadgen against address with the extra
// flags and returns its exit status, stdout, stderr and the results file
// (nil when none was written).
func runSecureLoadgen(t *testing.T, address string, mode string, extra ...string) (int, string, string, *report.Results) {
	t.Helper()
	out := t.TempDir()
	args := append([]string{"loadgen", "--bootstrap", address, "--mode", mode, "--records", "300",
		"--duration", "2s", "--warmup", "0s", "--drain", "10s", "--rate", "300", "--consumers", "1", "--quiet", "--out", out}, extra...)
	if !strings.Contains(strings.Join(extra, " "), "--faults") {
		args = append(args, "--faults", "none")
	}
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	matches, _ := filepath.Glob(filepath.Join(out, "*.json"))
	if len(matches) == 0 {
		return code, stdout.String(), stderr.String(), nil
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	var results report.Results
	if err := json.Unmarshal(data, &results); err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String(), &results
}

// The security flags reach every client of a run: against a kfake that
// wants SASL SCRAM-SHA-512 over TLS, a run with alice's password and the
// CA passes (the preflight, the admin client, the producers, the live
// consumer and the verification readers all connect), and its results
// say which protocol it used; the wrong password, or no CA, ends it
// before the first run with one line that says what to fix and never
// shows the password.
func TestLoadgenSASLSSLAgainstKfake(t *testing.T) {
	address, caFile := secureKfake(t, true)
	good := []string{"--security-protocol", "SASL_SSL", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "alice",
		"--sasl-password", "alice-secret", "--tls-ca", caFile}
	t.Run("right credentials", func(t *testing.T) {
		code, stdout, stderr, results := runSecureLoadgen(t, address, "idempotent", good...)
		if code != 0 || results == nil {
			t.Fatalf("exit %d, stderr %q, stdout %q", code, stderr, stdout)
		}
		if len(results.Runs) != 1 || results.Runs[0].Status != report.StatusPass {
			t.Fatalf("runs %+v, want one pass", results.Runs)
		}
		run := results.Runs[0]
		if run.Producers.Acknowledged < 300 || run.ClientSettings["security.protocol"] != "SASL_SSL" ||
			run.ClientSettings["sasl.mechanism"] != "SCRAM-SHA-512" {
			t.Errorf("acked %d, settings %v", run.Producers.Acknowledged, run.ClientSettings)
		}
		if !strings.Contains(results.Target.Description, "SASL_SSL, SCRAM-SHA-512 as alice") {
			t.Errorf("target description %q does not say how it connected", results.Target.Description)
		}
		data, _ := json.Marshal(results)
		if strings.Contains(string(data), "alice-secret") {
			t.Error("the results file holds the password")
		}
	})
	t.Run("password from the environment", func(t *testing.T) {
		t.Setenv("EXACTLY_SASL_PASSWORD", "alice-secret")
		code, _, stderr, _ := runSecureLoadgen(t, address, "at-least-once", withoutFlag(good, "--sasl-password")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
	failures := []struct {
		name  string
		flags []string
		want  []string
	}{
		{"wrong password", replaceFlag(good, "--sasl-password", "not-alice"),
			[]string{"during SASL authentication", "check --sasl-username, --sasl-password"}},
		{"no CA", withoutFlag(good, "--tls-ca"), []string{"TLS handshake with " + address + " failed", "certificate signed by unknown authority", "check --tls-ca"}},
		{"TLS only, no SASL", []string{"--security-protocol", "SSL", "--tls-ca", caFile},
			[]string{"closed the TLS connection at once", "the listener may require SASL"}},
		{"mechanism without a SASL protocol", []string{"--security-protocol", "SSL", "--sasl-mechanism", "PLAIN"},
			[]string{"--sasl-mechanism is for --security-protocol SASL_PLAINTEXT or SASL_SSL (it is SSL)"}},
		{"unknown mechanism", replaceFlag(good, "--sasl-mechanism", "GSSAPI"), []string{`--sasl-mechanism "GSSAPI": not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`}},
		{"unreadable CA", replaceFlag(good, "--tls-ca", filepath.Join(t.TempDir(), "missing.pem")), []string{"--tls-ca: open", "no such file"}},
		{"CA flag without TLS", []string{"--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "PLAIN", "--sasl-username", "a",
			"--sasl-password", "b", "--tls-ca", caFile}, []string{"--tls-ca is for --security-protocol SSL or SASL_SSL (it is SASL_PLAINTEXT)"}},
		{"no password", withoutFlag(good, "--sasl-password"), []string{"needs a password: --sasl-password, or the environment variable EXACTLY_SASL_PASSWORD"}},
	}
	for _, test := range failures {
		t.Run(test.name, func(t *testing.T) {
			code, stdout, stderr, results := runSecureLoadgen(t, address, "at-least-once", test.flags...)
			if code != 1 || results != nil || stdout != "" {
				t.Errorf("exit %d, results %v, stdout %q; want 1, none, nothing", code, results != nil, stdout)
			}
			if strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "alice-secret") || strings.Contains(stderr, "not-alice") {
				t.Errorf("stderr is not one line without the password: %q", stderr)
			}
			for _, want := range test.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q lacks %q", stderr, want)
				}
			}
		})
	}
}

// The security flags are for an existing cluster: the targets the load
// generator starts listen on PLAINTEXT, and it says so instead of
// running without them.
func TestLoadgenSecurityFlagsNeedBootstrap(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"loadgen", "--target", "kfake", "--security-protocol", "SSL", "--out", t.TempDir()}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "--security-protocol SSL, system CAs is for an existing cluster: add --bootstrap host:port") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// replaceFlag returns flags with name's value replaced by value.
func replaceFlag(flags []string, name, value string) []string {
	out := append([]string(nil), flags...)
	for i := range out[:len(out)-1] {
		if out[i] == name {
			out[i+1] = value
		}
	}
	return out
}

// withoutFlag returns flags without name and its value.
func withoutFlag(flags []string, name string) []string {
	var out []string
	for i := 0; i < len(flags); i++ {
		if flags[i] == name {
			i++
			continue
		}
		out = append(out, flags[i])
	}
	return out
}

// Over SASL_PLAINTEXT the fault proxy still reads Kafka requests (the
// SASL exchange passes through it), and a zombie-producer's worker
// subprocesses log in too, with the password from their environment, not
// their arguments: both cells pass against a kfake that wants SCRAM. Over
// SASL_SSL the proxy's plans are not applicable, and the run says why.
func TestLoadgenSASLFaultsAgainstKfake(t *testing.T) {
	t.Parallel()
	asExactlySelf(t)
	address, caFile := secureKfake(t, false)
	flags := []string{"--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "alice",
		"--sasl-password", "alice-secret", "--faults", "ack-loss,zombie-producer"}
	code, stdout, stderr, results := runSecureLoadgen(t, address, "transactional", flags...)
	if results == nil {
		t.Fatalf("exit %d, no results: %s %s", code, stderr, stdout)
	}
	for _, run := range results.Runs {
		if run.Status != report.StatusPass || run.FaultsFired == 0 {
			t.Errorf("%s: %s (%s), %d faults fired; want a pass with faults", run.Name, run.Status, run.Reason, run.FaultsFired)
		}
	}
	if code != 0 || len(results.Runs) != 2 {
		t.Errorf("exit %d, %d runs: %s", code, len(results.Runs), stderr)
	}

	tlsAddress, tlsCA := secureKfake(t, true)
	_ = caFile
	flags = []string{"--security-protocol", "SASL_SSL", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "alice",
		"--sasl-password", "alice-secret", "--tls-ca", tlsCA, "--faults", "ack-loss"}
	code, _, stderr, results = runSecureLoadgen(t, tlsAddress, "idempotent", flags...)
	if results == nil || len(results.Runs) != 1 {
		t.Fatalf("exit %d, results %v: %s", code, results, stderr)
	}
	if run := results.Runs[0]; run.Status != report.StatusNotApplicable || !strings.Contains(run.Reason, "the fault proxy reads Kafka requests, which SASL_SSL encrypts") {
		t.Errorf("ack-loss over SASL_SSL: %s (%s), want not-applicable saying why", run.Status, run.Reason)
	}
}
