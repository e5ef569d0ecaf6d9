// Package auth is the broker's SASL authentication, as a pure library (no
// network, no clock): the server side of the PLAIN and SCRAM-SHA-256/512
// conversations (SCRAM through github.com/xdg-go/scram), the durable
// store of SCRAM credentials, and the loader of the users file the
// broker can start with. The broker's SaslHandshake / SaslAuthenticate
// handlers drive a Conversation; DescribeUserScramCredentials and
// AlterUserScramCredentials read and change the Store.
//
// # What is stored
//
// Only salted SCRAM credentials, as Kafka stores them: per user and
// mechanism the salt, the iteration count, StoredKey = H(HMAC(salted,
// "Client Key")) and ServerKey = HMAC(salted, "Server Key"), where salted
// is PBKDF2(password, salt, iterations). Never a password. PLAIN, which
// sends the password itself, is checked against a stored SCRAM
// credential: the salted password is derived with its salt and
// iterations and StoredKey recomputed (Credential.VerifyPassword). A user
// with no SCRAM credential cannot log in with PLAIN either.
//
// # The credentials file
//
// The store is one JSON file (CredentialsFile in the broker's data
// directory), replaced as a whole on every change with
// storage.WriteFileAtomic (temporary file, fsync, rename, directory
// fsync), so a crash leaves either the old or the new file:
//
//	{"version": 1,
//	 "users": {"alice": {"SCRAM-SHA-512": {"salt": "<base64>",
//	     "stored_key": "<base64>", "server_key": "<base64>", "iterations": 4096}}}}
//
// A file that does not parse, has another version, or holds a credential
// whose keys have the wrong length for its mechanism is an error at
// open: the broker does not start rather than silently lose users.
package auth

import (
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"

	"github.com/xdg-go/scram"
)

// Mechanism is a SASL mechanism the broker implements.
type Mechanism string

// The mechanisms, by their SASL names.
const (
	// Plain is RFC 4616 PLAIN: the client sends its password.
	Plain Mechanism = "PLAIN"
	// ScramSHA256 is RFC 7677 SCRAM-SHA-256.
	ScramSHA256 Mechanism = "SCRAM-SHA-256"
	// ScramSHA512 is SCRAM-SHA-512 (RFC 5802 with SHA-512), as Kafka defines it.
	ScramSHA512 Mechanism = "SCRAM-SHA-512"
)

// ScramMechanisms are the SCRAM mechanisms, in Kafka's type order.
var ScramMechanisms = []Mechanism{ScramSHA256, ScramSHA512}

// Iteration bounds Kafka puts on SCRAM credentials (ScramMechanism's
// minIterations; ScramControlManager.MAX_ITERATIONS).
const (
	MinIterations = 4096
	MaxIterations = 16384
	// DefaultIterations is what the users file uses, as kafka-configs does.
	DefaultIterations = 4096
)

// ParseMechanism parses a mechanism name (case-sensitive, as Kafka's
// sasl.enabled.mechanisms is). GSSAPI and OAUTHBEARER, which Kafka knows,
// get an error that says they are not implemented.
func ParseMechanism(name string) (Mechanism, error) {
	switch m := Mechanism(strings.TrimSpace(name)); m {
	case Plain, ScramSHA256, ScramSHA512:
		return m, nil
	case "GSSAPI", "OAUTHBEARER":
		return "", fmt.Errorf("SASL mechanism %s is not supported (supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", m)
	default:
		return "", fmt.Errorf("unknown SASL mechanism %q (supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", name)
	}
}

// IsScram reports whether m is a SCRAM mechanism.
func (m Mechanism) IsScram() bool { return m == ScramSHA256 || m == ScramSHA512 }

// ScramType is the mechanism's number in DescribeUserScramCredentials and
// AlterUserScramCredentials (Kafka's ScramMechanism type: 1 is
// SCRAM-SHA-256, 2 SCRAM-SHA-512); 0 (UNKNOWN) for the others.
func (m Mechanism) ScramType() int8 {
	switch m {
	case ScramSHA256:
		return 1
	case ScramSHA512:
		return 2
	}
	return 0
}

// ScramFromType is the SCRAM mechanism of a Kafka ScramMechanism type,
// and false for UNKNOWN or a number Kafka does not define.
func ScramFromType(t int8) (Mechanism, bool) {
	switch t {
	case 1:
		return ScramSHA256, true
	case 2:
		return ScramSHA512, true
	}
	return "", false
}

// hashFunc is the SCRAM mechanism's hash; nil for others.
func (m Mechanism) hashFunc() func() hash.Hash {
	switch m {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// scramHash is xdg-go's name for the mechanism's hash.
func (m Mechanism) scramHash() scram.HashGeneratorFcn {
	switch m {
	case ScramSHA256:
		return scram.SHA256
	case ScramSHA512:
		return scram.SHA512
	}
	return nil
}
