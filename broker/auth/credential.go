package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/xdg-go/scram"
)

// saltBytes is the length of the salts NewCredential draws.
const saltBytes = 24

// Credential is one user's SCRAM credential for one mechanism: what a
// server needs to check a client's proof and prove itself back, and
// nothing from which the password can be read back.
type Credential struct {
	// Mechanism is ScramSHA256 or ScramSHA512.
	Mechanism Mechanism
	// Salt is the salt (raw bytes, not base64).
	Salt []byte
	// StoredKey is H(ClientKey), ClientKey = HMAC(salted password, "Client Key").
	StoredKey []byte
	// ServerKey is HMAC(salted password, "Server Key").
	ServerKey []byte
	// Iterations is the PBKDF2 iteration count.
	Iterations int
}

// Errors of credential construction and of the store; the broker maps
// them to Kafka error codes.
var (
	// ErrUnacceptableCredential is a credential Kafka would refuse
	// (UNACCEPTABLE_CREDENTIAL): an empty user name, iterations out of
	// [MinIterations, MaxIterations], an empty salt or password.
	ErrUnacceptableCredential = errors.New("unacceptable credential")
	// ErrUnsupportedMechanism is a mechanism that is not SCRAM
	// (UNSUPPORTED_SASL_MECHANISM).
	ErrUnsupportedMechanism = errors.New("unsupported SCRAM mechanism")
	// ErrNotFound is a credential that does not exist (RESOURCE_NOT_FOUND).
	ErrNotFound = errors.New("credential not found")
	// ErrDuplicate is a user named twice in one request (DUPLICATE_RESOURCE).
	ErrDuplicate = errors.New("user named twice in one request")
	// ErrStorage is a failed write of the credentials file
	// (KAFKA_STORAGE_ERROR); the store is unchanged.
	ErrStorage = errors.New("credentials file not written")
)

// checkIterations applies Kafka's bounds.
func checkIterations(iterations int) error {
	if iterations < MinIterations {
		return fmt.Errorf("%w: too few iterations (%d, minimum %d)", ErrUnacceptableCredential, iterations, MinIterations)
	}
	if iterations > MaxIterations {
		return fmt.Errorf("%w: too many iterations (%d, maximum %d)", ErrUnacceptableCredential, iterations, MaxIterations)
	}
	return nil
}

// NewCredential derives a credential from a password with a fresh random
// salt. The password is used as its UTF-8 bytes, without SASLprep, as
// Kafka's ScramFormatter and the Kafka clients do.
func NewCredential(m Mechanism, password string, iterations int) (Credential, error) {
	salt := make([]byte, saltBytes)
	if _, err := rand.Read(salt); err != nil {
		return Credential{}, fmt.Errorf("draw a salt: %w", err)
	}
	return NewCredentialWithSalt(m, password, salt, iterations)
}

// NewCredentialWithSalt derives a credential from a password and a given
// salt (NewCredential draws the salt; tests and PLAIN verification give it).
func NewCredentialWithSalt(m Mechanism, password string, salt []byte, iterations int) (Credential, error) {
	if !m.IsScram() {
		return Credential{}, fmt.Errorf("%w: %s", ErrUnsupportedMechanism, m)
	}
	if password == "" {
		return Credential{}, fmt.Errorf("%w: empty password", ErrUnacceptableCredential)
	}
	if len(salt) == 0 {
		return Credential{}, fmt.Errorf("%w: empty salt", ErrUnacceptableCredential)
	}
	if err := checkIterations(iterations); err != nil {
		return Credential{}, err
	}
	return derive(m, password, salt, iterations)
}

// derive computes the credential through xdg-go's client (PBKDF2 and the
// two keys); bounds are the caller's business.
func derive(m Mechanism, password string, salt []byte, iterations int) (Credential, error) {
	client, err := m.scramHash().NewClientUnprepped("", password, "")
	if err != nil {
		return Credential{}, fmt.Errorf("%s credential: %w", m, err)
	}
	stored, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	if err != nil {
		return Credential{}, fmt.Errorf("%s credential: %w", m, err)
	}
	return Credential{Mechanism: m, Salt: append([]byte(nil), salt...), StoredKey: stored.StoredKey,
		ServerKey: stored.ServerKey, Iterations: iterations}, nil
}

// CredentialFromSaltedPassword builds a credential from what an
// AlterUserScramCredentials upsertion carries: the salt, the iteration
// count and the salted password (the client ran PBKDF2), as Kafka's
// controller turns an upsertion into StoredKey and ServerKey. Beyond
// Kafka's checks (iterations), an empty salt and a salted password whose
// length is not the hash's are refused: no client could ever log in with
// such a credential.
func CredentialFromSaltedPassword(m Mechanism, salt, saltedPassword []byte, iterations int) (Credential, error) {
	if !m.IsScram() {
		return Credential{}, fmt.Errorf("%w: %s", ErrUnsupportedMechanism, m)
	}
	if err := checkIterations(iterations); err != nil {
		return Credential{}, err
	}
	if len(salt) == 0 {
		return Credential{}, fmt.Errorf("%w: empty salt", ErrUnacceptableCredential)
	}
	if size := m.hashFunc()().Size(); len(saltedPassword) != size {
		return Credential{}, fmt.Errorf("%w: salted password of %d bytes, %s needs %d", ErrUnacceptableCredential, len(saltedPassword), m, size)
	}
	mac := func(key []byte, message string) []byte {
		h := hmac.New(m.hashFunc(), key)
		h.Write([]byte(message))
		return h.Sum(nil)
	}
	h := m.hashFunc()()
	h.Write(mac(saltedPassword, "Client Key"))
	return Credential{Mechanism: m, Salt: append([]byte(nil), salt...), StoredKey: h.Sum(nil),
		ServerKey: mac(saltedPassword, "Server Key"), Iterations: iterations}, nil
}

// VerifyPassword reports whether password is the one the credential was
// made from (PLAIN's check): it derives the salted password with the
// credential's salt and iterations and compares StoredKey in constant time.
func (c Credential) VerifyPassword(password string) bool {
	derived, err := derive(c.Mechanism, password, c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	return hmac.Equal(derived.StoredKey, c.StoredKey)
}

// validate checks a credential read from disk: a SCRAM mechanism, keys of
// the hash's length, a salt, iterations within Kafka's bounds.
func (c Credential) validate() error {
	if !c.Mechanism.IsScram() {
		return fmt.Errorf("%w: %q", ErrUnsupportedMechanism, c.Mechanism)
	}
	size := c.Mechanism.hashFunc()().Size()
	if len(c.StoredKey) != size || len(c.ServerKey) != size {
		return fmt.Errorf("%s: keys of %d and %d bytes, want %d", c.Mechanism, len(c.StoredKey), len(c.ServerKey), size)
	}
	if len(c.Salt) == 0 {
		return fmt.Errorf("%s: empty salt", c.Mechanism)
	}
	return checkIterations(c.Iterations)
}

// stored is the credential as xdg-go's server wants it.
func (c Credential) stored() scram.StoredCredentials {
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
		StoredKey:  c.StoredKey,
		ServerKey:  c.ServerKey,
	}
}
