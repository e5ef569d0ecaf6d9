// Package clusternode runs one member of an exactly cluster in
// KRaft-style combined mode: a broker (package broker) and, beside it, its
// metadata quorum node (broker/quorum). The glue between the two is in
// package broker itself ([broker.Start] with a [broker.QuorumConfig]), so
// that a single broker — a cluster of one — runs the same code as a member
// of three; this package is the member's configuration by the names
// cmd/exactly uses, kept for its callers.
//
// Data layout: Config.DataDir/quorum holds the raft log and snapshots,
// Config.DataDir/broker the broker's topics.
package clusternode

import (
	"context"
	"log/slog"
	"time"

	"github.com/exactly-eos/exactly/broker"
	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/broker/quorum"
)

// Config configures one cluster member.
type Config struct {
	// NodeID is the broker id and the quorum node id.
	NodeID int32
	// Listen is the broker's Kafka listener, e.g. "127.0.0.1:9092".
	Listen string
	// Advertised is the host:port registered for clients and the other
	// brokers; empty means the listener's actual address.
	Advertised string
	// DataDir holds quorum/ (raft) and broker/ (partitions).
	DataDir string
	// Voters are the quorum's members and their addresses (see
	// quorum.Config.Voters); it must hold NodeID. Empty means a cluster of
	// one: this node alone, its quorum in process with no listener of its
	// own (quorum's in-process voter) — how a single broker runs.
	Voters map[int32]quorum.VoterAddrs
	// Properties are broker settings by Kafka's names. The member takes
	// default.replication.factor out of them (the broker itself serves
	// only 1) and uses it for topics created with replication factor -1
	// and auto-created ones; default 1.
	Properties map[string]string
	// UsersFile is broker.Config.UsersFile: users whose SCRAM
	// credentials this member's broker stores at start (credentials are
	// per broker, not replicated: give every member the same file).
	UsersFile string
	// HeartbeatInterval, SessionTimeout and ElectionTimeout tune the
	// quorum (zero: quorum's defaults).
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	ElectionTimeout   time.Duration
	// Logger receives the member's logs; nil discards them.
	Logger *slog.Logger
	// SourceAddress, when set, is the local IP address every connection
	// this member opens to another member is dialed from (raft, the
	// quorum's RPC, replica fetchers, the coordinators' clients to other
	// leaders), so a partition proxy in front of the others can cut it off
	// (quorum.Config.SourceAddress). Empty lets the system choose.
	SourceAddress string
	// RaftListen and RPCListen are the addresses the quorum node binds
	// (quorum.Config RaftBind and RPCBind); empty means its Voters entry.
	RaftListen, RPCListen string
	// Metrics, if set, receives the member's broker metrics
	// (broker.Config.Metrics); nil turns them off.
	Metrics *metrics.Broker
}

// Member is one running cluster member. Its methods are safe for
// concurrent use.
type Member struct {
	id     int32
	broker *broker.Broker
}

// Start starts the member's broker and quorum node ([broker.Start]). A
// cluster of one returns once its broker is registered. The member runs
// until Close.
func Start(cfg Config) (*Member, error) {
	b, err := broker.Start(context.Background(), broker.Config{
		NodeID: cfg.NodeID, Listen: cfg.Listen, Advertised: cfg.Advertised,
		DataDir: cfg.DataDir, Properties: cfg.Properties, Logger: cfg.Logger, Metrics: cfg.Metrics,
		UsersFile: cfg.UsersFile,
		Quorum: &broker.QuorumConfig{
			Voters:            cfg.Voters,
			HeartbeatInterval: cfg.HeartbeatInterval, SessionTimeout: cfg.SessionTimeout, ElectionTimeout: cfg.ElectionTimeout,
			SourceAddress: cfg.SourceAddress, RaftListen: cfg.RaftListen, RPCListen: cfg.RPCListen,
		},
	})
	if err != nil {
		return nil, err
	}
	return &Member{id: cfg.NodeID, broker: b}, nil
}

// Close stops the member: its heartbeats, then the broker, then the
// quorum node ([broker.Broker.Close]). It is idempotent.
func (m *Member) Close() error { return m.broker.Close() }

// ID returns the member's node id.
func (m *Member) ID() int32 { return m.id }

// Addr returns the broker's listener address.
func (m *Member) Addr() string { return m.broker.Addr() }

// Broker returns the member's broker.
func (m *Member) Broker() *broker.Broker { return m.broker }

// Node returns the member's quorum node.
func (m *Member) Node() *quorum.Node { return m.broker.QuorumNode() }
