package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/exactly-eos/exactly/loadgen/clientsec"
)

// Target is a cluster the load generator speaks to.
type Target interface {
	// Kind is "embedded", "kfake", "cluster" or "bootstrap".
	Kind() string
	// Bootstrap lists host:port seed brokers.
	Bootstrap() []string
	// Description says what the target is, for results.
	Description() string
	// Close stops the target if the load generator started it.
	Close() error
}

// Target kinds accepted by StartTarget.
const (
	TargetEmbedded  = "embedded"
	TargetKfake     = "kfake"
	TargetBootstrap = "bootstrap"
)

// TargetConfig says which cluster to run against.
type TargetConfig struct {
	// Kind is one of the Target kinds.
	Kind string
	// Bootstrap lists the host:port seed brokers of a bootstrap target.
	Bootstrap []string
	// DataDir is where an embedded broker keeps its log (empty: a
	// temporary directory).
	DataDir string
	// StartEmbedded starts our broker in this process. The load generator
	// does not link the broker: the exactly command (cmd/exactly)
	// provides it. Nil: the embedded target is not available.
	StartEmbedded func(ctx context.Context, dataDir string) (Target, error)
	// Self runs the exactly binary for a cluster target's brokers (zero:
	// DefaultSelfCommand).
	Self SelfCommand
	// BrokerProperties are broker settings (Kafka's names) a cluster
	// target's brokers start with, beyond the cluster's own
	// (LaunchedBrokerProperties); StartEmbedded applies its own.
	BrokerProperties map[string]string
	// PartitionProxies puts a cluster target's brokers behind partition
	// proxies, which the broker-partition fault needs (NeedsPartitionProxies
	// tells); without it clients and brokers connect directly.
	PartitionProxies bool
	// Security is how clients connect to a bootstrap target (TLS, SASL);
	// the zero value is PLAINTEXT. The targets the load generator starts
	// listen on PLAINTEXT only, so it must be zero for them.
	Security clientsec.Config
}

// StartTarget starts (embedded, kfake) or names (bootstrap) the cluster to
// run against.
func StartTarget(ctx context.Context, config TargetConfig) (Target, error) {
	bootstrap := config.Bootstrap
	if !config.Security.IsZero() && config.Kind != TargetBootstrap {
		return nil, fmt.Errorf("--security-protocol %s is for an existing cluster (--bootstrap host:port): the %s target listens on PLAINTEXT only "+
			"(--workload security measures SSL and SASL_SSL on the embedded broker)", config.Security.Describe(), config.Kind)
	}
	switch config.Kind {
	case TargetEmbedded:
		if config.StartEmbedded == nil {
			return nil, errors.New("the embedded broker is not built into this program: use --target kfake or --bootstrap host:port")
		}
		return config.StartEmbedded(ctx, config.DataDir)
	case TargetKfake:
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return nil, fmt.Errorf("start kfake: %w", err)
		}
		return &kfakeTarget{cluster: cluster}, nil
	case TargetCluster:
		self := config.Self
		if self.Path == "" {
			var err error
			if self, err = DefaultSelfCommand(); err != nil {
				return nil, err
			}
		}
		return startCluster(ctx, self, config.DataDir, config.PartitionProxies, config.BrokerProperties)
	case TargetBootstrap:
		if len(bootstrap) == 0 {
			return nil, errors.New("target bootstrap needs at least one host:port")
		}
		for _, address := range bootstrap {
			if !strings.Contains(address, ":") {
				return nil, fmt.Errorf("bootstrap address %q is not host:port", address)
			}
		}
		security, err := config.Security.Resolve()
		if err != nil {
			return nil, err
		}
		return &bootstrapTarget{addresses: bootstrap, security: security}, nil
	}
	return nil, fmt.Errorf("unknown target %q: use embedded, kfake, cluster, or --bootstrap host:port", config.Kind)
}

// kfakeTarget is franz-go's in-memory fake cluster, in process.
type kfakeTarget struct{ cluster *kfake.Cluster }

func (t *kfakeTarget) Kind() string        { return TargetKfake }
func (t *kfakeTarget) Bootstrap() []string { return t.cluster.ListenAddrs() }
func (t *kfakeTarget) Description() string {
	return "kfake (franz-go in-memory Kafka), 1 broker, in process, " + strings.Join(t.cluster.ListenAddrs(), ",")
}
func (t *kfakeTarget) Close() error { t.cluster.Close(); return nil }

// bootstrapTarget is an existing cluster the load generator does not own.
type bootstrapTarget struct {
	addresses []string
	security  *clientsec.Settings // nil: PLAINTEXT
}

func (t *bootstrapTarget) Kind() string                        { return TargetBootstrap }
func (t *bootstrapTarget) Bootstrap() []string                 { return t.addresses }
func (t *bootstrapTarget) ClientSecurity() *clientsec.Settings { return t.security }
func (t *bootstrapTarget) Description() string {
	description := "existing cluster at " + strings.Join(t.addresses, ",")
	if t.security != nil {
		description += " (" + t.security.Describe() + ")"
	}
	return description
}
func (t *bootstrapTarget) Close() error { return nil }
