package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// User is one entry of the users file: a user whose SCRAM credentials
// the broker creates (or keeps, when they already match) at start.
type User struct {
	Name     string
	Password string
	// Mechanisms are the SCRAM mechanisms to create credentials for.
	Mechanisms []Mechanism
}

// usersFile is the YAML users file:
//
//	users:
//	  - name: alice
//	    password: alice-secret
//	    mechanisms: [SCRAM-SHA-512]   # optional; default both SCRAM mechanisms
type usersFile struct {
	Users []struct {
		Name       string   `yaml:"name"`
		Password   string   `yaml:"password"`
		Mechanisms []string `yaml:"mechanisms"`
	} `yaml:"users"`
}

// LoadUsersFile reads and validates a users file. Unknown keys, an empty
// name or password, a name given twice and a mechanism that is not SCRAM
// are errors naming the entry. PLAIN is not a mechanism of the file: a
// user with any SCRAM credential can log in with PLAIN where the broker
// enables it.
func LoadUsersFile(path string) ([]User, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	users, err := ParseUsers(data)
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	return users, nil
}

// ParseUsers parses the content of a users file (LoadUsersFile).
func ParseUsers(data []byte) ([]User, error) {
	decoder := yaml.NewDecoder(bytes.NewReader(data))
	decoder.KnownFields(true)
	var file usersFile
	if err := decoder.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	seen := map[string]bool{}
	users := make([]User, 0, len(file.Users))
	for i, entry := range file.Users {
		where := fmt.Sprintf("users[%d]", i)
		switch {
		case entry.Name == "":
			return nil, fmt.Errorf("%s: no name", where)
		case seen[entry.Name]:
			return nil, fmt.Errorf("%s: user %q is listed twice", where, entry.Name)
		case entry.Password == "":
			return nil, fmt.Errorf("%s (%s): no password", where, entry.Name)
		}
		seen[entry.Name] = true
		user := User{Name: entry.Name, Password: entry.Password}
		for _, name := range entry.Mechanisms {
			m, err := ParseMechanism(name)
			if err == nil && !m.IsScram() {
				err = fmt.Errorf("%s is not a SCRAM mechanism (PLAIN needs no entry: it checks the password against the user's SCRAM credential)", m)
			}
			if err != nil {
				return nil, fmt.Errorf("%s (%s): %w", where, entry.Name, err)
			}
			if !containsMechanism(user.Mechanisms, m) {
				user.Mechanisms = append(user.Mechanisms, m)
			}
		}
		if len(user.Mechanisms) == 0 {
			user.Mechanisms = append(user.Mechanisms, ScramMechanisms...)
		}
		users = append(users, user)
	}
	return users, nil
}

func containsMechanism(ms []Mechanism, m Mechanism) bool {
	for _, have := range ms {
		if have == m {
			return true
		}
	}
	return false
}

// PutUsers makes the store hold exactly the given credentials for each
// listed user (the users file wins over what the store had for them;
// other users are untouched). A stored credential that already matches
// the password is kept, salt and iterations included, so a restart with
// the same file writes nothing. It returns the names whose credentials
// changed; the store is written once, or not at all.
func (s *Store) PutUsers(users []User) ([]string, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var changes []change
	var changed []string
	for _, u := range users {
		creds := make([]Credential, 0, len(u.Mechanisms))
		same := len(s.Credentials(u.Name)) == len(u.Mechanisms)
		for _, m := range u.Mechanisms {
			if have, ok := s.Lookup(u.Name, m); ok && have.VerifyPassword(u.Password) {
				creds = append(creds, have)
				continue
			}
			cred, err := NewCredential(m, u.Password, DefaultIterations)
			if err != nil {
				return nil, fmt.Errorf("user %q: %w", u.Name, err)
			}
			creds, same = append(creds, cred), false
		}
		if same {
			continue
		}
		changed = append(changed, u.Name)
		for i := range creds {
			changes = append(changes, change{user: u.Name, mechanism: creds[i].Mechanism, credential: &creds[i], replaceUser: i == 0})
		}
	}
	if len(changes) == 0 {
		return nil, nil
	}
	if err := s.apply(changes); err != nil {
		return nil, err
	}
	return changed, nil
}
