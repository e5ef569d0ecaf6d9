package broker

// The security end-to-end test: one broker with a SASL_SSL listener
// (SCRAM-SHA-512 over TLS with a throw-away CA) and the ACL authorizer,
// used by franz-go clients as three users — a super user who creates
// topics and ACLs, alice who may write and read topics with the prefix
// "payments-" and own the transactional id "alice-txn", and bob who may
// only read "orders". It restarts the broker without the users file to
// show that SCRAM credentials and ACLs are durable.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/exactly-eos/exactly/internal/selfsigned"
)

type secureBroker struct {
	dir, usersFile string
	properties     map[string]string
	tls            *tls.Config
	broker         *Broker
}

func newSecureBroker(t *testing.T) *secureBroker {
	t.Helper()
	dir := t.TempDir()
	ca, err := selfsigned.NewCA("exactly test CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Sign("broker", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	files, err := ca.WriteFiles(t.TempDir(), "broker", leaf)
	if err != nil {
		t.Fatal(err)
	}
	usersFile := filepath.Join(t.TempDir(), "users.yaml")
	users := "users:\n" +
		"  - {name: admin, password: admin-secret, mechanisms: [SCRAM-SHA-512]}\n" +
		"  - {name: alice, password: alice-secret, mechanisms: [SCRAM-SHA-512]}\n" +
		"  - {name: bob, password: bob-secret, mechanisms: [SCRAM-SHA-512]}\n"
	if err := os.WriteFile(usersFile, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	return &secureBroker{dir: dir, usersFile: usersFile, tls: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"},
		properties: map[string]string{
			"listeners":                            "SASL_SSL://127.0.0.1:0",
			"ssl.keystore.type":                    "PEM",
			"ssl.keystore.location":                files.Keystore,
			"sasl.enabled.mechanisms":              "SCRAM-SHA-512",
			"authorizer.class.name":                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users":                          "User:admin",
			"offsets.topic.num.partitions":         "1",
			"transaction.state.log.num.partitions": "1",
		}}
}

// start starts the broker, reading the users file when withUsers.
func (s *secureBroker) start(t *testing.T, withUsers bool) {
	t.Helper()
	cfg := Config{NodeID: 1, DataDir: s.dir, Properties: s.properties}
	if withUsers {
		cfg.UsersFile = s.usersFile
	}
	b, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	s.broker = b
	t.Cleanup(func() { s.stop(t) })
}

func (s *secureBroker) stop(t *testing.T) {
	if s.broker != nil {
		if err := s.broker.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
		s.broker = nil
	}
}

// client is a SCRAM-SHA-512 client over TLS as user with password.
func (s *secureBroker) client(t *testing.T, user, password string, options ...kgo.Opt) *kgo.Client {
	t.Helper()
	options = append([]kgo.Opt{
		kgo.SeedBrokers(s.broker.ListenerAddr("SASL_SSL")),
		kgo.DialTLSConfig(s.tls.Clone()),
		kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()),
		kgo.RetryTimeout(5 * time.Second),
	}, options...)
	client, err := kgo.NewClient(options...)
	if err != nil {
		t.Fatalf("client %s: %v", user, err)
	}
	t.Cleanup(client.Close)
	return client
}

// allow grants principal operation on a resource (super user client).
func allow(t *testing.T, admin *kgo.Client, principal string, resource kmsg.ACLResourceType, name string,
	pattern kmsg.ACLResourcePatternType, operations ...kmsg.ACLOperation) {
	t.Helper()
	request := kmsg.NewPtrCreateACLsRequest()
	for _, operation := range operations {
		creation := kmsg.NewCreateACLsRequestCreation()
		creation.ResourceType, creation.ResourceName, creation.ResourcePatternType = resource, name, pattern
		creation.Principal, creation.Host = principal, "*"
		creation.Operation, creation.PermissionType = operation, kmsg.ACLPermissionTypeAllow
		request.Creations = append(request.Creations, creation)
	}
	response, err := request.RequestWith(testContext(t, 20*time.Second), admin)
	if err != nil {
		t.Fatalf("CreateAcls: %v", err)
	}
	for _, result := range response.Results {
		if err := kerr.ErrorForCode(result.ErrorCode); err != nil {
			t.Fatalf("CreateAcls %s %s: %v", principal, name, err)
		}
	}
}

func TestSecurityEndToEnd(t *testing.T) {
	t.Parallel()
	s := newSecureBroker(t)
	s.start(t, true)
	admin := s.client(t, "admin", "admin-secret")
	for _, topic := range []string{"orders", "payments-in"} {
		createTopic(t, admin, topic, 2, nil)
	}
	allow(t, admin, "User:alice", kmsg.ACLResourceTypeTopic, "payments-", kmsg.ACLResourcePatternTypePrefixed,
		kmsg.ACLOperationWrite, kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	allow(t, admin, "User:alice", kmsg.ACLResourceTypeTransactionalId, "alice-txn", kmsg.ACLResourcePatternTypeLiteral,
		kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe)
	allow(t, admin, "User:alice", kmsg.ACLResourceTypeGroup, "alice-", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationRead)
	allow(t, admin, "User:bob", kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead)

	t.Run("transactions and a group", func(t *testing.T) { checkAliceTransactsAndConsumes(t, s, "alice-group", 0) })
	t.Run("wrong password", func(t *testing.T) { checkWrongPassword(t, s) })
	t.Run("no write on a topic", func(t *testing.T) { checkBobCannotWrite(t, s, admin) })
	t.Run("no write on a transactional id", func(t *testing.T) { checkBobCannotInitTransactions(t, s) })

	// Restart without the users file: the credentials and the ACLs are
	// what the broker stored.
	s.stop(t)
	s.start(t, false)
	admin = s.client(t, "admin", "admin-secret")
	t.Run("after restart: transactions and a group", func(t *testing.T) { checkAliceTransactsAndConsumes(t, s, "alice-group-2", 20) })
	t.Run("after restart: no write on a topic", func(t *testing.T) { checkBobCannotWrite(t, s, admin) })
	t.Run("after restart: wrong password", func(t *testing.T) { checkWrongPassword(t, s) })
}

// checkAliceTransactsAndConsumes: alice commits one transaction of 20
// records and aborts one, then consumes payments-in read_committed in a
// group and commits its offsets; before are records committed earlier.
func checkAliceTransactsAndConsumes(t *testing.T, s *secureBroker, group string, before int) {
	ctx := testContext(t, 60*time.Second)
	producer := s.client(t, "alice", "alice-secret", kgo.TransactionalID("alice-txn"), kgo.DefaultProduceTopic("payments-in"))
	for _, end := range []struct {
		try   kgo.TransactionEndTry
		label string
	}{{kgo.TryCommit, "commit"}, {kgo.TryAbort, "abort"}} {
		if err := producer.BeginTransaction(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		for i := range 20 {
			producer.Produce(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", end.label, i)), nil)
		}
		if err := producer.Flush(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
		if err := producer.EndTransaction(ctx, end.try); err != nil {
			t.Fatalf("end transaction: %v", err)
		}
	}
	consumer := s.client(t, "alice", "alice-secret", kgo.ConsumeTopics("payments-in"), kgo.ConsumerGroup(group),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DisableAutoCommit())
	got := 0
	for got < before+20 {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			t.Fatalf("poll after %d records: %v", got, err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if strings.HasPrefix(string(r.Value), "abort") {
				t.Errorf("read an aborted record %q", r.Value)
			}
			got++
		})
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit offsets: %v", err)
	}
	if got != before+20 {
		t.Fatalf("consumed %d committed records, want %d", got, before+20)
	}
}

func checkWrongPassword(t *testing.T, s *secureBroker) {
	client := s.client(t, "alice", "not-her-password")
	err := client.Ping(testContext(t, 20*time.Second))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("ping with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// checkBobCannotWrite: bob's produce to orders is refused with
// TOPIC_AUTHORIZATION_FAILED and the log stays empty.
func checkBobCannotWrite(t *testing.T, s *secureBroker, admin *kgo.Client) {
	ctx := testContext(t, 30*time.Second)
	bob := s.client(t, "bob", "bob-secret", kgo.DefaultProduceTopic("orders"), kgo.DisableIdempotentWrite())
	err := bob.ProduceSync(ctx, kgo.StringRecord("must not land")).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	request := kmsg.NewPtrListOffsetsRequest()
	topic := kmsg.NewListOffsetsRequestTopic()
	topic.Topic = "orders"
	for partition := range int32(2) {
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition, p.Timestamp = partition, -1
		topic.Partitions = append(topic.Partitions, p)
	}
	request.Topics = append(request.Topics, topic)
	response, err := request.RequestWith(ctx, admin)
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	for _, p := range response.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.Offset != 0 {
			t.Fatalf("orders partition %d: end offset %d (error %d): a refused produce was written", p.Partition, p.Offset, p.ErrorCode)
		}
	}
}

// checkBobCannotInitTransactions: InitProducerId for a transactional id
// bob has no Write on answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func checkBobCannotInitTransactions(t *testing.T, s *secureBroker) {
	bob := s.client(t, "bob", "bob-secret")
	request := kmsg.NewPtrInitProducerIDRequest()
	id := "bob-txn"
	request.TransactionalID, request.TransactionTimeoutMillis = &id, 10000
	// franz-go turns the answer's error code into the request's error for
	// InitProducerId; either way the code must be Kafka's.
	response, err := request.RequestWith(testContext(t, 20*time.Second), bob)
	if err == nil {
		err = kerr.ErrorForCode(response.ErrorCode)
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("bob's InitProducerId: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
}
