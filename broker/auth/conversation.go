package auth

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/xdg-go/scram"
)

// Conversation is the server side of one SASL exchange. Its caller (the
// broker's SaslAuthenticate handler) feeds it the client's messages in
// order until it reports done or fails; a Conversation is not reused and
// not safe for concurrent use (one connection's reader drives it).
type Conversation interface {
	// Step takes the client's next message and returns the server's
	// answer. done reports that the exchange is over and succeeded; then
	// User names who authenticated. An error means authentication
	// failed; it is an *AuthError.
	Step(clientMessage []byte) (serverMessage []byte, done bool, err error)
	// User is the authenticated user name, once Step reported done.
	User() string
	// Mechanism is the conversation's mechanism.
	Mechanism() Mechanism
}

// AuthError is a failed authentication. ClientMessage is what may be
// told to the client (Kafka's wording where Kafka tells it; empty when
// Kafka sends only a generic message); Reason is for the broker's log
// and may say more (never a password).
type AuthError struct {
	ClientMessage string
	Reason        error
}

// Error describes the failure for logs.
func (e *AuthError) Error() string {
	if e.ClientMessage != "" {
		return e.ClientMessage + ": " + e.Reason.Error()
	}
	return e.Reason.Error()
}

// Unwrap returns the reason.
func (e *AuthError) Unwrap() error { return e.Reason }

// NewConversation starts a conversation of mechanism m checking
// credentials against store.
func NewConversation(m Mechanism, store *Store) (Conversation, error) {
	switch m {
	case Plain:
		return &plainConversation{store: store}, nil
	case ScramSHA256, ScramSHA512:
		conv := &scramConversation{mechanism: m}
		server, err := m.scramHash().NewServer(func(user string) (scram.StoredCredentials, error) {
			c, ok := store.Lookup(user, m)
			if !ok {
				return scram.StoredCredentials{}, fmt.Errorf("no %s credential for user %q", m, user)
			}
			conv.transcript.credential = c
			return c.stored(), nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s server: %w", m, err)
		}
		conv.conversation = server.NewConversation()
		return conv, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedMechanism, m)
}

// scramConversation is SCRAM through xdg-go's server conversation: two
// client messages (client-first, client-final), two answers; a
// client-final message with librdkafka's buggy nonce is checked by
// scramTranscript.verifyLibrdkafkaFinal instead.
type scramConversation struct {
	mechanism    Mechanism
	conversation *scram.ServerConversation
	user         string
	// transcript is the first step, for the librdkafka compat path;
	// compat is whether it was recorded; finished ends the compat path.
	transcript       scramTranscript
	compat, finished bool
}

func (s *scramConversation) Mechanism() Mechanism { return s.mechanism }
func (s *scramConversation) User() string         { return s.user }

func (s *scramConversation) Step(clientMessage []byte) ([]byte, bool, error) {
	if s.conversation.Done() || s.finished {
		return nil, false, &AuthError{Reason: errors.New("SCRAM conversation already finished")}
	}
	if s.compat && s.transcript.isLibrdkafkaNonce(string(clientMessage)) {
		s.finished = true
		answer, err := s.transcript.verifyLibrdkafkaFinal(s.mechanism, string(clientMessage))
		if err != nil {
			return nil, false, &AuthError{Reason: fmt.Errorf("%s (librdkafka nonce): %w for user %q", s.mechanism, err, s.conversation.Username())}
		}
		s.user = s.conversation.Username()
		return []byte(answer), true, nil
	}
	answer, err := s.conversation.Step(string(clientMessage))
	if err != nil {
		// The answer may be an RFC 5802 "e=..." server-error message;
		// Kafka sends none, only SASL_AUTHENTICATION_FAILED.
		return nil, false, &AuthError{Reason: fmt.Errorf("%s: %w", s.mechanism, err)}
	}
	if authzID := s.conversation.AuthzID(); authzID != "" && authzID != s.conversation.Username() {
		return nil, false, &AuthError{
			ClientMessage: "Authentication failed: Client requested an authorization id that is different from username",
			Reason:        fmt.Errorf("%s: authorization id %q for user %q", s.mechanism, authzID, s.conversation.Username()),
		}
	}
	if !s.conversation.Done() {
		s.compat = s.transcript.record(string(clientMessage), answer)
		return []byte(answer), false, nil
	}
	if !s.conversation.Valid() {
		return nil, false, &AuthError{Reason: fmt.Errorf("%s: invalid proof for user %q", s.mechanism, s.conversation.Username())}
	}
	s.user = s.conversation.Username()
	return []byte(answer), true, nil
}

// plainConversation is PLAIN: one client message, an empty answer.
type plainConversation struct {
	store *Store
	user  string
	done  bool
}

func (p *plainConversation) Mechanism() Mechanism { return Plain }
func (p *plainConversation) User() string         { return p.user }

// timingSalt salts the throw-away derivation PLAIN runs for an unknown
// user, so that a wrong user name costs the same time as a wrong password.
var timingSalt = []byte("exactly-plain-unknown-user")

func (p *plainConversation) Step(clientMessage []byte) ([]byte, bool, error) {
	if p.done {
		return nil, false, &AuthError{Reason: errors.New("PLAIN conversation already finished")}
	}
	p.done = true
	authzID, user, password, err := ParsePlain(clientMessage)
	if err != nil {
		return nil, false, err
	}
	cred, ok := p.store.Lookup(user, ScramSHA512)
	if !ok {
		cred, ok = p.store.Lookup(user, ScramSHA256)
	}
	if !ok {
		derive(ScramSHA512, password, timingSalt, DefaultIterations)
	}
	if !ok || !cred.VerifyPassword(password) {
		return nil, false, &AuthError{
			ClientMessage: "Authentication failed: Invalid username or password",
			Reason:        fmt.Errorf("PLAIN: wrong password or unknown user %q", user),
		}
	}
	if authzID != "" && authzID != user {
		return nil, false, &AuthError{
			ClientMessage: "Authentication failed: Client requested an authorization id that is different from username",
			Reason:        fmt.Errorf("PLAIN: authorization id %q for user %q", authzID, user),
		}
	}
	p.user = user
	return []byte{}, true, nil
}

// ParsePlain splits a PLAIN message (RFC 4616: authzid NUL authcid NUL
// passwd) as Kafka's PlainSaslServer does: exactly three fields, valid
// UTF-8, a non-empty user name and password. Errors are *AuthError with
// Kafka's client messages.
func ParsePlain(message []byte) (authzID, user, password string, err error) {
	if !utf8.Valid(message) {
		return "", "", "", &AuthError{Reason: errors.New("PLAIN: message is not UTF-8")}
	}
	fields := bytes.Split(message, []byte{0})
	if len(fields) != 3 {
		return "", "", "", &AuthError{Reason: fmt.Errorf("invalid SASL/PLAIN response: expected 3 tokens, got %d", len(fields))}
	}
	authzID, user, password = string(fields[0]), string(fields[1]), string(fields[2])
	if user == "" {
		return "", "", "", &AuthError{ClientMessage: "Authentication failed: username not specified", Reason: errors.New("PLAIN: empty user name")}
	}
	if password == "" {
		return "", "", "", &AuthError{ClientMessage: "Authentication failed: password not specified", Reason: fmt.Errorf("PLAIN: empty password for user %q", user)}
	}
	return authzID, user, password, nil
}
