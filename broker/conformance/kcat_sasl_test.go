package conformance_test

// kcat (librdkafka) against a SASL_PLAINTEXT listener with SCRAM-SHA-512:
// the `exactly` binary runs with --users-file; kcat produces, consumes
// and reads metadata as alice, and a wrong password gets nothing.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/selfsigned"
)

func TestKcatSASLScram512(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	binary := buildExactly(t)
	for _, protocol := range []string{"SASL_PLAINTEXT", "SASL_SSL"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			checkKcatSASLScram512(t, kcat, binary, protocol)
		})
	}
}

// checkKcatSASLScram512 runs kcat as a SCRAM-SHA-512 user over protocol
// (SASL_SSL: TLS with a throw-away CA that kcat is given).
func checkKcatSASLScram512(t *testing.T, kcat, binary, protocol string) {
	dir := t.TempDir()
	brokerArgs := []string{"--config", "listeners=" + protocol + "://127.0.0.1:0"}
	var tlsArgs []string
	if protocol == "SASL_SSL" {
		ca, err := selfsigned.NewCA("kcat test CA")
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := ca.Sign("broker", "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		files, err := ca.WriteFiles(dir, "broker", leaf)
		if err != nil {
			t.Fatal(err)
		}
		brokerArgs = append(brokerArgs, "--config", "ssl.keystore.location="+files.Keystore)
		tlsArgs = []string{"-X", "ssl.ca.location=" + files.CA}
	}
	users := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(users, []byte("users:\n  - name: alice\n    password: alice-secret\n    mechanisms: [SCRAM-SHA-512]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	server := startExactly(t, binary, append([]string{"--data-dir", filepath.Join(dir, "data"), "--users-file", users,
		"--config", "connections.max.reauth.ms=60000"}, brokerArgs...)...)
	as := func(password string) []string {
		return append([]string{"-b", server.addr, "-X", "security.protocol=" + protocol, "-X", "sasl.mechanisms=SCRAM-SHA-512",
			"-X", "sasl.username=alice", "-X", "sasl.password=" + password}, tlsArgs...)
	}

	const count = 200
	var input strings.Builder
	for i := range count {
		fmt.Fprintf(&input, "key-%d:sasl-%d\n", i%7, i)
	}
	runKcat(t, kcat, input.String(), append(as("alice-secret"), "-P", "-t", "kcat-sasl", "-K", ":")...)
	output := runKcat(t, kcat, "", append(as("alice-secret"), "-C", "-t", "kcat-sasl", "-e", "-q", "-o", "beginning", "-f", "%s\n")...)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(output), "\n") {
		seen[line] = true
	}
	for i := range count {
		if !seen[fmt.Sprintf("sasl-%d", i)] {
			t.Fatalf("record sasl-%d not consumed back (%d distinct values read)", i, len(seen))
		}
	}

	// A wrong password: librdkafka reports the authentication failure and
	// the broker serves nothing (the topic kcat names is not created).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	command := exec.CommandContext(ctx, kcat, append(as("wrong"), "-L", "-t", "kcat-sasl-refused", "-m", "5")...)
	out, err := command.CombinedOutput()
	if err == nil || !strings.Contains(strings.ToLower(string(out)), "authentication") {
		t.Fatalf("kcat with a wrong password: %v\n%s", err, out)
	}
	metadata := runKcat(t, kcat, "", append(as("alice-secret"), "-L")...)
	if strings.Contains(metadata, "kcat-sasl-refused") || !strings.Contains(metadata, `topic "kcat-sasl"`) {
		t.Fatalf("metadata after the refused client:\n%s", metadata)
	}
	server.stop(t)
}
