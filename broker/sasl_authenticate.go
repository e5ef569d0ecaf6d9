package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// SaslAuthenticate v0–2 (API 36) carries one SASL token each way after a
// SaslHandshake v1 (saslSession and connection.saslStep are the state
// machine). A failed authentication is SASL_AUTHENTICATION_FAILED with
// Kafka's message, and the connection closes after the answer. The answer
// that completes the exchange carries, from v1, session_lifetime_ms
// (KIP-368: connections.max.reauth.ms, 0 when sessions do not expire).
// Without a SaslHandshake first it is ILLEGAL_SASL_STATE and, on a SASL
// listener, the connection closes; on an authenticated connection, or a
// listener without SASL, it is ILLEGAL_SASL_STATE, as Kafka's KafkaApis
// answers.
func init() {
	register(wire.APISASLAuthenticate, 0, 2, kmsgHandler(handleSASLAuthenticate))
}

func handleSASLAuthenticate(c *connection, req *kmsg.SASLAuthenticateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	s := &c.sasl
	if !c.protocol.SASL() || s.phase != saslAuthenticating {
		message := "SaslAuthenticate request received after successful authentication"
		if c.protocol.SASL() && s.phase != saslAuthenticated {
			message = "Unexpected SaslAuthenticate request before SaslHandshake v1"
			c.logger.Warn("closing connection: SaslAuthenticate without SaslHandshake v1", "sasl_state", s.phase.String())
			c.stopReader = true
		} else if !c.protocol.SASL() {
			message = "SaslAuthenticate on a listener without SASL"
		}
		resp.ErrorCode, resp.ErrorMessage = kerr.IllegalSaslState.Code, &message
		return resp
	}
	if req.Version >= 1 {
		s.reauthCapable = true
	}
	result := c.saslStep(req.SASLAuthBytes)
	if result.failure != "" {
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &result.failure
		return resp
	}
	resp.SASLAuthBytes = result.answer
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	resp.SessionLifetimeMillis = result.lifetime.Milliseconds()
	return resp
}
