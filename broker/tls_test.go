package broker

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/selfsigned"
)

// testPKI is a throw-away CA with a server certificate for 127.0.0.1 and
// a client certificate for alice, written as PEM files.
type testPKI struct {
	ca           *selfsigned.CA
	server       selfsigned.Files
	alice        *selfsigned.Leaf
	aliceFiles   selfsigned.Files
	serverLeaf   *selfsigned.Leaf
	clientRoots  *x509.CertPool
	aliceKeyPair tls.Certificate
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, err := selfsigned.NewCA("exactly test CA")
	if err != nil {
		t.Fatal(err)
	}
	serverLeaf, err := ca.Sign("broker", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.WriteFiles(dir, "server", serverLeaf)
	if err != nil {
		t.Fatal(err)
	}
	alice, err := ca.Sign("alice")
	if err != nil {
		t.Fatal(err)
	}
	aliceFiles, err := ca.WriteFiles(dir, "alice", alice)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	keyPair, err := tls.X509KeyPair(alice.CertPEM, alice.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{ca: ca, server: server, serverLeaf: serverLeaf, alice: alice, aliceFiles: aliceFiles,
		clientRoots: roots, aliceKeyPair: keyPair}
}

// sslProperties are a PLAINTEXT and an SSL listener with the PKI's
// server keystore, plus extra.
func (p *testPKI) sslProperties(extra map[string]string) map[string]string {
	properties := map[string]string{
		"listeners":             "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"ssl.keystore.location": p.server.Keystore,
	}
	for k, v := range extra {
		properties[k] = v
	}
	return properties
}

// clientTLS is a client configuration trusting the test CA, presenting
// alice's certificate when withCert.
func (p *testPKI) clientTLS(withCert bool) *tls.Config {
	config := &tls.Config{RootCAs: p.clientRoots, MinVersion: tls.VersionTLS12}
	if withCert {
		config.Certificates = []tls.Certificate{p.aliceKeyPair}
	}
	return config
}

// tlsRoundTrip dials addr with config, sends ApiVersions and reads the
// answer; it returns the first error (handshake, write or read).
func tlsRoundTrip(t *testing.T, addr string, config *tls.Config) error {
	t.Helper()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", addr, config)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := &rawConnection{t: t, conn: conn}
	r.request(kmsg.NewPtrApiVersionsRequest(), 3)
	reader := make([]byte, 4)
	if _, err := conn.Read(reader); err != nil {
		return err
	}
	return nil
}

// principals returns the principal of every open connection, by listener.
func principals(b *Broker) map[string][]string {
	out := map[string][]string{}
	b.connsMu.Lock()
	defer b.connsMu.Unlock()
	for c := range b.conns {
		out[c.listener.name] = append(out[c.listener.name], c.principal())
	}
	return out
}

// Over SSL a franz-go client produces transactionally and consumes
// read_committed; the fetched records were copied through user space
// (TLS), not sent with sendfile.
func TestSSLProduceConsumeTransactions(t *testing.T) {
	pki := newTestPKI(t)
	b := startTestBroker(t, t.TempDir(), pki.sslProperties(nil))
	addr := b.ListenerAddr("SSL")
	ctx := testContext(t, 60*time.Second)
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(pki.clientTLS(false)),
		kgo.TransactionalID("ssl-txn"), kgo.DefaultProduceTopic("secure"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	const records = 200
	for txn := range 2 {
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range records / 2 {
			value := fmt.Sprintf("record-%d-%d", txn, i)
			if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
				t.Fatalf("produce over SSL: %v", err)
			}
		}
		commit := kgo.TryCommit
		if err := producer.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("commit over SSL: %v", err)
		}
	}
	sentBefore, copiedBefore := sendfileBytes.Load(), copiedRegionBytes.Load()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(pki.clientTLS(false)),
		kgo.ConsumeTopics("secure"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumerGroup("ssl-group"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for len(seen) < records && ctx.Err() == nil {
		fetches := consumer.PollFetches(ctx)
		fetches.EachError(func(topic string, partition int32, err error) {
			t.Fatalf("fetch %s-%d over SSL: %v", topic, partition, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Fatalf("record %s twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
	if len(seen) != records {
		t.Fatalf("consumed %d of %d records over SSL", len(seen), records)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit offsets over SSL: %v", err)
	}
	if sent := sendfileBytes.Load() - sentBefore; sent != 0 {
		t.Fatalf("%d bytes went out with sendfile over TLS", sent)
	}
	if copied := copiedRegionBytes.Load() - copiedBefore; copied == 0 {
		t.Fatal("no region bytes were copied: the SSL fetch did not take the copy path")
	}
	if got := principals(b)["SSL"]; len(got) == 0 || got[0] != anonymousPrincipal {
		t.Fatalf("SSL connections without a client certificate: principals %v, want %s", got, anonymousPrincipal)
	}
}

// A client that does not trust the broker's CA fails the handshake, and
// a franz-go client never gets an answer; the plaintext listener still
// serves.
func TestSSLClientWithoutCAFails(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	b := startTestBroker(t, t.TempDir(), pki.sslProperties(nil))
	err := tlsRoundTrip(t, b.ListenerAddr("SSL"), &tls.Config{MinVersion: tls.VersionTLS12})
	var unknown x509.UnknownAuthorityError
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("handshake without the CA: %v (%T), want a certificate error like %T", err, err, unknown)
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SSL")), kgo.DialTLSConfig(&tls.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := client.Ping(ctx); err == nil {
		t.Fatal("franz-go without the CA reached the SSL listener")
	}
	if err := tlsRoundTrip(t, b.ListenerAddr("SSL"), pki.clientTLS(false)); err != nil {
		t.Fatalf("client with the CA: %v", err)
	}
	expectWorking(t, b)
}

// ssl.client.auth=required refuses a client without a certificate; with
// alice's certificate the connection's principal is User:CN=alice, and
// franz-go produces with it. A per-listener override
// (listener.name.<name>.ssl.client.auth) leaves the other SSL listener
// open to clients without certificates.
func TestSSLClientAuthRequired(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	b := startTestBroker(t, t.TempDir(), pki.sslProperties(map[string]string{
		"listeners":                                  "SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
		"listener.security.protocol.map":             "SSL:SSL,MTLS:SSL",
		"listener.name.mtls.ssl.client.auth":         "required",
		"listener.name.mtls.ssl.truststore.location": pki.server.CA,
	}))
	mtls := b.ListenerAddr("MTLS")
	if err := tlsRoundTrip(t, mtls, pki.clientTLS(false)); err == nil {
		t.Fatal("ssl.client.auth=required served a client without a certificate")
	}
	if err := tlsRoundTrip(t, b.ListenerAddr("SSL"), pki.clientTLS(false)); err != nil {
		t.Fatalf("SSL listener without the override refused a client without a certificate: %v", err)
	}
	ctx := testContext(t, 30*time.Second)
	client, err := kgo.NewClient(kgo.SeedBrokers(mtls), kgo.DialTLSConfig(pki.clientTLS(true)),
		kgo.DefaultProduceTopic("mtls"), kgo.AllowAutoTopicCreation(), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce with a client certificate: %v", err)
	}
	got := principals(b)["MTLS"]
	if len(got) == 0 {
		t.Fatal("no MTLS connection open")
	}
	for _, principal := range got {
		if principal != "User:CN=alice" {
			t.Fatalf("mTLS principals %v, want User:CN=alice", got)
		}
	}
}

// ssl.client.auth=requested serves clients without a certificate
// (anonymous) and verifies one that is given.
func TestSSLClientAuthRequested(t *testing.T) {
	pki := newTestPKI(t)
	b := startTestBroker(t, t.TempDir(), pki.sslProperties(map[string]string{
		"ssl.client.auth": "requested", "ssl.truststore.location": pki.server.CA,
	}))
	addr := b.ListenerAddr("SSL")
	if err := tlsRoundTrip(t, addr, pki.clientTLS(false)); err != nil {
		t.Fatalf("requested: client without a certificate: %v", err)
	}
	other, err := selfsigned.NewCA("someone else")
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := other.Sign("mallory")
	if err != nil {
		t.Fatal(err)
	}
	untrusted, err := tls.X509KeyPair(mallory.CertPEM, mallory.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	config := pki.clientTLS(false)
	// GetClientCertificate, not Certificates: crypto/tls would not offer a
	// certificate outside the CAs the server asks for.
	config.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &untrusted, nil }
	if err := tlsRoundTrip(t, addr, config); err == nil {
		t.Fatal("requested: a certificate from an unknown CA was accepted")
	}
}

// A client that connects to a TLS listener and never handshakes is
// disconnected after tlsHandshakeTimeout, and does not hold up other
// clients (the handshake is not in the accept loop).
func TestSSLHandshakeDeadline(t *testing.T) {
	saved := tlsHandshakeTimeout
	tlsHandshakeTimeout = 300 * time.Millisecond
	t.Cleanup(func() { tlsHandshakeTimeout = saved })
	pki := newTestPKI(t)
	b := startTestBroker(t, t.TempDir(), pki.sslProperties(nil))
	silent := dialRawAt(t, b.ListenerAddr("SSL"))
	if err := tlsRoundTrip(t, b.ListenerAddr("SSL"), pki.clientTLS(false)); err != nil {
		t.Fatalf("a second client while one is silent: %v", err)
	}
	start := time.Now()
	silent.expectClosed()
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("silent client closed after %v", waited)
	}
}

// The keystore and truststore may be given inline, even on one line; an
// inline key is sensitive in DescribeConfigs.
func TestSSLInlinePEM(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	oneLine := func(pem []byte) string { return strings.ReplaceAll(string(pem), "\n", " ") }
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"listeners":                      "SSL://127.0.0.1:0",
		"ssl.keystore.certificate.chain": oneLine(pki.serverLeaf.CertPEM),
		"ssl.keystore.key":               oneLine(pki.serverLeaf.KeyPEM),
		"ssl.client.auth":                "required",
		"ssl.truststore.certificates":    string(pki.ca.CertPEM),
	})
	if err := tlsRoundTrip(t, b.ListenerAddr("SSL"), pki.clientTLS(true)); err != nil {
		t.Fatalf("inline keystore: %v", err)
	}
	for _, entry := range b.describeBrokerConfigs(func(name string) bool { return name == "ssl.keystore.key" }, true, false) {
		if !entry.IsSensitive || entry.Value != nil {
			t.Fatalf("ssl.keystore.key described as %+v", entry)
		}
		for _, s := range entry.ConfigSynonyms {
			if s.Value != nil {
				t.Fatalf("ssl.keystore.key synonym %s carries its value", s.Name)
			}
		}
	}
}

// Bad TLS settings are start errors naming the problem.
func TestSSLStartErrors(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	garbage := t.TempDir() + "/garbage.pem"
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		properties map[string]string
		want       string
	}{
		{"no keystore", map[string]string{"listeners": "SSL://127.0.0.1:0"}, "needs ssl.keystore.location"},
		{"missing file", map[string]string{"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": "/nonexistent/k.pem"}, "no such file"},
		{"not PEM", map[string]string{"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": garbage}, "keystore " + garbage},
		{"PKCS12", map[string]string{"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PKCS12"}, "only PEM"},
		{"both", map[string]string{"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": pki.server.Keystore,
			"ssl.keystore.key": "x"}, "not both"},
		{"required without truststore", map[string]string{"listeners": "SASL_SSL://127.0.0.1:0",
			"ssl.keystore.location": pki.server.Keystore, "ssl.client.auth": "required"}, "needs a truststore"},
		{"empty truststore", map[string]string{"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": pki.server.Keystore,
			"ssl.client.auth": "required", "ssl.truststore.location": garbage}, "no PEM certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Start(context.Background(), Config{DataDir: t.TempDir(), Properties: tc.properties})
			if err == nil {
				b.Close()
				t.Fatalf("started; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// distinguishedName writes the subject as Java's X500Principal.getName()
// does: most specific RDN first, RFC 2253 escaping.
func TestDistinguishedName(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject: pkix.Name{CommonName: "alice, jr", Organization: []string{"Example+Co"},
			OrganizationalUnit: []string{"eng"}, Country: []string{"US"}, SerialNumber: "42"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	// Go encodes C, O, OU, CN, SERIALNUMBER in that order; Java names
	// SERIALNUMBER by its OID with the DER value (PrintableString "42").
	want := `2.5.4.5=#13023432,CN=alice\, jr,OU=eng,O=Example\+Co,C=US`
	if got := distinguishedName(cert); got != want {
		t.Fatalf("distinguishedName = %s, want %s", got, want)
	}
}

// Records larger than the copy buffer (several buffers per region, and
// several regions per response) arrive intact over SSL.
func TestSSLFetchLargeRecords(t *testing.T) {
	pki := newTestPKI(t)
	b := startTestBroker(t, t.TempDir(), pki.sslProperties(map[string]string{"message.max.bytes": "2097152"}))
	ctx := testContext(t, 30*time.Second)
	copiedBefore := copiedRegionBytes.Load() // the client consumes from its start
	client, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SSL")), kgo.DialTLSConfig(pki.clientTLS(false)),
		kgo.DefaultProduceTopic("large"), kgo.AllowAutoTopicCreation(), kgo.ProducerBatchMaxBytes(2<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.FetchMaxPartitionBytes(8<<20),
		kgo.ConsumeTopics("large"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var want [][]byte
	for i := range 6 {
		value := make([]byte, 300<<10+i*777)
		rand.Read(value)
		want = append(want, value)
		if err := client.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	var got [][]byte
	for len(got) < len(want) && ctx.Err() == nil {
		fetches := client.PollFetches(ctx)
		fetches.EachError(func(topic string, partition int32, err error) { t.Fatalf("fetch: %v", err) })
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, r.Value) })
	}
	if len(got) != len(want) {
		t.Fatalf("consumed %d of %d records", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d: %d bytes differ from the %d produced", i, len(got[i]), len(want[i]))
		}
	}
	if copied := copiedRegionBytes.Load() - copiedBefore; copied < int64(len(want))*300<<10 {
		t.Fatalf("copied %d region bytes, less than the records", copied)
	}
}

// Close with TLS clients connected, one in a fetch long poll, ends
// promptly: the readers stop (half-close under TLS) and the pending
// answers go out, without waiting out the 10 s grace period.
func TestSSLGracefulClose(t *testing.T) {
	pki := newTestPKI(t)
	b, err := Start(context.Background(), Config{NodeID: 1, DataDir: t.TempDir(), Properties: pki.sslProperties(nil)})
	if err != nil {
		t.Fatal(err)
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SSL")), kgo.DialTLSConfig(pki.clientTLS(false)),
		kgo.ConsumeTopics("idle"), kgo.AllowAutoTopicCreation(), kgo.FetchMaxWait(8*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := testContext(t, 20*time.Second)
	if err := client.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	go client.PollFetches(ctx)
	for ctx.Err() == nil {
		if len(principals(b)["SSL"]) >= 2 { // the ping's connection and the fetch's
			break
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, bounded by ctx
	}
	start := time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %v with TLS clients connected", took)
	}
}
