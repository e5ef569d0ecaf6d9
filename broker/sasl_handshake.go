package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/auth"
	"github.com/exactly-eos/exactly/wire"
)

// SaslHandshake v0–1 (API 17) picks the SASL mechanism of a connection on
// a SASL listener (saslSession and connection.startSASL are the state
// machine). The answer always lists sasl.enabled.mechanisms. A mechanism
// not enabled is UNSUPPORTED_SASL_MECHANISM and the connection closes after
// the answer. v1 wraps the tokens that follow in SaslAuthenticate requests;
// after v0 the next frames are bare tokens (serveRawSASLToken). On an
// authenticated connection whose sessions expire
// (connections.max.reauth.ms) and whose client used SaslAuthenticate v1+,
// it starts KIP-368 re-authentication; otherwise, and on listeners without
// SASL, it is ILLEGAL_SASL_STATE, as Kafka's KafkaApis answers.
func init() {
	register(wire.APISASLHandshake, 0, 1, kmsgHandler(handleSASLHandshake))
}

func handleSASLHandshake(c *connection, req *kmsg.SASLHandshakeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	enabled := c.broker.config.settings.SASL.Mechanisms
	for _, m := range enabled {
		resp.SupportedMechanisms = append(resp.SupportedMechanisms, string(m))
	}
	s := &c.sasl
	reauth := s.phase == saslAuthenticated && !s.expiry.IsZero() && s.reauthCapable
	if !c.protocol.SASL() || (s.phase == saslAuthenticated && !reauth) {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	m, err := auth.ParseMechanism(req.Mechanism)
	if err != nil || !containsMechanism(enabled, m) {
		c.logger.Info("closing connection: SASL mechanism not enabled", "mechanism", req.Mechanism)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.stopReader = true
		return resp
	}
	if err := c.startSASL(m, req.Version == 0); err != nil {
		c.logger.Error("closing connection: SASL conversation did not start", "mechanism", string(m), "error", err)
		resp.ErrorCode = kerr.UnknownServerError.Code
		c.stopReader = true
	}
	return resp
}
