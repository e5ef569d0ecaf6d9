package loadgen

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/clientsec"
)

// SecuredTarget is a Target whose clients connect with TLS or SASL: an
// existing cluster given --security-protocol, or one listener of the
// security workload's embedded broker. Every client the load generator
// makes against it — producers, consumers, the admin client, the
// preflight, the consume stages, the verification readers and worker
// subprocesses — gets ClientSecurity's options (through targetOptions and
// runPlan.clientOptions; no other place builds a client for a target).
type SecuredTarget interface {
	Target
	// ClientSecurity is how clients connect (nil: PLAINTEXT).
	ClientSecurity() *clientsec.Settings
}

// TargetSecurity is target's client security, nil (PLAINTEXT) for a
// target that has none.
func TargetSecurity(target Target) *clientsec.Settings {
	if secured, ok := target.(SecuredTarget); ok {
		return secured.ClientSecurity()
	}
	return nil
}

// targetOptions are the options of a client of target itself (not through
// a fault proxy): its seed brokers and its security.
func targetOptions(target Target) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(target.Bootstrap()...)}, TargetSecurity(target).Options()...)
}

// ListenerTarget is one listener of a broker the load generator started
// (the security workload's embedded broker): parent's kind and metrics,
// address as the only bootstrap address, and security for its clients.
// Closing it does not close parent.
func ListenerTarget(parent Target, listener, address string, security *clientsec.Settings) Target {
	return &listenerTarget{parent: parent, listener: listener, address: address, security: security}
}

// listenerTarget is ListenerTarget's Target.
type listenerTarget struct {
	parent   Target
	listener string
	address  string
	security *clientsec.Settings
}

func (t *listenerTarget) Kind() string                        { return t.parent.Kind() }
func (t *listenerTarget) Bootstrap() []string                 { return []string{t.address} }
func (t *listenerTarget) ClientSecurity() *clientsec.Settings { return t.security }
func (t *listenerTarget) Close() error                        { return nil }
func (t *listenerTarget) Description() string {
	return t.parent.Description() + "; listener " + t.listener + " at " + t.address + " (" + t.security.Describe() + ")"
}

// MetricsURL is the parent's /metrics address, if it serves one.
func (t *listenerTarget) MetricsURL() string {
	if offers, ok := t.parent.(MetricsURLer); ok {
		return offers.MetricsURL()
	}
	return ""
}
