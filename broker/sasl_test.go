package broker

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha512"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/exactly-eos/exactly/broker/auth"
)

// The SASL end-to-end tests: franz-go clients against a broker with a
// PLAINTEXT and a SASL_PLAINTEXT listener on 127.0.0.1. sasl_raw_test.go
// speaks the protocol by hand where a client library would hide the
// broker's behaviour (the gate, expiry, v0 framing).

// saslTestUsers is the users file of the SASL tests.
const saslTestUsers = `
users:
  - name: alice
    password: alice-secret
  - name: bob
    password: bob-secret
    mechanisms: [SCRAM-SHA-256]
`

// writeUsersFile writes a users file into dir and returns its path.
func writeUsersFile(t *testing.T, dir, content string) string {
	t.Helper()
	path := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startSASLBroker starts a broker over dataDir with a PLAINTEXT and a
// SASL_PLAINTEXT listener, the given extra settings and users file.
func startSASLBroker(t *testing.T, dataDir, usersFile string, properties map[string]string) *Broker {
	t.Helper()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"}
	for k, v := range properties {
		props[k] = v
	}
	b, err := Start(context.Background(), Config{NodeID: 1, DataDir: dataDir, Properties: props, UsersFile: usersFile, Logger: testLogger()})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// testLogger logs warnings (everything with BROKER_TEST_LOG set) to stderr.
func testLogger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("BROKER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// saslAddr is the broker's SASL_PLAINTEXT listener.
func saslAddr(b *Broker) string { return b.ListenerAddr("SASL_PLAINTEXT") }

// saslClient is a franz-go client of the SASL listener authenticating
// with m.
func saslClient(t *testing.T, b *Broker, m sasl.Mechanism, options ...kgo.Opt) *kgo.Client {
	t.Helper()
	options = append([]kgo.Opt{kgo.SeedBrokers(saslAddr(b)), kgo.SASL(m), kgo.RetryTimeout(5 * time.Second),
		kgo.AllowAutoTopicCreation()}, options...)
	client, err := kgo.NewClient(options...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

func scram512(user, password string) sasl.Mechanism {
	return scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
}

func scram256(user, password string) sasl.Mechanism {
	return scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
}

func plainMechanism(user, password string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: password}.AsMechanism()
}

// produceAndConsume writes count records to topic through client and
// reads them back with a second client of the same mechanism; extra
// options go to both (another listener, TLS).
func produceAndConsume(t *testing.T, b *Broker, m sasl.Mechanism, topic string, count int, extra ...kgo.Opt) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	producer := saslClient(t, b, m, append([]kgo.Opt{kgo.DefaultProduceTopic(topic)}, extra...)...)
	for i := range count {
		if err := producer.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", topic, i))).FirstErr(); err != nil {
			t.Fatalf("produce %d to %s: %v", i, topic, err)
		}
	}
	consumer := saslClient(t, b, m, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, extra...)...)
	seen := 0
	for seen < count {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: %d of %d records before %v", topic, seen, count, err)
		}
		fetches.EachError(func(topic string, partition int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, partition, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("%s-%d", topic, seen); string(r.Value) != want {
				t.Fatalf("record %d of %s: %q, want %q", seen, topic, r.Value, want)
			}
			seen++
		})
	}
}

func TestSASLProduceConsumeEachMechanism(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startSASLBroker(t, filepath.Join(dir, "data"), writeUsersFile(t, dir, saslTestUsers), nil)
	for _, tc := range []struct {
		topic string
		m     sasl.Mechanism
	}{
		{"scram-512", scram512("alice", "alice-secret")},
		{"scram-256", scram256("alice", "alice-secret")},
		{"scram-256-bob", scram256("bob", "bob-secret")},
		{"plain", plainMechanism("alice", "alice-secret")},
		{"plain-bob", plainMechanism("bob", "bob-secret")},
	} {
		t.Run(tc.topic, func(t *testing.T) { produceAndConsume(t, b, tc.m, tc.topic, 50) })
	}
	if got := b.saslStats.authentications.Load(); got < 10 {
		t.Fatalf("%d SASL authentications counted for ten clients", got)
	}
}

// TestSASLWrongPasswordIsRefused: a wrong password (or user, or a
// mechanism the user has no credential for) gets
// SASL_AUTHENTICATION_FAILED and writes nothing.
func TestSASLWrongPasswordIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startSASLBroker(t, filepath.Join(dir, "data"), writeUsersFile(t, dir, saslTestUsers), nil)
	for name, m := range map[string]sasl.Mechanism{
		"scram-512 wrong password": scram512("alice", "alice-secret!"),
		"scram-256 unknown user":   scram256("mallory", "alice-secret"),
		"scram-512 bob has no 512": scram512("bob", "bob-secret"),
		"plain wrong password":     plainMechanism("alice", "nope"),
	} {
		t.Run(name, func(t *testing.T) { expectAuthenticationFailed(t, b, m, "refused") })
	}
	if got := b.saslStats.failures.Load(); got < 4 {
		t.Fatalf("%d failures counted", got)
	}
	if topic := b.topicByName("refused"); topic != nil {
		t.Fatal("a client that failed to authenticate created its topic")
	}
}

// expectAuthenticationFailed asks Metadata for topic (auto-creating it,
// were it served) with mechanism m and expects SASL_AUTHENTICATION_FAILED.
func expectAuthenticationFailed(t *testing.T, b *Broker, m sasl.Mechanism, topic string) {
	t.Helper()
	client := saslClient(t, b, m)
	req := kmsg.NewPtrMetadataRequest()
	requested := kmsg.NewMetadataRequestTopic()
	requested.Topic = kmsg.StringPtr(topic)
	req.Topics, req.AllowAutoTopicCreation = append(req.Topics, requested), true
	if _, err := req.RequestWith(testContext(t, 15*time.Second), client); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("metadata with bad credentials: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// upsertion is an AlterUserScramCredentials upsertion of a SCRAM-SHA-512
// password, salted here as the admin client does.
func upsertion(t *testing.T, user, password string) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	t.Helper()
	salt := []byte("salt-of-" + user)
	salted, err := pbkdf2.Key(sha512.New, password, salt, 8192, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, auth.ScramSHA512.ScramType(), 8192, salt, salted
	return u
}

// describeUsers asks DescribeUserScramCredentials for users (none: all).
func describeUsers(t *testing.T, client *kgo.Client, users ...string) map[string]string {
	t.Helper()
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range users {
		name := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		name.Name = u
		req.Users = append(req.Users, name)
	}
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			out[r.User] = kerr.ErrorForCode(r.ErrorCode).Error()
			continue
		}
		for _, info := range r.CredentialInfos {
			m, _ := auth.ScramFromType(info.Mechanism)
			out[r.User] += fmt.Sprintf("%s/%d ", m, info.Iterations)
		}
	}
	return out
}

// TestScramCredentialsManagedAndDurable: credentials made with
// AlterUserScramCredentials log in, DescribeUserScramCredentials lists
// them, they survive a restart, and a deleted one no longer logs in.
func TestScramCredentialsManagedAndDurable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	b := startSASLBroker(t, dataDir, writeUsersFile(t, dir, saslTestUsers), nil)
	admin := saslClient(t, b, scram512("alice", "alice-secret"))

	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	alter.Upsertions = append(alter.Upsertions, upsertion(t, "carol", "carol-secret"))
	resp, err := alter.RequestWith(testContext(t, 10*time.Second), admin)
	if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("AlterUserScramCredentials: %v %+v", err, resp)
	}
	produceAndConsume(t, b, scram512("carol", "carol-secret"), "carol-before", 5)
	produceAndConsume(t, b, plainMechanism("carol", "carol-secret"), "carol-plain", 5)
	got := describeUsers(t, admin)
	want := map[string]string{
		"alice": "SCRAM-SHA-256/4096 SCRAM-SHA-512/4096 ",
		"bob":   "SCRAM-SHA-256/4096 ",
		"carol": "SCRAM-SHA-512/8192 ",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("describe all: %v, want %v", got, want)
	}
	if got := describeUsers(t, admin, "carol", "dave"); got["dave"] != kerr.ResourceNotFound.Error() || got["carol"] != want["carol"] {
		t.Fatalf("describe carol, dave: %v", got)
	}

	// Restart without the users file: the store alone has every user.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	restarted := startSASLBroker(t, dataDir, "", nil)
	produceAndConsume(t, restarted, scram512("carol", "carol-secret"), "carol-after", 5)
	produceAndConsume(t, restarted, scram256("bob", "bob-secret"), "bob-after", 5)
	admin = saslClient(t, restarted, scram512("alice", "alice-secret"))
	if got := describeUsers(t, admin); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("describe all after restart: %v, want %v", got, want)
	}

	deletion := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	deletion.Name, deletion.Mechanism = "carol", auth.ScramSHA512.ScramType()
	alter = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	alter.Deletions = append(alter.Deletions, deletion)
	if resp, err := alter.RequestWith(testContext(t, 10*time.Second), admin); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("delete carol: %v %+v", err, resp)
	}
	expectAuthenticationFailed(t, restarted, scram512("carol", "carol-secret"), "carol-gone")
	if restarted.topicByName("carol-gone") != nil {
		t.Fatal("a deleted user's request was served")
	}
}

// TestAlterUserScramCredentialsErrors: Kafka's per-user errors reach the
// client with Kafka's codes.
func TestAlterUserScramCredentialsErrors(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, t.TempDir(), "", nil)
	client := newTestClient(t, b)
	few := upsertion(t, "few", "pw")
	few.Iterations = 4095
	many := upsertion(t, "many", "pw")
	many.Iterations = 16385
	unknown := upsertion(t, "mech", "pw")
	unknown.Mechanism = 0
	missing := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	missing.Name, missing.Mechanism = "nobody", 1
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = append(req.Deletions, missing)
	req.Upsertions = append(req.Upsertions, upsertion(t, "", "pw"), few, many, unknown, upsertion(t, "twice", "a"), upsertion(t, "twice", "b"))
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int16{}
	for _, r := range resp.Results {
		got[r.User] = r.ErrorCode
	}
	want := map[string]int16{
		"nobody": kerr.ResourceNotFound.Code, "": kerr.UnacceptableCredential.Code, "few": kerr.UnacceptableCredential.Code,
		"many": kerr.UnacceptableCredential.Code, "mech": kerr.UnsupportedSaslMechanism.Code, "twice": kerr.DuplicateResource.Code,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("error codes %v, want %v", got, want)
	}
	if users := b.credentials.Users(); len(users) != 0 {
		t.Fatalf("a failed request stored users %v", users)
	}
}

// TestSASLReauthenticationKeepsClientsWorking: with a short
// connections.max.reauth.ms, franz-go re-authenticates by itself (it reads
// session_lifetime_ms) and keeps producing across several session
// lifetimes without an error.
func TestSASLReauthenticationKeepsClientsWorking(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const lifetime = 2 * time.Second
	b := startSASLBroker(t, filepath.Join(dir, "data"), writeUsersFile(t, dir, saslTestUsers),
		map[string]string{"connections.max.reauth.ms": fmt.Sprint(lifetime.Milliseconds())})
	producer := saslClient(t, b, scram512("alice", "alice-secret"), kgo.DefaultProduceTopic("reauth"))
	ctx := testContext(t, 30*time.Second)
	deadline := time.Now().Add(4 * lifetime)
	produced := 0
	pace := time.NewTicker(5 * time.Millisecond) // a steady trickle, not a CPU hog
	defer pace.Stop()
	for time.Now().Before(deadline) {
		<-pace.C
		if err := producer.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(produced))).FirstErr(); err != nil {
			t.Fatalf("produce %d after %v: %v", produced, time.Until(deadline), err)
		}
		produced++
	}
	if got := b.saslStats.reauthentications.Load(); got < 2 {
		t.Fatalf("%d re-authentications over four session lifetimes (%d records)", got, produced)
	}
	if got := b.saslStats.failures.Load(); got != 0 {
		t.Fatalf("%d SASL failures", got)
	}
	t.Logf("%d records, %d authentications, %d re-authentications", produced,
		b.saslStats.authentications.Load(), b.saslStats.reauthentications.Load())
}

// TestSASLSSLScram512TransactionsAndGroups: SCRAM-SHA-512 over a SASL_SSL
// listener: plain produce/consume, a transaction read by a consumer group
// with read_committed, and a wrong password refused.
func TestSASLSSLScram512TransactionsAndGroups(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := newTestPKI(t)
	b := startSASLBroker(t, filepath.Join(dir, "data"), writeUsersFile(t, dir, saslTestUsers), map[string]string{
		"listeners":             "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"ssl.keystore.location": pki.server.Keystore,
	})
	overTLS := []kgo.Opt{kgo.SeedBrokers(b.ListenerAddr("SASL_SSL")), kgo.DialTLSConfig(pki.clientTLS(false))}
	alice := scram512("alice", "alice-secret")
	produceAndConsume(t, b, alice, "sasl-ssl", 50, overTLS...)

	ctx := testContext(t, 60*time.Second)
	txn := saslClient(t, b, alice, append([]kgo.Opt{kgo.TransactionalID("sasl-ssl-txn"), kgo.DefaultProduceTopic("sasl-ssl-txn")}, overTLS...)...)
	for round, commit := range []bool{false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := txn.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("round-%d-%d", round, i))).FirstErr(); err != nil {
				t.Fatalf("transactional produce: %v", err)
			}
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	group := saslClient(t, b, alice, append([]kgo.Opt{kgo.ConsumerGroup("sasl-ssl-group"), kgo.ConsumeTopics("sasl-ssl-txn"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, overTLS...)...)
	var values []string
	for len(values) < 10 {
		fetches := group.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group consumed %v before %v", values, ctx.Err())
		}
		fetches.EachError(func(topic string, partition int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, partition, err) })
		fetches.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	for i, v := range values {
		if v != fmt.Sprintf("round-1-%d", i) {
			t.Fatalf("read_committed group read %v: want only the committed round-1 records", values)
		}
	}
	if err := group.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("group commit: %v", err)
	}

	wrong := saslClient(t, b, scram512("alice", "nope"), overTLS...)
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(testContext(t, 15*time.Second), wrong); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password over SASL_SSL: %v", err)
	}
}

// TestSASLStartErrors: a bad users file or an unsupported mechanism stops
// Start with an error that says what is wrong.
func TestSASLStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		users      string
		properties map[string]string
		want       string
	}{
		"GSSAPI":           {"", map[string]string{"sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI is not supported"},
		"OAUTHBEARER":      {"", map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-512,OAUTHBEARER"}, "OAUTHBEARER is not supported"},
		"no mechanism":     {"", map[string]string{"sasl.enabled.mechanisms": ""}, "no SASL mechanism"},
		"negative reauth":  {"", map[string]string{"connections.max.reauth.ms": "-1"}, "connections.max.reauth.ms"},
		"users file typo":  {"users:\n  - name: a\n    pasword: b\n", nil, "pasword"},
		"missing password": {"users:\n  - name: a\n", nil, "no password"},
	} {
		usersFile := ""
		if tc.users != "" {
			usersFile = writeUsersFile(t, t.TempDir(), tc.users)
		}
		props := map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}
		for k, v := range tc.properties {
			props[k] = v
		}
		b, err := Start(context.Background(), Config{NodeID: 1, DataDir: filepath.Join(dir, name), Properties: props, UsersFile: usersFile, Logger: testLogger()})
		if err == nil {
			b.Close()
			t.Errorf("%s: started", name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not say %q", name, err, tc.want)
		}
	}
}
