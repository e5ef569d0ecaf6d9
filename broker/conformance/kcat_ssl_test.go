package conformance_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/selfsigned"
)

// kcat (librdkafka, OpenSSL) produces and consumes over SSL, and over a
// listener with ssl.client.auth=required only with a client certificate.
func TestKcatSSL(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	dir := t.TempDir()
	ca, err := selfsigned.NewCA("exactly test CA")
	if err != nil {
		t.Fatal(err)
	}
	serverLeaf, err := ca.Sign("broker", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.WriteFiles(dir, "server", serverLeaf)
	if err != nil {
		t.Fatal(err)
	}
	alice, err := ca.Sign("alice")
	if err != nil {
		t.Fatal(err)
	}
	aliceFiles, err := ca.WriteFiles(dir, "alice", alice)
	if err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, map[string]string{
		"listeners":                                  "SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
		"listener.security.protocol.map":             "SSL:SSL,MTLS:SSL",
		"ssl.keystore.location":                      server.Keystore,
		"listener.name.mtls.ssl.client.auth":         "required",
		"listener.name.mtls.ssl.truststore.location": server.CA,
	})
	run := func(input string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, append([]string{"-X", "security.protocol=ssl",
			"-X", "ssl.ca.location=" + server.CA, "-m", "5"}, args...)...)
		cmd.Stdin = strings.NewReader(input)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	var input strings.Builder
	for i := range 50 {
		fmt.Fprintf(&input, "ssl-%d\n", i)
	}
	ssl := b.Broker().ListenerAddr("SSL")
	if out, err := run(input.String(), "-b", ssl, "-P", "-t", "kcat-ssl"); err != nil {
		t.Fatalf("kcat produce over SSL: %v\n%s", err, out)
	}
	out, err := run("", "-b", ssl, "-C", "-t", "kcat-ssl", "-o", "beginning", "-e", "-q")
	if err != nil || out != input.String() {
		t.Fatalf("kcat consume over SSL: %v\n%q", err, out)
	}
	mtls := b.Broker().ListenerAddr("MTLS")
	if out, err := run("", "-b", mtls, "-L"); err == nil {
		t.Fatalf("kcat without a client certificate read metadata from ssl.client.auth=required:\n%s", out)
	}
	out, err = run("", "-b", mtls, "-L", "-X", "ssl.certificate.location="+aliceFiles.Cert,
		"-X", "ssl.key.location="+aliceFiles.Key)
	if err != nil || !strings.Contains(out, "kcat-ssl") {
		t.Fatalf("kcat with alice's certificate: %v\n%s", err, out)
	}
}
