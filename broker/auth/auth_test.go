package auth

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"hash"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
)

// newStore opens an empty store in a fresh directory.
func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), CredentialsFile)
	s, err := OpenStore(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

// putUser stores alice-style users through the users-file path.
func putUser(t *testing.T, s *Store, name, password string, ms ...Mechanism) {
	t.Helper()
	if len(ms) == 0 {
		ms = ScramMechanisms
	}
	if _, err := s.PutUsers([]User{{Name: name, Password: password, Mechanisms: ms}}); err != nil {
		t.Fatal(err)
	}
}

// runScram runs a whole SCRAM exchange between xdg-go's client and our
// server conversation and reports the server's verdict and whether the
// client accepted the server's signature.
func runScram(t *testing.T, s *Store, m Mechanism, user, password string) (serverErr error, clientValid bool) {
	t.Helper()
	client, err := m.scramHash().NewClientUnprepped(user, password, "")
	if err != nil {
		t.Fatal(err)
	}
	cc := client.NewConversation()
	conv, err := NewConversation(m, s)
	if err != nil {
		t.Fatal(err)
	}
	first, err := cc.Step("")
	if err != nil {
		t.Fatal(err)
	}
	serverFirst, done, err := conv.Step([]byte(first))
	if err != nil || done {
		return err, false
	}
	final, err := cc.Step(string(serverFirst))
	if err != nil {
		t.Fatal(err)
	}
	serverFinal, done, err := conv.Step([]byte(final))
	if err != nil {
		return err, false
	}
	if !done || conv.User() != user {
		t.Fatalf("done=%v user=%q after the final step", done, conv.User())
	}
	if _, err := cc.Step(string(serverFinal)); err != nil {
		return nil, false
	}
	return nil, cc.Valid()
}

func TestScramAgainstXdgClient(t *testing.T) {
	s, _ := newStore(t)
	putUser(t, s, "alice", "alice-secret")
	putUser(t, s, "only512", "secret", ScramSHA512)
	putUser(t, s, "we,ird=name", "pw")
	for _, tc := range []struct {
		name     string
		m        Mechanism
		user, pw string
		ok       bool
	}{
		{"sha256", ScramSHA256, "alice", "alice-secret", true},
		{"sha512", ScramSHA512, "alice", "alice-secret", true},
		{"wrong password 256", ScramSHA256, "alice", "nope", false},
		{"wrong password 512", ScramSHA512, "alice", "alice-secret!", false},
		{"unknown user", ScramSHA512, "bob", "alice-secret", false},
		{"mechanism the user lacks", ScramSHA256, "only512", "secret", false},
		{"escaped name", ScramSHA512, "we,ird=name", "pw", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serverErr, clientValid := runScram(t, s, tc.m, tc.user, tc.pw)
			if tc.ok && (serverErr != nil || !clientValid) {
				t.Fatalf("want success, got server error %v, client accepted server: %v", serverErr, clientValid)
			}
			if !tc.ok {
				var authErr *AuthError
				if !errors.As(serverErr, &authErr) {
					t.Fatalf("want an *AuthError, got %v", serverErr)
				}
			}
		})
	}
}

func TestScramRejectsGarbageAndReplays(t *testing.T) {
	s, _ := newStore(t)
	putUser(t, s, "alice", "pw")
	for _, first := range []string{"", "x", "n,,", "p=tls-unique,,n=alice,r=abc", "n,,n=alice", "n,a=bob,n=alice,r=abc"} {
		conv, _ := NewConversation(ScramSHA256, s)
		if _, done, err := conv.Step([]byte(first)); err == nil {
			// A well-formed first message may pass step one; the exchange
			// still cannot complete without a proof.
			if done {
				t.Fatalf("%q: done after one message", first)
			}
			if _, done, err := conv.Step([]byte("c=biws,r=wrong,p=AAAA")); err == nil || done {
				t.Fatalf("%q: bogus final message accepted", first)
			}
		}
	}
	conv, _ := NewConversation(ScramSHA256, s)
	if _, _, err := conv.Step([]byte("n,a=bob,n=alice,r=abc")); err == nil {
		t.Fatal("authorization id different from the user name accepted")
	}
}

func TestParsePlain(t *testing.T) {
	for _, tc := range []struct {
		in                  string
		authz, user, pw     string
		wantErr, clientText string
	}{
		{in: "\x00alice\x00secret", user: "alice", pw: "secret"},
		{in: "alice\x00alice\x00secret", authz: "alice", user: "alice", pw: "secret"},
		{in: "\x00alice\x00pass\x00word", wantErr: "expected 3 tokens, got 4"},
		{in: "alice\x00secret", wantErr: "expected 3 tokens, got 2"},
		{in: "", wantErr: "expected 3 tokens, got 1"},
		{in: "\x00\x00secret", clientText: "Authentication failed: username not specified"},
		{in: "\x00alice\x00", clientText: "Authentication failed: password not specified"},
		{in: "\x00al\xffice\x00pw", wantErr: "not UTF-8"},
	} {
		authz, user, pw, err := ParsePlain([]byte(tc.in))
		if tc.wantErr == "" && tc.clientText == "" {
			if err != nil || authz != tc.authz || user != tc.user || pw != tc.pw {
				t.Errorf("%q: got (%q, %q, %q, %v)", tc.in, authz, user, pw, err)
			}
			continue
		}
		var authErr *AuthError
		if !errors.As(err, &authErr) {
			t.Errorf("%q: want an *AuthError, got %v", tc.in, err)
			continue
		}
		if tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: error %q does not say %q", tc.in, err, tc.wantErr)
		}
		if authErr.ClientMessage != tc.clientText {
			t.Errorf("%q: client message %q, want %q", tc.in, authErr.ClientMessage, tc.clientText)
		}
	}
}

func FuzzParsePlain(f *testing.F) {
	for _, seed := range []string{"\x00alice\x00secret", "a\x00b\x00c", "", "\x00\x00", "\xff\x00\x00"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, message []byte) {
		authz, user, pw, err := ParsePlain(message)
		if err != nil {
			var authErr *AuthError
			if !errors.As(err, &authErr) {
				t.Fatalf("error is not an *AuthError: %v", err)
			}
			return
		}
		if user == "" || pw == "" {
			t.Fatalf("accepted an empty user or password: %q", message)
		}
		rebuilt := authz + "\x00" + user + "\x00" + pw
		if rebuilt != string(message) {
			t.Fatalf("fields %q %q %q do not rebuild %q", authz, user, pw, message)
		}
	})
}

func TestPlainChecksTheStoredScramCredential(t *testing.T) {
	s, _ := newStore(t)
	putUser(t, s, "alice", "alice-secret")
	putUser(t, s, "only256", "pw256", ScramSHA256)
	for _, tc := range []struct {
		message string
		ok      bool
		user    string
	}{
		{"\x00alice\x00alice-secret", true, "alice"},
		{"alice\x00alice\x00alice-secret", true, "alice"},
		{"\x00only256\x00pw256", true, "only256"},
		{"\x00alice\x00wrong", false, ""},
		{"\x00bob\x00alice-secret", false, ""},
		{"bob\x00alice\x00alice-secret", false, ""},
	} {
		conv, _ := NewConversation(Plain, s)
		answer, done, err := conv.Step([]byte(tc.message))
		if tc.ok != (err == nil && done) {
			t.Errorf("%q: done=%v err=%v, want ok=%v", tc.message, done, err, tc.ok)
		}
		if tc.ok && (conv.User() != tc.user || len(answer) != 0) {
			t.Errorf("%q: user %q answer %q", tc.message, conv.User(), answer)
		}
		if _, _, err := conv.Step([]byte(tc.message)); err == nil {
			t.Errorf("%q: a second message accepted", tc.message)
		}
	}
}

// TestCredentialFromSaltedPassword checks that a credential built the way
// AlterUserScramCredentials delivers it (the client ran PBKDF2) lets the
// same password log in, for both hashes.
func TestCredentialFromSaltedPassword(t *testing.T) {
	s, _ := newStore(t)
	salt := []byte("0123456789abcdef")
	for _, tc := range []struct {
		m Mechanism
		h func() hash.Hash
	}{{ScramSHA256, sha256.New}, {ScramSHA512, sha512.New}} {
		salted, err := pbkdf2.Key(tc.h, "pw-"+string(tc.m), salt, 4096, tc.h().Size())
		if err != nil {
			t.Fatal(err)
		}
		results := s.Alter(nil, []Upsertion{{User: "u" + string(tc.m), Mechanism: tc.m.ScramType(), Iterations: 4096, Salt: salt, SaltedPassword: salted}})
		if len(results) != 1 || results[0].Err != nil {
			t.Fatalf("%s: %+v", tc.m, results)
		}
		if serverErr, ok := runScram(t, s, tc.m, "u"+string(tc.m), "pw-"+string(tc.m)); serverErr != nil || !ok {
			t.Fatalf("%s: login with the upserted credential: %v %v", tc.m, serverErr, ok)
		}
		viaSalt, err := NewCredentialWithSalt(tc.m, "pw-"+string(tc.m), salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := s.Lookup("u"+string(tc.m), tc.m)
		if !bytes.Equal(viaSalt.StoredKey, stored.StoredKey) || !bytes.Equal(viaSalt.ServerKey, stored.ServerKey) {
			t.Fatalf("%s: keys from the salted password differ from keys from the password", tc.m)
		}
	}
}

func TestStoreNeverHoldsPasswordsAndSurvivesReopen(t *testing.T) {
	s, path := newStore(t)
	putUser(t, s, "alice", "alice-very-secret-password")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("alice-very-secret-password")) {
		t.Fatal("the credentials file holds the password")
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file mode %v (%v), want 0600", info.Mode().Perm(), err)
	}
	reopened, err := OpenStore(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if serverErr, ok := runScram(t, reopened, ScramSHA512, "alice", "alice-very-secret-password"); serverErr != nil || !ok {
		t.Fatalf("after reopen: %v %v", serverErr, ok)
	}
	// The same users file again changes nothing (salts kept).
	changed, err := reopened.PutUsers([]User{{Name: "alice", Password: "alice-very-secret-password", Mechanisms: ScramMechanisms}})
	if err != nil || len(changed) != 0 {
		t.Fatalf("same users again: changed %v, %v", changed, err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, data) {
		t.Fatal("the file was rewritten for an unchanged user")
	}
	// A new password replaces the credentials; dropping a mechanism drops it.
	changed, err = reopened.PutUsers([]User{{Name: "alice", Password: "new", Mechanisms: []Mechanism{ScramSHA256}}})
	if err != nil || len(changed) != 1 {
		t.Fatalf("new password: changed %v, %v", changed, err)
	}
	if _, ok := reopened.Lookup("alice", ScramSHA512); ok {
		t.Fatal("SCRAM-SHA-512 credential kept though the file no longer lists it")
	}
	if serverErr, _ := runScram(t, reopened, ScramSHA256, "alice", "alice-very-secret-password"); serverErr == nil {
		t.Fatal("old password still works")
	}
}

func TestOpenStoreRefusesBadFiles(t *testing.T) {
	for name, content := range map[string]string{
		"not json":      "{",
		"wrong version": `{"version": 2, "users": {}}`,
		"short key":     `{"version": 1, "users": {"a": {"SCRAM-SHA-256": {"salt": "c2FsdA==", "stored_key": "AAAA", "server_key": "AAAA", "iterations": 4096}}}}`,
		"bad mechanism": `{"version": 1, "users": {"a": {"PLAIN": {"salt": "c2FsdA==", "stored_key": "", "server_key": "", "iterations": 4096}}}}`,
	} {
		path := filepath.Join(t.TempDir(), CredentialsFile)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenStore(nil, path); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
}

func TestAlterValidation(t *testing.T) {
	s, _ := newStore(t)
	putUser(t, s, "existing", "pw", ScramSHA256)
	putUser(t, s, "twice", "pw")
	good := func(user string) Upsertion {
		return Upsertion{User: user, Mechanism: 2, Iterations: 8192, Salt: []byte("salt"), SaltedPassword: make([]byte, 64)}
	}
	with := func(u Upsertion, edit func(*Upsertion)) Upsertion { edit(&u); return u }
	results := s.Alter(
		[]Deletion{{User: "existing", Mechanism: 1}, {User: "missing", Mechanism: 1}, {User: "twice", Mechanism: 1}, {User: "twice", Mechanism: 2}, {User: "", Mechanism: 1}},
		[]Upsertion{
			good("new"),
			with(good("few"), func(u *Upsertion) { u.Iterations = 4095 }),
			with(good("many"), func(u *Upsertion) { u.Iterations = 16385 }),
			with(good("mech"), func(u *Upsertion) { u.Mechanism = 3 }),
			with(good(""), func(u *Upsertion) {}),
			with(good("nosalt"), func(u *Upsertion) { u.Salt = nil }),
			with(good("short"), func(u *Upsertion) { u.SaltedPassword = make([]byte, 32) }),
			good("dup"), good("dup"), good("dup"),
			good("existing"),
		})
	want := []struct {
		user string
		kind error
		text string
	}{
		{"new", nil, ""},
		{"missing", ErrNotFound, "Attempt to delete a user credential that does not exist"},
		{"twice", ErrDuplicate, "A user credential cannot be altered twice in the same request"},
		{"", ErrUnacceptableCredential, "Username must not be empty"},
		{"few", ErrUnacceptableCredential, "Too few iterations"},
		{"many", ErrUnacceptableCredential, "Too many iterations"},
		{"mech", ErrUnsupportedMechanism, "Unknown SCRAM mechanism"},
		{"nosalt", ErrUnacceptableCredential, "empty salt"},
		{"short", ErrUnacceptableCredential, "salted password of 32 bytes"},
		{"dup", ErrDuplicate, "altered twice"},
		{"existing", ErrDuplicate, "altered twice"},
	}
	if len(results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(results), len(want), results)
	}
	for i, w := range want {
		r := results[i]
		if r.User != w.user || !errors.Is(r.Err, w.kind) || (w.kind != nil && !strings.Contains(r.Err.Error(), w.text)) {
			t.Errorf("result %d: got %q %v, want %q %v %q", i, r.User, r.Err, w.user, w.kind, w.text)
		}
	}
	if _, ok := s.Lookup("existing", ScramSHA256); !ok {
		t.Error("a duplicate-refused user's deletion was applied")
	}
	if _, ok := s.Lookup("new", ScramSHA512); !ok {
		t.Error("the valid upsertion was not applied")
	}
	del := s.Alter([]Deletion{{User: "existing", Mechanism: 1}}, nil)
	if len(del) != 1 || del[0].Err != nil {
		t.Fatalf("delete: %+v", del)
	}
	if got := s.Users(); strings.Join(got, ",") != "new,twice" {
		t.Fatalf("users after deleting the last credential: %v", got)
	}
}

func TestDescribe(t *testing.T) {
	s, _ := newStore(t)
	putUser(t, s, "bob", "pw")
	putUser(t, s, "alice", "pw", ScramSHA512)
	all := s.Describe(nil)
	if len(all) != 2 || all[0].User != "alice" || all[1].User != "bob" || len(all[1].Credentials) != 2 ||
		all[1].Credentials[0] != (CredentialInfo{ScramSHA256, 4096}) || all[0].Credentials[0].Mechanism != ScramSHA512 {
		t.Fatalf("describe all: %+v", all)
	}
	named := s.Describe([]string{"bob", "carol", "alice", "alice"})
	if len(named) != 3 || named[0].Err != nil || !errors.Is(named[1].Err, ErrNotFound) || !errors.Is(named[2].Err, ErrDuplicate) ||
		named[1].Err.Error() != "Attempt to describe a user credential that does not exist: carol" ||
		named[2].Err.Error() != "Cannot describe SCRAM credentials for the same user twice in a single request: alice" {
		t.Fatalf("describe named: %+v", named)
	}
}

func TestParseUsers(t *testing.T) {
	users, err := ParseUsers([]byte(`
users:
  - name: alice
    password: alice-secret
    mechanisms: [SCRAM-SHA-512]
  - name: bob
    password: bob-secret
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 2 || users[0].Mechanisms[0] != ScramSHA512 || len(users[0].Mechanisms) != 1 || len(users[1].Mechanisms) != 2 {
		t.Fatalf("%+v", users)
	}
	for name, content := range map[string]string{
		"unknown key":   "users:\n  - name: a\n    password: b\n    passwd: c\n",
		"no name":       "users:\n  - password: b\n",
		"no password":   "users:\n  - name: a\n",
		"twice":         "users:\n  - {name: a, password: b}\n  - {name: a, password: c}\n",
		"PLAIN":         "users:\n  - {name: a, password: b, mechanisms: [PLAIN]}\n",
		"GSSAPI":        "users:\n  - {name: a, password: b, mechanisms: [GSSAPI]}\n",
		"top-level key": "user:\n  - {name: a, password: b}\n",
	} {
		if _, err := ParseUsers([]byte(content)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if users, err := ParseUsers(nil); err != nil || len(users) != 0 {
		t.Errorf("empty file: %v %v", users, err)
	}
}

func TestXdgNonceIsUsed(t *testing.T) {
	// Two conversations for the same client-first message answer with
	// different server nonces (xdg-go's crypto/rand generator).
	s, _ := newStore(t)
	putUser(t, s, "alice", "pw")
	answers := map[string]bool{}
	for range 2 {
		conv, _ := NewConversation(ScramSHA256, s)
		answer, _, err := conv.Step([]byte("n,,n=alice,r=clientnonce"))
		if err != nil {
			t.Fatal(err)
		}
		answers[string(answer)] = true
	}
	if len(answers) != 2 {
		t.Fatal("the server nonce repeats")
	}
	_ = scram.SHA256
}
