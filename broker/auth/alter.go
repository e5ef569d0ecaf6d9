package auth

import "fmt"

// This file is the request semantics of DescribeUserScramCredentials and
// AlterUserScramCredentials, as Kafka's ScramImage.describe and
// ScramControlManager.alterCredentials define them, over the Store; the
// broker's handlers only translate kmsg types.

// ResultError is a per-user error of Describe or Alter: Kind is one of
// the package's sentinels (errors.Is works), Message is the text Kafka
// sends for the case.
type ResultError struct {
	Kind    error
	Message string
}

// Error returns Kafka's message.
func (e *ResultError) Error() string { return e.Message }

// Unwrap returns the sentinel.
func (e *ResultError) Unwrap() error { return e.Kind }

func resultError(kind error, format string, args ...any) error {
	return &ResultError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// DescribeResult is one user's answer to Describe.
type DescribeResult struct {
	User string
	// Err is nil, or a *ResultError (ErrDuplicate, ErrNotFound).
	Err         error
	Credentials []CredentialInfo
}

// Describe answers DescribeUserScramCredentials: with no users, every
// user that has a credential (sorted); otherwise each named user once, in
// the order first named, a user named twice getting ErrDuplicate and one
// without credentials ErrNotFound.
func (s *Store) Describe(users []string) []DescribeResult {
	if len(users) == 0 {
		var results []DescribeResult
		for _, name := range s.Users() {
			if infos := s.Credentials(name); infos != nil {
				results = append(results, DescribeResult{User: name, Credentials: infos})
			}
		}
		return results
	}
	count := map[string]int{}
	var order []string
	for _, name := range users {
		if count[name] == 0 {
			order = append(order, name)
		}
		count[name]++
	}
	results := make([]DescribeResult, 0, len(order))
	for _, name := range order {
		r := DescribeResult{User: name}
		switch infos := s.Credentials(name); {
		case count[name] > 1:
			r.Err = resultError(ErrDuplicate, "Cannot describe SCRAM credentials for the same user twice in a single request: %s", name)
		case infos == nil:
			r.Err = resultError(ErrNotFound, "Attempt to describe a user credential that does not exist: %s", name)
		default:
			r.Credentials = infos
		}
		results = append(results, r)
	}
	return results
}

// Deletion is an AlterUserScramCredentials deletion.
type Deletion struct {
	User string
	// Mechanism is Kafka's ScramMechanism type (1, 2; 0 is UNKNOWN).
	Mechanism int8
}

// Upsertion is an AlterUserScramCredentials upsertion.
type Upsertion struct {
	User           string
	Mechanism      int8
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// AlterResult is one user's answer to Alter.
type AlterResult struct {
	User string
	// Err is nil, a *ResultError, or the store's write error (then every
	// user that would have changed gets it: nothing changed).
	Err error
}

// Alter answers AlterUserScramCredentials as Kafka's controller does: a
// user may appear once in a request (deletions and upsertions together;
// more is ErrDuplicate), names must not be empty, mechanisms must be
// SCRAM, iterations within [MinIterations, MaxIterations], and a deletion
// must name an existing credential (ErrNotFound). The valid changes are
// applied together, in one durable write. Results: the deletions that
// succeeded, then the upsertions, then the failed users, each group in
// request order.
func (s *Store) Alter(deletions []Deletion, upsertions []Upsertion) []AlterResult {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	failed := map[string]error{}
	var failedOrder []string
	fail := func(user string, err error) {
		if _, dup := failed[user]; !dup {
			failedOrder = append(failedOrder, user)
		}
		failed[user] = err
	}
	duplicate := func() error {
		return resultError(ErrDuplicate, "A user credential cannot be altered twice in the same request")
	}
	pending := map[string]*change{}
	var order []string
	for _, d := range deletions {
		if _, bad := failed[d.User]; bad {
			continue
		}
		if _, dup := pending[d.User]; dup {
			delete(pending, d.User)
			fail(d.User, duplicate())
			continue
		}
		m, err := validateNameAndMechanism(d.User, d.Mechanism)
		if err == nil {
			if _, ok := s.Lookup(d.User, m); !ok {
				err = resultError(ErrNotFound, "Attempt to delete a user credential that does not exist")
			}
		}
		if err != nil {
			fail(d.User, err)
			continue
		}
		pending[d.User] = &change{user: d.User, mechanism: m}
		order = append(order, d.User)
	}
	for _, u := range upsertions {
		if _, bad := failed[u.User]; bad {
			continue
		}
		if _, dup := pending[u.User]; dup {
			delete(pending, u.User)
			fail(u.User, duplicate())
			continue
		}
		cred, err := upsertionCredential(u)
		if err != nil {
			fail(u.User, err)
			continue
		}
		pending[u.User] = &change{user: u.User, mechanism: cred.Mechanism, credential: &cred}
		order = append(order, u.User)
	}
	var changes []change
	var results []AlterResult
	for _, user := range order {
		if ch, ok := pending[user]; ok {
			changes = append(changes, *ch)
			results = append(results, AlterResult{User: user})
		}
	}
	if len(changes) > 0 {
		if err := s.apply(changes); err != nil {
			for i := range results {
				results[i].Err = err
			}
		}
	}
	for _, user := range failedOrder {
		results = append(results, AlterResult{User: user, Err: failed[user]})
	}
	return results
}

// validateNameAndMechanism is Kafka's validateScramUsernameAndMechanism.
func validateNameAndMechanism(user string, mechanism int8) (Mechanism, error) {
	if user == "" {
		return "", resultError(ErrUnacceptableCredential, "Username must not be empty")
	}
	m, ok := ScramFromType(mechanism)
	if !ok {
		return "", resultError(ErrUnsupportedMechanism, "Unknown SCRAM mechanism")
	}
	return m, nil
}

// upsertionCredential validates an upsertion and builds its credential.
func upsertionCredential(u Upsertion) (Credential, error) {
	m, err := validateNameAndMechanism(u.User, u.Mechanism)
	if err != nil {
		return Credential{}, err
	}
	switch {
	case u.Iterations < MinIterations:
		return Credential{}, resultError(ErrUnacceptableCredential, "Too few iterations")
	case u.Iterations > MaxIterations:
		return Credential{}, resultError(ErrUnacceptableCredential, "Too many iterations")
	}
	cred, err := CredentialFromSaltedPassword(m, u.Salt, u.SaltedPassword, int(u.Iterations))
	if err != nil {
		return Credential{}, &ResultError{Kind: ErrUnacceptableCredential, Message: err.Error()}
	}
	return cred, nil
}
