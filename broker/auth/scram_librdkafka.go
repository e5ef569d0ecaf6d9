package auth

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"strings"
)

// librdkafka before 2.6.1 (confluentinc/librdkafka#4895; Debian
// bookworm's kcat ships 2.0.2) sends a wrong nonce in its SCRAM
// client-final message: its own nonce again in front of the full nonce
// the server sent (which already starts with it), r=<client><client><server>
// instead of r=<client><server>. Kafka 3.8.1 to 3.9 accept it (the nonce
// need only end with the server's); xdg-go, like Kafka 4, requires it
// equal, as RFC 5802 says. To keep those clients working, a client-final
// message whose nonce is exactly that buggy form is verified here, with
// the same checks xdg-go applies to a correct one (channel binding, the
// proof against StoredKey in constant time, the server signature); any
// other nonce goes to xdg-go, which refuses it. The server's random part
// is still required, so a replayed exchange still fails.

// scramTranscript is what the compat path needs from the first step.
type scramTranscript struct {
	// gs2Header is the client-first message's "n,," (or "y,,", "n,a=...,").
	gs2Header string
	// clientFirstBare is the client-first message without gs2Header.
	clientFirstBare string
	// clientNonce is the client's nonce (r= of clientFirstBare).
	clientNonce string
	// serverFirst is the server-first message; nonce its r= value.
	serverFirst, nonce string
	// credential is the one the first step looked up.
	credential Credential
}

// record keeps the first step's messages; it reports false when they do
// not have the shape xdg-go accepted (then the compat path is off).
func (t *scramTranscript) record(clientFirst, serverFirst string) bool {
	comma := strings.IndexByte(clientFirst, ',')
	if comma < 0 {
		return false
	}
	second := strings.IndexByte(clientFirst[comma+1:], ',')
	if second < 0 {
		return false
	}
	t.gs2Header = clientFirst[:comma+1+second+1]
	t.clientFirstBare = clientFirst[len(t.gs2Header):]
	t.clientNonce = attribute(t.clientFirstBare, "r")
	t.serverFirst, t.nonce = serverFirst, attribute(serverFirst, "r")
	return t.clientNonce != "" && t.nonce != "" && strings.HasPrefix(t.nonce, t.clientNonce)
}

// attribute is the value of the first key=value field named key.
func attribute(message, key string) string {
	for _, field := range strings.Split(message, ",") {
		if value, ok := strings.CutPrefix(field, key+"="); ok {
			return value
		}
	}
	return ""
}

// isLibrdkafkaNonce reports whether clientFinal carries exactly the buggy
// nonce (client nonce, then the full server nonce).
func (t *scramTranscript) isLibrdkafkaNonce(clientFinal string) bool {
	fields := strings.Split(clientFinal, ",")
	return len(fields) >= 3 && fields[1] == "r="+t.clientNonce+t.nonce
}

// verifyLibrdkafkaFinal checks a client-final message with the buggy
// nonce and returns the server-final message.
func (t *scramTranscript) verifyLibrdkafkaFinal(m Mechanism, clientFinal string) (string, error) {
	fields := strings.Split(clientFinal, ",")
	if fields[0] != "c="+base64.StdEncoding.EncodeToString([]byte(t.gs2Header)) {
		return "", errors.New("channel binding does not match the gs2 header")
	}
	proofField, ok := strings.CutPrefix(fields[len(fields)-1], "p=")
	if !ok {
		return "", errors.New("no proof in the client-final message")
	}
	proof, err := base64.StdEncoding.DecodeString(proofField)
	if err != nil {
		return "", errors.New("proof is not base64")
	}
	withoutProof := clientFinal[:strings.LastIndexByte(clientFinal, ',')]
	authMessage := []byte(t.clientFirstBare + "," + t.serverFirst + "," + withoutProof)
	mac := func(key []byte) []byte {
		h := hmac.New(m.hashFunc(), key)
		h.Write(authMessage)
		return h.Sum(nil)
	}
	signature := mac(t.credential.StoredKey)
	if len(proof) != len(signature) {
		return "", errors.New("proof of the wrong length")
	}
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ signature[i]
	}
	h := m.hashFunc()()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), t.credential.StoredKey) {
		return "", errors.New("invalid proof")
	}
	return "v=" + base64.StdEncoding.EncodeToString(mac(t.credential.ServerKey)), nil
}
