package clientsec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Inconsistent settings are refused with the flag to fix, before any
// file is read; a consistent one resolves, and its description names the
// protocol, mechanism and user but never the password.
func TestValidateAndDescribe(t *testing.T) {
	sasl := Config{Protocol: SASLSSL, Mechanism: MechanismSCRAMSHA256, Username: "bob", Password: "hunter2"}
	cases := []struct {
		config Config
		want   string
	}{
		{Config{Protocol: "TLS"}, `--security-protocol "TLS": not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`},
		{Config{Mechanism: MechanismPlain}, "--sasl-mechanism is for --security-protocol SASL_PLAINTEXT or SASL_SSL (it is PLAINTEXT)"},
		{Config{Protocol: SSL, Username: "bob"}, "--sasl-username is for"},
		{Config{Protocol: SASLPlaintext, Username: "bob", Password: "x"}, "--security-protocol SASL_PLAINTEXT needs --sasl-mechanism"},
		{Config{Protocol: SASLPlaintext, Mechanism: "OAUTHBEARER", Username: "bob", Password: "x"}, "GSSAPI and OAUTHBEARER are not supported"},
		{Config{Protocol: SASLSSL, Mechanism: MechanismPlain, Password: "x"}, "needs --sasl-username"},
		{Config{Protocol: SASLPlaintext, Mechanism: MechanismPlain, Username: "a", Password: "b", ServerName: "x"}, "--tls-server-name is for --security-protocol SSL or SASL_SSL"},
		{Config{Protocol: SSL, CertFile: "c.pem"}, "--tls-cert and --tls-key go together"},
	}
	for _, test := range cases {
		err := test.config.Validate()
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("%+v: error %v, want one with %q", test.config, err, test.want)
		}
	}
	settings, err := sasl.Resolve()
	if err != nil || settings == nil || len(settings.Options()) != 2 {
		t.Fatalf("resolve %+v: %v, %v", sasl, settings, err)
	}
	if text := settings.Describe(); text != "SASL_SSL, SCRAM-SHA-256 as bob, system CAs" || strings.Contains(text, "hunter2") {
		t.Errorf("describe: %q", text)
	}
	if plain, err := (Config{}).Resolve(); plain != nil || err != nil || plain.Options() != nil || plain.Describe() != "PLAINTEXT" {
		t.Errorf("the zero Config resolves to %v, %v", plain, err)
	}
}

// A CA file that is missing, or holds no certificate, is an error naming
// the flag and the file; the TLS configuration for an address takes the
// address's host as the server name unless one was given.
func TestTLSFiles(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{filepath.Join(dir, "missing.pem"): "--tls-ca: open", empty: "no PEM certificate in the file"} {
		if _, err := (Config{Protocol: SSL, CAFile: file}).Resolve(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CA %s: %v, want %q", file, err, want)
		}
	}
	settings, err := Config{Protocol: SSL}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if name := settings.TLSConfig("127.0.0.1:9093").ServerName; name != "127.0.0.1" {
		t.Errorf("server name %q", name)
	}
	if name := settings.TLSConfig("[::1]:9093").ServerName; name != "::1" {
		t.Errorf("server name %q", name)
	}
	named, _ := Config{Protocol: SSL, ServerName: "broker.example"}.Resolve()
	if name := named.TLSConfig("127.0.0.1:9093").ServerName; name != "broker.example" {
		t.Errorf("server name %q", name)
	}
	if len(settings.SASLOptions()) != 0 || len(settings.Options()) != 1 {
		t.Error("an SSL client has SASL options, or no TLS option")
	}
}
