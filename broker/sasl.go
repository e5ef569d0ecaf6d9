package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/bytebufferpool"

	"github.com/exactly-eos/exactly/broker/auth"
	"github.com/exactly-eos/exactly/wire"
)

// This file is the broker's side of SASL: the per-connection session
// state machine that SaslHandshake (handleSASLHandshake) and
// SaslAuthenticate (handleSASLAuthenticate) drive, the gate that decides
// which requests a SASL listener serves in each state, KIP-368 session
// expiry, the bare-token exchange of SaslHandshake v0, and opening the
// credential store (broker/auth) with the users file at start.
//
// The states of a connection on a SASL listener (Kafka's
// SaslServerAuthenticator and KafkaChannel together):
//
//	awaiting handshake ──SaslHandshake(known mechanism)──▶ authenticating
//	authenticating ──SaslAuthenticate…(conversation done)──▶ authenticated
//	authenticated ──SaslHandshake (sessions expire, client did v1+)──▶ authenticating (re-authentication)
//
// What each state serves; anything else closes the connection, logged:
//   - awaiting handshake: ApiVersions, SaslHandshake, SaslAuthenticate
//     (which answers ILLEGAL_SASL_STATE and closes: no mechanism yet).
//   - authenticating: SaslAuthenticate only (Kafka's AUTHENTICATE state).
//   - authenticated, session not expired: everything.
//   - authenticated, session expired (connections.max.reauth.ms): only a
//     SaslHandshake that starts re-authentication.
//
// A failed authentication answers SASL_AUTHENTICATION_FAILED (or, for an
// unknown mechanism, UNSUPPORTED_SASL_MECHANISM) and closes the
// connection after the answer. Re-authentication must use the same
// mechanism and end as the same principal; the connection keeps its
// principal while it re-authenticates.

// saslSettings are the SASL broker settings.
type saslSettings struct {
	// Mechanisms is sasl.enabled.mechanisms, in the order given.
	Mechanisms []auth.Mechanism
	// MaxReauth is connections.max.reauth.ms; 0 is no expiry.
	MaxReauth time.Duration
	// MaxReceiveSize is sasl.server.max.receive.size.
	MaxReceiveSize int32
}

// saslMechanismList validates sasl.enabled.mechanisms.
func saslMechanismList(v string) error {
	_, err := parseSASLMechanisms(v)
	return err
}

func parseSASLMechanisms(v string) ([]auth.Mechanism, error) {
	var ms []auth.Mechanism
	for _, name := range strings.Split(v, ",") {
		if strings.TrimSpace(name) == "" {
			continue
		}
		m, err := auth.ParseMechanism(name)
		if err != nil {
			return nil, err
		}
		if !containsMechanism(ms, m) {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return nil, errors.New("no SASL mechanism enabled")
	}
	return ms, nil
}

func containsMechanism(ms []auth.Mechanism, m auth.Mechanism) bool {
	for _, have := range ms {
		if have == m {
			return true
		}
	}
	return false
}

// mechanisms reads sasl.enabled.mechanisms.
func (p *settingsParser) mechanisms(name string) []auth.Mechanism {
	v, ok := p.value(name, kindList)
	if !ok {
		return nil
	}
	ms, err := parseSASLMechanisms(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("broker setting %s: %w", name, err))
	}
	return ms
}

// saslPhase is where a connection is in the state machine above.
type saslPhase int8

const (
	saslAwaitingHandshake saslPhase = iota
	saslAuthenticating
	saslAuthenticated
)

func (p saslPhase) String() string {
	return [...]string{"awaiting SaslHandshake", "authenticating", "authenticated"}[p]
}

// saslSession is a connection's SASL state. Only the connection's reader
// goroutine touches it (the SASL handlers run there); what other
// goroutines need (the principal) is published through c.setPrincipal.
type saslSession struct {
	phase saslPhase
	// mechanism is the mechanism of the current or last conversation.
	mechanism auth.Mechanism
	// conversation runs while phase is saslAuthenticating.
	conversation auth.Conversation
	// rawTokens: SaslHandshake v0 was used, so the next frames are bare
	// SASL tokens, not Kafka requests, until the conversation ends.
	rawTokens bool
	// reauthCapable: the client sent SaslAuthenticate v1+ (KIP-368), so
	// it may re-authenticate; Kafka's connectedClientSupportsReauthentication.
	reauthCapable bool
	// principal is the authenticated principal; it stays during a
	// re-authentication, which must end with the same one.
	principal string
	// expiry is when the session ends; zero is never.
	expiry time.Time
	// badMechanism, when set, is why the re-authentication under way
	// fails at its first SaslAuthenticate (another mechanism was asked).
	badMechanism string
}

// reauthenticating reports whether the conversation under way renews an
// authenticated session.
func (s *saslSession) reauthenticating() bool { return s.principal != "" }

// saslStats counts SASL outcomes (tests read them).
type saslStats struct {
	authentications, reauthentications, failures atomic.Int64
}

// openCredentials opens the SCRAM credential store in the data directory
// and applies the users file, if any (its users win over the store's).
func (b *Broker) openCredentials(usersFile string) error {
	store, err := auth.OpenStore(b.fs, filepath.Join(b.dataDir, auth.CredentialsFile))
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.credentials = store
	if usersFile == "" {
		return nil
	}
	users, err := auth.LoadUsersFile(usersFile)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	changed, err := store.PutUsers(users)
	if err != nil {
		return fmt.Errorf("broker: users file %s: %w", usersFile, err)
	}
	b.logger.Info("users file applied", "file", usersFile, "users", len(users), "changed", len(changed))
	return nil
}

// saslAllows is the gate of a SASL listener: it reports whether a request
// for api may be served in the connection's state; when not, it logs why
// and the caller closes the connection without an answer, as Kafka does.
func (c *connection) saslAllows(api int16) bool {
	s := &c.sasl
	var why string
	switch s.phase {
	case saslAwaitingHandshake:
		if api == wire.APIVersions || api == wire.APISASLHandshake || api == wire.APISASLAuthenticate {
			return true
		}
		why = "request before SASL authentication"
	case saslAuthenticating:
		if api == wire.APISASLAuthenticate {
			return true
		}
		why = "request other than SaslAuthenticate during SASL authentication"
	case saslAuthenticated:
		if s.expiry.IsZero() || time.Now().Before(s.expiry) {
			return true
		}
		if api == wire.APISASLHandshake && s.reauthCapable {
			return true
		}
		why = "SASL session expired (connections.max.reauth.ms) and the client did not re-authenticate"
	}
	c.logger.Warn("closing connection: "+why, "api", wire.APIName(api), "sasl_state", s.phase.String())
	return false
}

// saslFrameLimit is the largest frame the reader accepts next:
// sasl.server.max.receive.size while a SASL connection is not (or is
// re-)authenticating, the broker's maximum otherwise.
func (c *connection) saslFrameLimit() int32 {
	limit := c.broker.maxFrameSize
	if c.protocol.SASL() && c.sasl.phase != saslAuthenticated {
		limit = min(limit, c.broker.config.settings.SASL.MaxReceiveSize)
	}
	return limit
}

// saslStepResult is the outcome of one client token.
type saslStepResult struct {
	// answer is the server's token for the client.
	answer []byte
	// complete: the conversation ended and the session is authenticated.
	complete bool
	// lifetime is the session lifetime to report (0: none), when complete.
	lifetime time.Duration
	// failure, when set, is the message for SASL_AUTHENTICATION_FAILED;
	// the session is then dead and the connection must close.
	failure string
}

// saslStep feeds one client token to the conversation under way (the
// caller checked that one is) and, when it ends, authenticates the
// connection.
func (c *connection) saslStep(token []byte) saslStepResult {
	s := &c.sasl
	what := "authentication"
	if s.reauthenticating() {
		what = "re-authentication"
	}
	if s.badMechanism != "" {
		return c.saslFail(s.badMechanism, errors.New(s.badMechanism))
	}
	answer, done, err := s.conversation.Step(token)
	if err != nil {
		message := fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", what, s.mechanism)
		var authErr *auth.AuthError
		if errors.As(err, &authErr) && authErr.ClientMessage != "" {
			message = authErr.ClientMessage
		}
		return c.saslFail(message, err)
	}
	if !done {
		return saslStepResult{answer: answer}
	}
	principal := "User:" + s.conversation.User()
	if s.reauthenticating() && principal != s.principal {
		message := fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", s.principal, principal)
		return c.saslFail(message, errors.New(message))
	}
	var lifetime time.Duration
	s.expiry = time.Time{}
	if maxReauth := c.broker.config.settings.SASL.MaxReauth; maxReauth > 0 {
		lifetime = maxReauth
		s.expiry = time.Now().Add(maxReauth)
	}
	if s.reauthenticating() {
		c.broker.saslStats.reauthentications.Add(1)
	} else {
		c.broker.saslStats.authentications.Add(1)
	}
	c.logger.Debug("SASL "+what+" succeeded", "principal", principal, "mechanism", string(s.mechanism), "session_lifetime", lifetime)
	s.phase, s.principal, s.conversation, s.rawTokens = saslAuthenticated, principal, nil, false
	c.setPrincipal(principal, s.expiry)
	return saslStepResult{answer: answer, complete: true, lifetime: lifetime}
}

// saslFail ends the session after a failed step: logged with the reason
// (never sent: it may say whether the user exists), counted, and the
// reader stops after this request so the connection closes once the
// answer is out.
func (c *connection) saslFail(message string, reason error) saslStepResult {
	c.broker.saslStats.failures.Add(1)
	c.logger.Info("closing connection: SASL authentication failed", "mechanism", string(c.sasl.mechanism),
		"reauthentication", c.sasl.reauthenticating(), "reason", reason)
	c.sasl.conversation, c.sasl.rawTokens = nil, false
	c.stopReader = true
	return saslStepResult{failure: message}
}

// startSASL begins a conversation of mechanism m (SaslHandshake
// accepted it); raw is SaslHandshake v0's bare-token framing.
func (c *connection) startSASL(m auth.Mechanism, raw bool) error {
	s := &c.sasl
	if s.reauthenticating() && m != s.mechanism {
		s.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", m, s.mechanism)
	} else {
		conversation, err := auth.NewConversation(m, c.broker.credentials)
		if err != nil {
			return err
		}
		s.conversation, s.mechanism, s.badMechanism = conversation, m, ""
	}
	s.phase, s.rawTokens = saslAuthenticating, raw
	return nil
}

// serveRawSASLToken serves one frame of SaslHandshake v0's exchange: the
// frame is a bare SASL token and so is the answer (no Kafka headers). A
// failure closes the connection without an answer, as Kafka does for
// this framing. It reports whether the reader should go on.
func (c *connection) serveRawSASLToken(buffer *bytebufferpool.ByteBuffer, reserved int64) bool {
	req := &request{buffer: buffer, body: buffer.B, slot: &response{done: make(chan struct{})}}
	if reserved > 0 {
		req.slot.reserved.Store(reserved)
		req.owner = c
	}
	select {
	case c.queue <- req.slot:
	case <-c.ctx.Done():
		req.release()
		return false
	}
	result := c.saslStep(req.body)
	req.release()
	if result.failure != "" {
		req.slot.completeClose()
		return false
	}
	frame := bytebufferpool.Get()
	b, sizeAt := wire.AppendFrameSize(frame.B[:0])
	b = append(b, result.answer...)
	wire.PatchFrameSize(b, sizeAt)
	frame.B = b
	req.slot.completeFrame(frame)
	return true
}
