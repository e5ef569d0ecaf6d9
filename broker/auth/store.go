package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/exactly-eos/exactly/broker/storage"
)

// CredentialsFile is the store's file name in the broker's data directory.
const CredentialsFile = "scram-credentials.json"

// fileVersion is the credentials file's format version (package doc).
const fileVersion = 1

// credentialsOnDisk is the credentials file (package doc).
type credentialsOnDisk struct {
	Version int                                       `json:"version"`
	Users   map[string]map[Mechanism]credentialOnDisk `json:"users"`
}

// credentialOnDisk is one credential in the file; []byte fields are
// base64 in JSON.
type credentialOnDisk struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int    `json:"iterations"`
}

// userCredentials are one user's credentials by mechanism.
type userCredentials map[Mechanism]Credential

// Store is the durable set of SCRAM credentials. It is safe for
// concurrent use: lookups (every authentication) take a read lock only;
// changes are serialized and written to disk before they are visible.
type Store struct {
	fs   storage.FS
	path string

	// writeMu serializes changes. It is held across the file write
	// (disk I/O), so the file is written in the order changes are
	// published; lookups never take it. Lock order: writeMu before mu.
	writeMu sync.Mutex
	// mu guards users. users is copy-on-write: a change builds a new map
	// and swaps it in under mu after the file holding it is durable, so a
	// lookup sees a credential only once a crash can no longer lose it.
	mu    sync.RWMutex
	users map[string]userCredentials
}

// OpenStore opens the store kept in path (normally CredentialsFile in the
// data directory) through fsys (nil: the OS's). A missing file is an
// empty store; the file is created by the first change.
func OpenStore(fsys storage.FS, path string) (*Store, error) {
	s := &Store{fs: fsys, path: path, users: map[string]userCredentials{}}
	data, err := storage.ReadFile(fsys, path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open SCRAM credentials: %w", err)
	}
	var file credentialsOnDisk
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("SCRAM credentials %s: %w", path, err)
	}
	if file.Version != fileVersion {
		return nil, fmt.Errorf("SCRAM credentials %s: version %d, this broker reads version %d", path, file.Version, fileVersion)
	}
	for name, byMechanism := range file.Users {
		creds := userCredentials{}
		for m, c := range byMechanism {
			cred := Credential{Mechanism: m, Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}
			if err := cred.validate(); err != nil {
				return nil, fmt.Errorf("SCRAM credentials %s: user %q: %w", path, name, err)
			}
			creds[m] = cred
		}
		if name == "" || len(creds) == 0 {
			return nil, fmt.Errorf("SCRAM credentials %s: an entry with an empty user name or no credentials", path)
		}
		s.users[name] = creds
	}
	return s, nil
}

// Lookup returns user's credential for mechanism m.
func (s *Store) Lookup(user string, m Mechanism) (Credential, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.users[user][m]
	return c, ok
}

// Users returns the names of the users with at least one credential, sorted.
func (s *Store) Users() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.users))
	for name := range s.users {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// CredentialInfo is what DescribeUserScramCredentials tells about one
// credential: its mechanism and iteration count.
type CredentialInfo struct {
	Mechanism  Mechanism
	Iterations int
}

// Credentials returns user's credentials' mechanisms and iterations, in
// mechanism type order; nil when the user has none.
func (s *Store) Credentials(user string) []CredentialInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var infos []CredentialInfo
	for _, m := range ScramMechanisms {
		if c, ok := s.users[user][m]; ok {
			infos = append(infos, CredentialInfo{Mechanism: m, Iterations: c.Iterations})
		}
	}
	return infos
}

// change is one edit of a user's credentials.
type change struct {
	user      string
	mechanism Mechanism
	// credential is the new credential; nil deletes the mechanism's.
	credential *Credential
	// replaceUser drops the user's other credentials first (users file).
	replaceUser bool
}

// apply makes changes durable and then visible, all or none: on a write
// error the store is unchanged. It is called with writeMu held.
func (s *Store) apply(changes []change) error {
	s.mu.RLock()
	next := make(map[string]userCredentials, len(s.users)+len(changes))
	for name, creds := range s.users {
		next[name] = creds // copied below when changed
	}
	s.mu.RUnlock()
	touched := map[string]bool{}
	for _, ch := range changes {
		if !touched[ch.user] {
			copied := userCredentials{}
			if !ch.replaceUser {
				for m, c := range next[ch.user] {
					copied[m] = c
				}
			}
			next[ch.user], touched[ch.user] = copied, true
		}
		if ch.credential == nil {
			delete(next[ch.user], ch.mechanism)
		} else {
			next[ch.user][ch.mechanism] = *ch.credential
		}
		if len(next[ch.user]) == 0 {
			delete(next, ch.user)
		}
	}
	if err := s.write(next); err != nil {
		return err
	}
	s.mu.Lock()
	s.users = next
	s.mu.Unlock()
	return nil
}

// write replaces the file with users (mode 0600: salted credentials are
// still worth an offline guess).
func (s *Store) write(users map[string]userCredentials) error {
	file := credentialsOnDisk{Version: fileVersion, Users: make(map[string]map[Mechanism]credentialOnDisk, len(users))}
	for name, creds := range users {
		byMechanism := make(map[Mechanism]credentialOnDisk, len(creds))
		for m, c := range creds {
			byMechanism[m] = credentialOnDisk{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}
		}
		file.Users[name] = byMechanism
	}
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: encode SCRAM credentials: %w", ErrStorage, err)
	}
	if err := storage.WriteFileAtomicMode(s.fs, s.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return nil
}
