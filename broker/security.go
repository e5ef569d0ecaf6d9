package broker

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// This file holds what the security pieces share: a listener's security
// protocol (parseListenerSpecs sets it), and a connection's identity
// (connIdentity), which SASL authentication (connection.saslStep) or a TLS
// client certificate (connection.handshake) sets through setPrincipal and
// the authorizer (connection.authorized) reads.

// SecurityProtocol is a listener's security protocol, in Kafka's terms.
type SecurityProtocol int8

// The security protocols Kafka defines (listener.security.protocol.map's
// values).
const (
	// Plaintext is PLAINTEXT: no TLS, no authentication.
	Plaintext SecurityProtocol = iota
	// SSL is TLS, with client certificates when ssl.client.auth asks.
	SSL
	// SASLPlaintext is SASL authentication without TLS.
	SASLPlaintext
	// SASLSSL is SASL authentication over TLS.
	SASLSSL
)

// String returns the protocol's Kafka name.
func (p SecurityProtocol) String() string {
	switch p {
	case Plaintext:
		return "PLAINTEXT"
	case SSL:
		return "SSL"
	case SASLPlaintext:
		return "SASL_PLAINTEXT"
	case SASLSSL:
		return "SASL_SSL"
	}
	return fmt.Sprintf("SecurityProtocol(%d)", int8(p))
}

// TLS reports whether the protocol runs over TLS.
func (p SecurityProtocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether clients must authenticate with SASL first.
func (p SecurityProtocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// ParseSecurityProtocol parses a Kafka security protocol name.
func ParseSecurityProtocol(name string) (SecurityProtocol, error) {
	switch strings.ToUpper(strings.TrimSpace(name)) {
	case "PLAINTEXT":
		return Plaintext, nil
	case "SSL":
		return SSL, nil
	case "SASL_PLAINTEXT":
		return SASLPlaintext, nil
	case "SASL_SSL":
		return SASLSSL, nil
	}
	return 0, fmt.Errorf("unknown security protocol %q (want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", name)
}

// anonymousPrincipal is the principal of a connection that has not
// authenticated (PLAINTEXT, or SSL without a client certificate), as
// Kafka names it.
const anonymousPrincipal = "User:ANONYMOUS"

// connIdentity is a connection's authentication state. The reader
// goroutine changes it (SaslAuthenticate runs there); handlers that run
// on their own goroutines read it, hence the mutex.
type connIdentity struct {
	mu sync.Mutex
	// principal is "User:<name>" once authenticated, anonymousPrincipal
	// before (or on a listener without authentication).
	principal string
	// authenticated is true once SASL succeeded, or always on a listener
	// without SASL.
	authenticated bool
	// sessionExpiry is when a SASL session ends (KIP-368,
	// connections.max.reauth.ms); zero is never.
	sessionExpiry time.Time
}

// principal returns the connection's principal ("User:alice").
func (c *connection) principal() string {
	c.identity.mu.Lock()
	defer c.identity.mu.Unlock()
	if c.identity.principal == "" {
		return anonymousPrincipal
	}
	return c.identity.principal
}

// setPrincipal records a successful authentication.
func (c *connection) setPrincipal(principal string, sessionExpiry time.Time) {
	c.identity.mu.Lock()
	defer c.identity.mu.Unlock()
	c.identity.principal, c.identity.authenticated, c.identity.sessionExpiry = principal, true, sessionExpiry
}
