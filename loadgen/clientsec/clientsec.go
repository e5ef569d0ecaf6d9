// Package clientsec turns the load generator's client security settings
// (`exactly loadgen --security-protocol … --sasl-… --tls-…`) into franz-go
// client options: TLS through kgo.DialTLSConfig, SASL through franz-go's
// pkg/sasl/plain and pkg/sasl/scram. Every client the load generator makes
// against a cluster that needs them gets the same options (see Settings).
//
// The names follow Kafka's client settings: security.protocol is one of
// PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; sasl.mechanism one of PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512.
package clientsec

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Security protocols, Kafka's security.protocol values.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// SASL mechanisms, Kafka's sasl.mechanism values.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// Protocols lists the security protocols, in Kafka's order.
func Protocols() []string { return []string{Plaintext, SSL, SASLPlaintext, SASLSSL} }

// Mechanisms lists the SASL mechanisms the load generator speaks.
func Mechanisms() []string {
	return []string{MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512}
}

// PasswordEnv is the environment variable a SASL password may come from
// instead of a command-line flag (which other users of the machine can
// read in the process list). Worker subprocesses get it this way too.
const PasswordEnv = "EXACTLY_SASL_PASSWORD"

// Config is how the load generator's clients connect to a cluster. The
// zero Config is PLAINTEXT: no TLS, no SASL. It is JSON for worker
// subprocesses; the password is never encoded (see PasswordEnv).
type Config struct {
	// Protocol is security.protocol ("": PLAINTEXT).
	Protocol string `json:"protocol,omitempty"`
	// Mechanism is sasl.mechanism (SASL protocols only).
	Mechanism string `json:"mechanism,omitempty"`
	// Username and Password are the SASL credentials.
	Username string `json:"username,omitempty"`
	Password string `json:"-"`
	// CAFile is a PEM file of the certificate authorities the client
	// trusts (empty: the system's).
	CAFile string `json:"ca_file,omitempty"`
	// CertFile and KeyFile are the client's own certificate chain and
	// private key (PEM), for brokers with ssl.client.auth=required or
	// requested; both or neither.
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
	// ServerName is the name the broker's certificate must carry (empty:
	// the host of the address dialed).
	ServerName string `json:"server_name,omitempty"`
	// InsecureSkipVerify accepts any broker certificate (tests only: it
	// leaves the connection open to a man in the middle).
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
}

// IsZero reports whether c asks for nothing: a PLAINTEXT client.
func (c Config) IsZero() bool { return c == Config{} }

// protocol is c's protocol, PLAINTEXT when unset.
func (c Config) protocol() string {
	if c.Protocol == "" {
		return Plaintext
	}
	return c.Protocol
}

// TLS reports whether c's protocol runs over TLS.
func (c Config) TLS() bool { return c.protocol() == SSL || c.protocol() == SASLSSL }

// SASL reports whether c's protocol authenticates with SASL.
func (c Config) SASL() bool { return c.protocol() == SASLPlaintext || c.protocol() == SASLSSL }

// Validate reports the first inconsistent setting of c, in the flags'
// names, without reading any file.
func (c Config) Validate() error {
	protocol := c.protocol()
	known := false
	for _, name := range Protocols() {
		known = known || protocol == name
	}
	if !known {
		return fmt.Errorf("--security-protocol %q: not one of %s", c.Protocol, strings.Join(Protocols(), ", "))
	}
	if c.SASL() {
		if err := c.validateSASL(); err != nil {
			return err
		}
	} else {
		if flag := firstSet([]flagSet{{"--sasl-mechanism", c.Mechanism != ""}, {"--sasl-username", c.Username != ""},
			{"--sasl-password", c.Password != ""}}); flag != "" {
			return fmt.Errorf("%s is for --security-protocol SASL_PLAINTEXT or SASL_SSL (it is %s)", flag, protocol)
		}
	}
	if !c.TLS() {
		if flag := firstSet([]flagSet{{"--tls-ca", c.CAFile != ""}, {"--tls-cert", c.CertFile != ""}, {"--tls-key", c.KeyFile != ""},
			{"--tls-server-name", c.ServerName != ""}, {"--tls-insecure-skip-verify", c.InsecureSkipVerify}}); flag != "" {
			return fmt.Errorf("%s is for --security-protocol SSL or SASL_SSL (it is %s)", flag, protocol)
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("--tls-cert and --tls-key go together: the client certificate and its private key")
	}
	return nil
}

// flagSet is a flag's name and whether it was given.
type flagSet struct {
	name string
	set  bool
}

// firstSet is the name of the first flag given ("" if none).
func firstSet(flags []flagSet) string {
	for _, flag := range flags {
		if flag.set {
			return flag.name
		}
	}
	return ""
}

// validateSASL checks the SASL settings of a SASL protocol.
func (c Config) validateSASL() error {
	switch c.Mechanism {
	case MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512:
	case "":
		return fmt.Errorf("--security-protocol %s needs --sasl-mechanism (%s)", c.protocol(), strings.Join(Mechanisms(), ", "))
	default:
		return fmt.Errorf("--sasl-mechanism %q: not one of %s (GSSAPI and OAUTHBEARER are not supported)", c.Mechanism,
			strings.Join(Mechanisms(), ", "))
	}
	if c.Username == "" {
		return fmt.Errorf("--security-protocol %s needs --sasl-username", c.protocol())
	}
	if c.Password == "" {
		return fmt.Errorf("--security-protocol %s needs a password: --sasl-password, or the environment variable %s", c.protocol(), PasswordEnv)
	}
	return nil
}

// Describe says what c connects with, for results and progress, never
// with the password: "SASL_SSL, SCRAM-SHA-512 as alice, CA ca.pem".
func (c Config) Describe() string {
	parts := []string{c.protocol()}
	if c.SASL() {
		parts = append(parts, c.Mechanism+" as "+c.Username)
	}
	if c.TLS() {
		switch {
		case c.InsecureSkipVerify:
			parts = append(parts, "broker certificate not verified")
		case c.CAFile != "":
			parts = append(parts, "CA "+c.CAFile)
		default:
			parts = append(parts, "system CAs")
		}
		if c.CertFile != "" {
			parts = append(parts, "client certificate "+c.CertFile)
		}
	}
	return strings.Join(parts, ", ")
}

// Settings are a Config resolved into what clients use: the TLS
// configuration (files read once) and the SASL mechanism. A nil *Settings
// is PLAINTEXT. Settings are immutable and shared by every client.
type Settings struct {
	config Config
	// tls is nil without TLS. kgo clones it per connection.
	tls       *tls.Config
	mechanism sasl.Mechanism // nil without SASL
}

// Resolve validates c and reads its files. The zero Config resolves to
// nil (PLAINTEXT).
func (c Config) Resolve() (*Settings, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.protocol() == Plaintext {
		return nil, nil
	}
	settings := &Settings{config: c}
	if c.TLS() {
		config, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		settings.tls = config
	}
	if c.SASL() {
		switch c.Mechanism {
		case MechanismPlain:
			settings.mechanism = plain.Auth{User: c.Username, Pass: c.Password}.AsMechanism()
		case MechanismSCRAMSHA256:
			settings.mechanism = scram.Auth{User: c.Username, Pass: c.Password}.AsSha256Mechanism()
		case MechanismSCRAMSHA512:
			settings.mechanism = scram.Auth{User: c.Username, Pass: c.Password}.AsSha512Mechanism()
		}
	}
	return settings, nil
}

// tlsConfig reads the CA and client certificate files of c.
func (c Config) tlsConfig() (*tls.Config, error) {
	config := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in the file", c.CAFile)
		}
		config.RootCAs = pool
	}
	if c.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", c.CertFile, c.KeyFile, err)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return config, nil
}

// Config is what s was resolved from (the zero Config for nil: PLAINTEXT).
func (s *Settings) Config() Config {
	if s == nil {
		return Config{}
	}
	return s.config
}

// Describe is s's Config's description ("PLAINTEXT" for nil).
func (s *Settings) Describe() string { return s.Config().Describe() }

// Options are the kgo options that give a client s: TLS dialing and the
// SASL mechanism (none for nil). A client that sets its own kgo.Dialer
// cannot take DialTLSConfig (kgo refuses both); it uses DialOption.
func (s *Settings) Options() []kgo.Opt {
	if s == nil {
		return nil
	}
	options := s.SASLOptions()
	if s.tls != nil {
		options = append(options, kgo.DialTLSConfig(s.tls))
	}
	return options
}

// SASLOptions are only the SASL part of Options.
func (s *Settings) SASLOptions() []kgo.Opt {
	if s == nil || s.mechanism == nil {
		return nil
	}
	return []kgo.Opt{kgo.SASL(s.mechanism)}
}

// TLSConfig is the TLS configuration for a connection to host (host:port
// or host), as kgo.DialTLSConfig would use it: a clone with the server
// name set to host's when none was given. Nil without TLS.
func (s *Settings) TLSConfig(host string) *tls.Config {
	if s == nil || s.tls == nil {
		return nil
	}
	config := s.tls.Clone()
	if config.ServerName == "" {
		name := host
		if i := strings.LastIndex(host, ":"); i >= 0 {
			name = host[:i]
		}
		config.ServerName = strings.Trim(name, "[]")
	}
	return config
}
