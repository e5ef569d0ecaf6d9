package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"encoding/base64"
	"strings"
	"testing"
)

// librdkafkaFinal builds the client-final message librdkafka < 2.6.1
// sends: nonce = client nonce + full server nonce, proof over that.
func librdkafkaFinal(t *testing.T, m Mechanism, password, clientFirstBare, serverFirst, nonce, channelBinding string) (final string, serverSignature []byte) {
	t.Helper()
	salt, _ := base64.StdEncoding.DecodeString(attribute(serverFirst, "s"))
	salted, err := pbkdf2.Key(m.hashFunc(), password, salt, 4096, m.hashFunc()().Size())
	if err != nil {
		t.Fatal(err)
	}
	mac := func(key []byte, message string) []byte {
		h := hmac.New(m.hashFunc(), key)
		h.Write([]byte(message))
		return h.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	h := m.hashFunc()()
	h.Write(clientKey)
	withoutProof := "c=" + channelBinding + ",r=" + nonce
	authMessage := clientFirstBare + "," + serverFirst + "," + withoutProof
	signature := mac(h.Sum(nil), authMessage)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ signature[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), mac(mac(salted, "Server Key"), authMessage)
}

func TestScramAcceptsLibrdkafkaNonceOnly(t *testing.T) {
	s, _ := newStore(t)
	putUser(t, s, "alice", "alice-secret")
	const clientNonce = "rdkafkaNonce0123456789"
	biws := base64.StdEncoding.EncodeToString([]byte("n,,"))
	for _, tc := range []struct {
		name, password, channelBinding string
		nonce                          func(server string) string
		ok                             bool
	}{
		{"librdkafka's nonce", "alice-secret", biws, func(server string) string { return clientNonce + server }, true},
		{"librdkafka's nonce, wrong password", "wrong", biws, func(server string) string { return clientNonce + server }, false},
		{"other prefix", "alice-secret", biws, func(server string) string { return "x" + server }, false},
		{"prefix twice", "alice-secret", biws, func(server string) string { return clientNonce + clientNonce + server }, false},
		{"server part missing", "alice-secret", biws, func(server string) string { return clientNonce + clientNonce }, false},
		{"channel binding claimed", "alice-secret", base64.StdEncoding.EncodeToString([]byte("y,,")),
			func(server string) string { return clientNonce + server }, false},
	} {
		for _, m := range ScramMechanisms {
			conv, _ := NewConversation(m, s)
			clientFirstBare := "n=alice,r=" + clientNonce
			serverFirst, _, err := conv.Step([]byte("n,," + clientFirstBare))
			if err != nil {
				t.Fatal(err)
			}
			nonce := tc.nonce(attribute(string(serverFirst), "r"))
			final, wantSignature := librdkafkaFinal(t, m, tc.password, clientFirstBare, string(serverFirst), nonce, tc.channelBinding)
			answer, done, err := conv.Step([]byte(final))
			if tc.ok != (err == nil && done) {
				t.Fatalf("%s %s: done=%v err=%v", tc.name, m, done, err)
			}
			if tc.ok && (conv.User() != "alice" || string(answer) != "v="+base64.StdEncoding.EncodeToString(wantSignature)) {
				t.Fatalf("%s %s: user %q, answer %q", tc.name, m, conv.User(), answer)
			}
			if _, _, err := conv.Step([]byte(final)); err == nil || !strings.Contains(err.Error(), "finished") {
				t.Fatalf("%s %s: a third message: %v", tc.name, m, err)
			}
		}
	}
}
