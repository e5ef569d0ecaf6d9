package broker

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// This file holds TLS for SSL and SASL_SSL listeners (crypto/tls): the
// ssl.* settings, PEM only, read when the broker starts (a missing or
// unreadable file is a start error, never a failure at the first
// connection); the handshake, which runs on the connection's reader
// goroutine with a deadline; and the principal of a verified client
// certificate, User:<subject DN> in the form Kafka's default principal
// builder uses (X500Principal.getName(), RFC 2253: most specific RDN
// first, e.g. "CN=alice,OU=eng,O=example").

// tlsHandshakeTimeout bounds a TLS handshake; a client that has not
// finished it by then is disconnected. A variable so tests can shorten it.
var tlsHandshakeTimeout = 10 * time.Second

// tlsSettings are one listener's ssl.* settings, as strings; serverConfig
// reads the files they name.
type tlsSettings struct {
	// KeystoreLocation is ssl.keystore.location: a PEM file with the
	// private key and the certificate chain.
	KeystoreLocation string
	// KeystoreChain and KeystoreKey are ssl.keystore.certificate.chain and
	// ssl.keystore.key: the same, inline.
	KeystoreChain, KeystoreKey string
	// TruststoreLocation is ssl.truststore.location: a PEM file of CA
	// certificates that client certificates must chain to.
	TruststoreLocation string
	// TruststoreCertificates is ssl.truststore.certificates: the same, inline.
	TruststoreCertificates string
	// ClientAuth is ssl.client.auth: none, requested or required.
	ClientAuth string
}

// tlsSettingNames are the ssl.* settings a listener may override with
// listener.name.<lower-case name>.<setting>.
var tlsSettingNames = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates", "ssl.client.auth",
}

// listenerSettingPrefix is Kafka's prefix of per-listener settings.
const listenerSettingPrefix = "listener.name."

// findListenerSetting resolves listener.name.<name>.<ssl setting> to the
// ssl setting's table entry, renamed to the full key.
func findListenerSetting(name string) (setting, bool) {
	rest, ok := strings.CutPrefix(name, listenerSettingPrefix)
	if !ok {
		return setting{}, false
	}
	listenerName, key, ok := strings.Cut(rest, ".")
	if !ok || listenerName == "" || !strings.HasPrefix(key, "ssl.") {
		return setting{}, false
	}
	for _, s := range brokerSettings {
		if s.name == key {
			s.name = name
			return s, true
		}
	}
	return setting{}, false
}

// keystoreType checks ssl.keystore.type and ssl.truststore.type: only
// PEM is implemented.
func keystoreType(v string) error {
	if !strings.EqualFold(strings.TrimSpace(v), "PEM") {
		return fmt.Errorf("%q is not supported: only PEM stores are (JKS and PKCS12 are not); give the key and certificate chain as a PEM file (ssl.keystore.location) or inline (ssl.keystore.certificate.chain, ssl.keystore.key)", v)
	}
	return nil
}

// clientAuth checks ssl.client.auth.
func clientAuth(v string) error {
	switch v {
	case "none", "requested", "required":
		return nil
	}
	return fmt.Errorf("%q is not none, requested or required", v)
}

// serverConfig builds the listener's tls.Config, reading its PEM files.
func (s tlsSettings) serverConfig() (*tls.Config, error) {
	certificate, err := s.keyPair()
	if err != nil {
		return nil, err
	}
	config := &tls.Config{
		Certificates: []tls.Certificate{certificate},
		MinVersion:   tls.VersionTLS12, // Kafka's default ssl.enabled.protocols: TLSv1.2,TLSv1.3
	}
	switch s.ClientAuth {
	case "requested":
		config.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		config.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return config, nil
	}
	pool, err := s.trustPool()
	if err != nil {
		return nil, err
	}
	config.ClientCAs = pool
	return config, nil
}

// keyPair reads the keystore: a file, or the inline chain and key.
func (s tlsSettings) keyPair() (tls.Certificate, error) {
	var chain, key []byte
	switch {
	case s.KeystoreLocation != "" && (s.KeystoreChain != "" || s.KeystoreKey != ""):
		return tls.Certificate{}, errors.New("give ssl.keystore.location or ssl.keystore.certificate.chain with ssl.keystore.key, not both")
	case s.KeystoreLocation != "":
		content, err := os.ReadFile(s.KeystoreLocation)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		chain, key = content, content
	case s.KeystoreChain != "" && s.KeystoreKey != "":
		chain, key = []byte(inlinePEM(s.KeystoreChain)), []byte(inlinePEM(s.KeystoreKey))
	default:
		return tls.Certificate{}, errors.New("a TLS listener needs ssl.keystore.location (a PEM file with the private key and certificate chain) or ssl.keystore.certificate.chain and ssl.keystore.key")
	}
	if strings.Contains(string(key), "ENCRYPTED PRIVATE KEY") {
		return tls.Certificate{}, errors.New("the keystore's private key is encrypted; only unencrypted PEM keys are supported (ssl.key.password is not)")
	}
	certificate, err := tls.X509KeyPair(chain, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("keystore %s: %w", s.keystoreSource(), err)
	}
	return certificate, nil
}

func (s tlsSettings) keystoreSource() string {
	if s.KeystoreLocation != "" {
		return s.KeystoreLocation
	}
	return "(ssl.keystore.certificate.chain, ssl.keystore.key)"
}

// trustPool reads the truststore that client certificates must chain to.
func (s tlsSettings) trustPool() (*x509.CertPool, error) {
	var content []byte
	source := "ssl.truststore.certificates"
	switch {
	case s.TruststoreLocation != "" && s.TruststoreCertificates != "":
		return nil, errors.New("give ssl.truststore.location or ssl.truststore.certificates, not both")
	case s.TruststoreLocation != "":
		var err error
		if content, err = os.ReadFile(s.TruststoreLocation); err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		source = s.TruststoreLocation
	case s.TruststoreCertificates != "":
		content = []byte(inlinePEM(s.TruststoreCertificates))
	default:
		return nil, fmt.Errorf("ssl.client.auth=%s needs a truststore (ssl.truststore.location or ssl.truststore.certificates) to verify client certificates", s.ClientAuth)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(content) {
		return nil, fmt.Errorf("truststore %s: no PEM certificate in it", source)
	}
	return pool, nil
}

// pemBoundary matches PEM's BEGIN and END lines.
var pemBoundary = regexp.MustCompile(`-----(BEGIN|END) [A-Z0-9 ]+-----`)

// inlinePEM restores the line breaks of PEM given on one line (Kafka
// accepts inline PEM without them): each boundary on a line of its own.
func inlinePEM(v string) string {
	if strings.Contains(v, "\n") {
		return v
	}
	v = pemBoundary.ReplaceAllString(v, "\n$0\n")
	var lines []string
	for line := range strings.SplitSeq(v, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if pemBoundary.MatchString(line) {
			lines = append(lines, line)
			continue
		}
		lines = append(lines, strings.Join(strings.Fields(line), ""))
	}
	return strings.Join(lines, "\n") + "\n"
}

// handshake runs the TLS handshake of a connection on a TLS listener
// (reader goroutine, before the first request) within
// tlsHandshakeTimeout, and sets the principal of a verified client
// certificate on an SSL listener (on SASL_SSL, SASL decides the
// principal). It reports whether the connection may go on.
func (c *connection) handshake(conn *tls.Conn) bool {
	conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := conn.HandshakeContext(c.ctx); err != nil {
		if ok, suppressed := c.listener.failedHandshakes.allow(time.Now()); ok {
			c.logger.Info("closing connection: TLS handshake failed", "listener", c.listener.name,
				"error", err, "failures_not_logged", suppressed)
		}
		return false
	}
	conn.SetDeadline(time.Time{})
	state := conn.ConnectionState()
	if c.protocol == SSL && len(state.VerifiedChains) > 0 && len(state.PeerCertificates) > 0 {
		principal := "User:" + distinguishedName(state.PeerCertificates[0])
		c.setPrincipal(principal, time.Time{})
		c.logger.Debug("TLS client authenticated", "principal", principal)
	}
	return true
}

// distinguishedName formats a certificate's subject as Java's
// X500Principal.getName() does (RFC 2253): RDNs most specific first,
// comma-separated, multi-valued RDNs joined by "+", the keywords Java
// knows (CN, C, L, ST, O, OU, STREET, DC, UID) and other attributes as
// dotted OID=#hex of the value's DER encoding as it was in the
// certificate.
func distinguishedName(cert *x509.Certificate) string {
	var sequence rawRDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &sequence); err != nil || len(rest) > 0 {
		return cert.Subject.String()
	}
	parts := make([]string, 0, len(sequence))
	for i := len(sequence) - 1; i >= 0; i-- {
		attributes := make([]string, 0, len(sequence[i]))
		for _, attribute := range sequence[i] {
			attributes = append(attributes, attribute.format())
		}
		parts = append(parts, strings.Join(attributes, "+"))
	}
	return strings.Join(parts, ",")
}

// rawRDNSequence is a subject with each value's DER kept (pkix's
// RDNSequence decodes values to Go types, losing their string tags).
type rawRDNSequence []rawRDNSET

// rawRDNSET is one relative distinguished name (encoding/asn1 treats a
// slice type whose name ends in SET as a SET OF).
type rawRDNSET []rawAttribute

// rawAttribute is one AttributeTypeAndValue.
type rawAttribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rfc2253Keywords are the attribute types X500Principal.getName() names.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

func (a rawAttribute) format() string {
	oid := a.Type.String()
	if keyword, known := rfc2253Keywords[oid]; known {
		var value string
		if rest, err := asn1.Unmarshal(a.Value.FullBytes, &value); err == nil && len(rest) == 0 {
			return keyword + "=" + escapeDNValue(value)
		}
	}
	return oid + "=#" + hex.EncodeToString(a.Value.FullBytes)
}

// escapeDNValue escapes an attribute value as RFC 2253 section 2.4 says.
func escapeDNValue(v string) string {
	var out strings.Builder
	for i, r := range v {
		switch {
		case strings.ContainsRune(`,+"\<>;`, r),
			i == 0 && (r == ' ' || r == '#'),
			i == len(v)-1 && r == ' ':
			out.WriteByte('\\')
		}
		out.WriteRune(r)
	}
	return out.String()
}
