package broker

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"

	"github.com/exactly-eos/exactly/wire"
)

// The SASL protocol by hand: what a SASL listener serves in each state.

// handshake sends SaslHandshake and returns the answer.
func (r *rawConnection) handshake(mechanism string, version int16) *kmsg.SASLHandshakeResponse {
	r.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Mechanism = mechanism
	r.request(req, version)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	r.response(resp, version)
	return resp
}

// authenticate sends one SaslAuthenticate token and returns the answer.
func (r *rawConnection) authenticate(token []byte, version int16) *kmsg.SASLAuthenticateResponse {
	r.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SASLAuthBytes = token
	r.request(req, version)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	r.response(resp, version)
	return resp
}

// plainLogin runs SaslHandshake v1 + SaslAuthenticate (PLAIN) and returns
// the final answer.
func (r *rawConnection) plainLogin(user, password string, version int16) *kmsg.SASLAuthenticateResponse {
	r.t.Helper()
	if resp := r.handshake("PLAIN", 1); resp.ErrorCode != 0 {
		r.t.Fatalf("SaslHandshake PLAIN: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return r.authenticate([]byte("\x00"+user+"\x00"+password), version)
}

// metadataWorks asks Metadata and fails unless it is answered.
func (r *rawConnection) metadataWorks() {
	r.t.Helper()
	r.request(kmsg.NewPtrMetadataRequest(), 12)
	r.response(kmsg.NewPtrMetadataResponse(), 12)
}

// TestSASLGateRefusesUnauthenticatedRequests: on a SASL listener, before
// authentication, ApiVersions is answered, but Produce or Metadata closes
// the connection, unanswered, and does nothing.
func TestSASLGateRefusesUnauthenticatedRequests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startSASLBroker(t, filepath.Join(dir, "data"), writeUsersFile(t, dir, saslTestUsers), nil)

	r := dialRawAt(t, saslAddr(b))
	r.request(kmsg.NewPtrApiVersionsRequest(), 3)
	versions := kmsg.NewPtrApiVersionsResponse()
	r.response(versions, 3)
	if versions.ErrorCode != 0 || len(versions.ApiKeys) == 0 {
		t.Fatalf("ApiVersions before authentication: %+v", versions)
	}
	r.produceRawNoAnswer("gate-produce", plainBatch(t, "gate", 3))
	r.expectClosed()

	r = dialRawAt(t, saslAddr(b))
	metadata := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("gate-metadata")
	metadata.Topics, metadata.AllowAutoTopicCreation = append(metadata.Topics, topic), true
	r.request(metadata, 12)
	r.expectClosed()

	// Mid-authentication, anything but SaslAuthenticate closes too.
	r = dialRawAt(t, saslAddr(b))
	if resp := r.handshake("SCRAM-SHA-512", 1); resp.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	r.produceRawNoAnswer("gate-produce", plainBatch(t, "gate", 3))
	r.expectClosed()

	for _, name := range []string{"gate-produce", "gate-metadata"} {
		if b.topicByName(name) != nil {
			t.Fatalf("topic %s exists: an unauthenticated request was served", name)
		}
	}
	// An authenticated connection is served.
	r = dialRawAt(t, saslAddr(b))
	if resp := r.plainLogin("alice", "alice-secret", 1); resp.ErrorCode != 0 {
		t.Fatalf("PLAIN login: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	r.metadataWorks()
	if answer := r.produceRaw("gate-after-login", 0, plainBatch(t, "ok", 3), 9); answer.ErrorCode != 0 {
		t.Fatalf("produce after login: %v", kerr.ErrorForCode(answer.ErrorCode))
	}
}

// produceRawNoAnswer sends an acks=all Produce of records and expects no answer.
func (r *rawConnection) produceRawNoAnswer(topic string, records []byte) {
	r.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r.request(req, 9)
}

// TestSASLFailureAnswersThenCloses: a wrong password gets
// SASL_AUTHENTICATION_FAILED with Kafka's message, then the connection
// closes; an unknown mechanism gets UNSUPPORTED_SASL_MECHANISM and the
// enabled list, then closes; SaslAuthenticate without a handshake is
// ILLEGAL_SASL_STATE and closes.
func TestSASLFailureAnswersThenCloses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startSASLBroker(t, filepath.Join(dir, "data"), writeUsersFile(t, dir, saslTestUsers),
		map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN"})

	r := dialRawAt(t, saslAddr(b))
	resp := r.plainLogin("alice", "wrong", 2)
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "Authentication failed: Invalid username or password" {
		t.Fatalf("wrong PLAIN password: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	r.request(kmsg.NewPtrMetadataRequest(), 12)
	r.expectClosed()

	r = dialRawAt(t, saslAddr(b))
	hs := r.handshake("SCRAM-SHA-256", 1) // not enabled here
	if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hs.SupportedMechanisms, ",") != "SCRAM-SHA-512,PLAIN" {
		t.Fatalf("disabled mechanism: %v %v", kerr.ErrorForCode(hs.ErrorCode), hs.SupportedMechanisms)
	}
	r.expectClosed()

	r = dialRawAt(t, saslAddr(b))
	if resp := r.authenticate([]byte("\x00alice\x00alice-secret"), 1); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslAuthenticate first: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	r.expectClosed()

	// A wrong SCRAM proof: Kafka's generic message, then closed.
	r = dialRawAt(t, saslAddr(b))
	resp = r.scramLogin("alice", "wrong", 1)
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512" {
		t.Fatalf("wrong SCRAM password: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	r.expectClosed()
}

// scramLogin runs SaslHandshake v1 and the SCRAM-SHA-512 exchange with
// xdg-go's client; it returns the last answer (an error, or the final one).
func (r *rawConnection) scramLogin(user, password string, version int16) *kmsg.SASLAuthenticateResponse {
	r.t.Helper()
	return r.scramLoginWith(scram.SHA512, "SCRAM-SHA-512", user, password, version)
}

// scramLoginWith is scramLogin with another SCRAM hash.
func (r *rawConnection) scramLoginWith(hash scram.HashGeneratorFcn, mechanism, user, password string, version int16) *kmsg.SASLAuthenticateResponse {
	r.t.Helper()
	if hs := r.handshake(mechanism, 1); hs.ErrorCode != 0 {
		r.t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(hs.ErrorCode))
	}
	client, err := hash.NewClientUnprepped(user, password, "")
	if err != nil {
		r.t.Fatal(err)
	}
	conversation := client.NewConversation()
	first, _ := conversation.Step("")
	resp := r.authenticate([]byte(first), version)
	if resp.ErrorCode != 0 {
		return resp
	}
	final, err := conversation.Step(string(resp.SASLAuthBytes))
	if err != nil {
		r.t.Fatalf("client final: %v", err)
	}
	resp = r.authenticate([]byte(final), version)
	if resp.ErrorCode == 0 {
		if _, err := conversation.Step(string(resp.SASLAuthBytes)); err != nil || !conversation.Valid() {
			r.t.Fatalf("the broker's server signature does not verify: %v", err)
		}
	}
	return resp
}

// TestSASLHandshakeV0BareTokens: after SaslHandshake v0 the SCRAM
// exchange runs as bare size-prefixed tokens, then Kafka requests.
func TestSASLHandshakeV0BareTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startSASLBroker(t, filepath.Join(dir, "data"), writeUsersFile(t, dir, saslTestUsers), nil)
	r := dialRawAt(t, saslAddr(b))
	if hs := r.handshake("SCRAM-SHA-256", 0); hs.ErrorCode != 0 {
		t.Fatalf("SaslHandshake v0: %v", kerr.ErrorForCode(hs.ErrorCode))
	}
	client, _ := scram.SHA256.NewClientUnprepped("alice", "alice-secret", "")
	conversation := client.NewConversation()
	message, _ := conversation.Step("")
	for !conversation.Done() {
		r.write(append(frameOf([]byte(message)), message...))
		frame, err := (&wire.FrameReader{R: r.conn}).Next(nil)
		if err != nil {
			t.Fatalf("bare token answer: %v", err)
		}
		if message, err = conversation.Step(string(frame)); err != nil {
			t.Fatalf("client step: %v", err)
		}
	}
	if !conversation.Valid() {
		t.Fatal("server signature invalid")
	}
	r.metadataWorks()

	// A wrong password in bare tokens: closed without an answer.
	r = dialRawAt(t, saslAddr(b))
	r.handshake("PLAIN", 0)
	token := []byte("\x00alice\x00wrong")
	r.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
	r.expectClosed()
}

// TestSASLSessionExpiry: session_lifetime_ms is connections.max.reauth.ms;
// after it a request other than SaslHandshake closes the connection,
// while a connection that re-authenticates (as the same user) goes on,
// and one that re-authenticates as someone else is refused.
func TestSASLSessionExpiry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const lifetime = 1500 * time.Millisecond
	b := startSASLBroker(t, filepath.Join(dir, "data"), writeUsersFile(t, dir, saslTestUsers),
		map[string]string{"connections.max.reauth.ms": fmt.Sprint(lifetime.Milliseconds())})

	idle, renewing := dialRawAt(t, saslAddr(b)), dialRawAt(t, saslAddr(b))
	impostor, switcher := dialRawAt(t, saslAddr(b)), dialRawAt(t, saslAddr(b))
	logins := map[*rawConnection]func() *kmsg.SASLAuthenticateResponse{
		idle:     func() *kmsg.SASLAuthenticateResponse { return idle.scramLogin("alice", "alice-secret", 1) },
		renewing: func() *kmsg.SASLAuthenticateResponse { return renewing.scramLogin("alice", "alice-secret", 1) },
		impostor: func() *kmsg.SASLAuthenticateResponse {
			return impostor.scramLoginWith(scram.SHA256, "SCRAM-SHA-256", "alice", "alice-secret", 1)
		},
		switcher: func() *kmsg.SASLAuthenticateResponse { return switcher.scramLogin("alice", "alice-secret", 2) },
	}
	for r, login := range logins {
		resp := login()
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != lifetime.Milliseconds() {
			t.Fatalf("login: %v, session lifetime %d ms, want %d", kerr.ErrorForCode(resp.ErrorCode), resp.SessionLifetimeMillis, lifetime.Milliseconds())
		}
		r.metadataWorks()
	}
	// Each session ends lifetime after its login answer at the latest.
	time.Sleep(lifetime + 100*time.Millisecond)

	idle.request(kmsg.NewPtrMetadataRequest(), 12)
	idle.expectClosed()

	if resp := renewing.scramLogin("alice", "alice-secret", 1); resp.ErrorCode != 0 {
		t.Fatalf("re-authentication: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	renewing.metadataWorks()

	resp := impostor.scramLoginWith(scram.SHA256, "SCRAM-SHA-256", "bob", "bob-secret", 1)
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "Cannot change principals during re-authentication from User:alice: User:bob" {
		t.Fatalf("re-authentication as another user: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	impostor.expectClosed()

	resp = switcher.plainLogin("alice", "alice-secret", 2)
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "SASL mechanism 'PLAIN' requested by client is not supported for re-authentication of mechanism 'SCRAM-SHA-512'" {
		t.Fatalf("re-authentication with another mechanism: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	switcher.expectClosed()
	if got := b.saslStats.reauthentications.Load(); got != 1 {
		t.Fatalf("%d re-authentications, want 1", got)
	}
}

// TestSASLOnPlaintextListener: SaslHandshake and SaslAuthenticate on a
// listener without SASL are ILLEGAL_SASL_STATE, and the connection goes on.
func TestSASLOnPlaintextListener(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, t.TempDir(), "", nil)
	r := dialRawAt(t, b.ListenerAddr("PLAINTEXT"))
	if hs := r.handshake("PLAIN", 1); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslHandshake on PLAINTEXT: %v", kerr.ErrorForCode(hs.ErrorCode))
	}
	if resp := r.authenticate([]byte("\x00a\x00b"), 1); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslAuthenticate on PLAINTEXT: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	r.metadataWorks()
}

// TestSASLFrameLimitBeforeAuthentication: before authentication a SASL
// listener reads frames up to sasl.server.max.receive.size only.
func TestSASLFrameLimitBeforeAuthentication(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startSASLBroker(t, filepath.Join(dir, "data"), writeUsersFile(t, dir, saslTestUsers),
		map[string]string{"sasl.server.max.receive.size": "1024"})
	r := dialRawAt(t, saslAddr(b))
	r.write(binary.BigEndian.AppendUint32(nil, 2048))
	r.expectClosed()

	// Once authenticated, the broker's own limit applies.
	client := saslClient(t, b, plainMechanism("alice", "alice-secret"), kgo.DefaultProduceTopic("big"))
	big := kgo.SliceRecord(make([]byte, 64<<10))
	if err := client.ProduceSync(testContext(t, 10*time.Second), big).FirstErr(); err != nil {
		t.Fatalf("64 KiB record after authentication: %v", err)
	}
}
