// Package clusternode runs one member of a replicated exactly cluster in
// KRaft-style combined mode: a metadata quorum node (broker/quorum) and a
// broker (package broker) with replication on, glued together. It is the
// only package that imports both; neither imports it.
//
// What the glue does:
//   - The broker's ISR changes (AlterPartition) go to the quorum, and a
//     broker id resolves to the listener the quorum has registered for it.
//   - The broker registers with the quorum under its advertised listener
//     and heartbeats (quorum.Node.StartHeartbeats); a member that stops
//     heartbeating is fenced by the active controller.
//   - On every change of the quorum's metadata image, the apply loop
//     converts the image's brokers and partitions (same field names on
//     both sides) and calls broker.ApplyPartitionRoles, and removes the
//     local replicas of topics the image no longer has (broker.RemoveTopics)
//     and sets the topics' configs (broker.ApplyTopicConfigs).
//   - Client topic administration (CreateTopics, DeleteTopics,
//     CreatePartitions, auto-creation) goes to the quorum through
//     [broker.TopicController] (implemented by topicController), which
//     returns once the apply loop has applied the image holding the change.
//
// The group and transaction coordinators move with leadership: the broker
// creates __consumer_offsets and __transaction_state through the
// TopicController as replicated topics and shards its coordinators by the
// partitions it leads (the broker's coordinatorShards). Topic configs given
// at creation, and later changes by AlterConfigs or IncrementalAlterConfigs
// sent to any member, are kept by the quorum and applied to every replica.
//
// Data layout: Config.DataDir/quorum holds the raft log and snapshots,
// Config.DataDir/broker the broker's topics.
package clusternode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
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
//
// Goroutines: the quorum node's and the broker's own, plus the apply loop
// (applyLoop), ended by Close.
type Member struct {
	cfg               Config
	logger            *slog.Logger
	replicationFactor int32
	node              *quorum.Node
	broker            *broker.Broker
	stopHeartbeats    func()
	// configs are the topic configs last applied (apply loop only).
	configs map[string]map[string]string

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the apply loop ends

	// appliedMu guards applied and appliedCh: the index of the last image
	// the apply loop applied without error, and a channel closed (and
	// replaced) whenever it grows.
	appliedMu sync.Mutex
	applied   uint64
	appliedCh chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Start opens the quorum node, starts the broker with replication on,
// registers it and starts applying the quorum's metadata. The member runs
// until Close.
func Start(cfg Config) (*Member, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	alone := len(cfg.Voters) == 0
	if alone {
		cfg.Voters = map[int32]quorum.VoterAddrs{cfg.NodeID: {}}
	}
	if err := checkDataDir(cfg.DataDir); err != nil {
		return nil, err // says what to do; the node id adds nothing
	}
	props := map[string]string{}
	for k, v := range cfg.Properties {
		props[k] = v
	}
	rf := int32(1)
	if v, ok := props["default.replication.factor"]; ok {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("clusternode: default.replication.factor %q: must be an integer of at least 1", v)
		}
		rf = int32(n)
		delete(props, "default.replication.factor")
	}
	m := &Member{cfg: cfg, logger: logger.With("node", cfg.NodeID), replicationFactor: rf,
		done: make(chan struct{}), appliedCh: make(chan struct{}), configs: map[string]map[string]string{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	node, err := quorum.Open(quorum.Config{
		NodeID: cfg.NodeID, Voters: cfg.Voters, DataDir: filepath.Join(cfg.DataDir, "quorum"),
		HeartbeatInterval: cfg.HeartbeatInterval, SessionTimeout: cfg.SessionTimeout,
		ElectionTimeout: cfg.ElectionTimeout, Logger: logger.With("component", "quorum"),
		SourceAddress: cfg.SourceAddress, RaftBind: cfg.RaftListen, RPCBind: cfg.RPCListen,
	})
	if err != nil {
		m.cancel()
		return nil, fmt.Errorf("clusternode %d: %w", cfg.NodeID, err)
	}
	m.node = node
	b, err := broker.Start(context.Background(), broker.Config{
		NodeID: cfg.NodeID, Listen: cfg.Listen, Advertised: cfg.Advertised,
		DataDir: filepath.Join(cfg.DataDir, "broker"), Properties: props, Logger: logger, Metrics: cfg.Metrics,
		UsersFile: cfg.UsersFile,
		Replication: &broker.ReplicationConfig{
			ISR:           isrChanger{node: node},
			ResolveBroker: m.resolveBroker,
			Topics:        topicController{m: m},
			// Kafka's default of 3, or fewer in a smaller cluster: the
			// coordinators wait for that many live brokers rather than
			// creating their topics short of replicas.
			InternalReplicationFactor: int32(min(3, len(cfg.Voters))),
			Dial:                      dialFrom(cfg.SourceAddress),
			Alone:                     alone,
		},
	})
	if err != nil {
		m.cancel()
		node.Close()
		return nil, fmt.Errorf("clusternode %d: %w", cfg.NodeID, err)
	}
	m.broker = b
	reg, err := m.registration()
	if err != nil {
		m.cancel()
		b.Close()
		node.Close()
		return nil, err
	}
	m.stopHeartbeats = node.StartHeartbeats(reg)
	go m.applyLoop()
	if alone {
		// A cluster of one is ready when Start returns, as a single
		// broker was: its Metadata lists itself, so a client's first
		// request finds a broker to send to.
		ctx, cancel := context.WithTimeout(m.ctx, aloneStartTimeout)
		err := m.waitRegistered(ctx, reg)
		cancel()
		if err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// aloneStartTimeout bounds how long a cluster of one waits at start for
// its quorum to elect itself and register its broker (milliseconds, as a
// rule).
const aloneStartTimeout = 30 * time.Second

// waitRegistered waits until the quorum's image holds reg, unfenced, and
// the apply loop has applied it.
func (m *Member) waitRegistered(ctx context.Context, reg quorum.BrokerRegistration) error {
	_, err := m.node.WaitFor(ctx, func(img *quorum.Image) bool {
		b, ok := img.Broker(reg.ID)
		return ok && !b.Fenced && b.Host == reg.Host && b.Port == reg.Port
	})
	if err == nil {
		err = m.waitApplied(ctx)
	}
	if err != nil {
		return fmt.Errorf("clusternode %d: registering the broker with its quorum: %w", m.cfg.NodeID, err)
	}
	return nil
}

// legacyLayoutFile is at the top of a data directory written by a single
// broker before a single broker ran as a cluster of one.
const legacyLayoutFile = "topics.json"

// checkDataDir refuses a data directory in the layout of a single broker
// of before (topics at its top, no quorum): a member keeps its topics
// under broker/ and its metadata under quorum/, and would start empty
// beside them, as if they were lost.
func checkDataDir(dataDir string) error {
	if _, err := os.Stat(filepath.Join(dataDir, legacyLayoutFile)); err != nil {
		return nil
	}
	return fmt.Errorf("data directory %s holds the topics of a single broker of an earlier version, which this one does not convert "+
		"(a single broker now runs as a cluster of one: topics under broker/, metadata under quorum/); "+
		"start with an empty --data-dir, or move this one aside (mv %s %s.old) to keep it", dataDir, dataDir, dataDir)
}

// dialFrom is the broker's dial hook for connections to other brokers:
// from source when set, nil (kgo's default) otherwise. quorum.Open has
// already refused a source that is not an IP address.
func dialFrom(source string) func(ctx context.Context, network, address string) (net.Conn, error) {
	if source == "" {
		return nil
	}
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 10 * time.Second}
	return dialer.DialContext
}

// registration is the broker as the quorum registers it: its
// inter-broker listener (Host, Port) and every listener by name.
func (m *Member) registration() (quorum.BrokerRegistration, error) {
	addr := m.broker.AdvertisedAddr()
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return quorum.BrokerRegistration{}, fmt.Errorf("clusternode %d: advertised address %q: %w", m.cfg.NodeID, addr, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return quorum.BrokerRegistration{}, fmt.Errorf("clusternode %d: advertised port %q: %w", m.cfg.NodeID, portText, err)
	}
	reg := quorum.BrokerRegistration{ID: m.cfg.NodeID, Host: host, Port: int32(port)}
	for _, l := range m.broker.AdvertisedListeners() {
		reg.Listeners = append(reg.Listeners, quorum.Endpoint{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	return reg, nil
}

// Close stops the broker, then the quorum node (its heartbeats first, so
// the controller fences this broker after its session timeout). It is
// idempotent.
func (m *Member) Close() error {
	m.closeOnce.Do(func() {
		m.cancel()
		<-m.done
		m.stopHeartbeats()
		m.closeErr = errors.Join(m.broker.Close(), m.node.Close())
	})
	return m.closeErr
}

// ID returns the member's node id.
func (m *Member) ID() int32 { return m.cfg.NodeID }

// Addr returns the broker's listener address.
func (m *Member) Addr() string { return m.broker.Addr() }

// Broker returns the member's broker.
func (m *Member) Broker() *broker.Broker { return m.broker }

// Node returns the member's quorum node.
func (m *Member) Node() *quorum.Node { return m.node }

// resolveBroker returns the registered listener of broker id.
func (m *Member) resolveBroker(id int32) (string, error) {
	b, ok := m.node.Image().Broker(id)
	if !ok {
		return "", fmt.Errorf("broker %d is not registered", id)
	}
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), nil
}

// applyRetry is how soon a failed apply is tried again without a change.
const applyRetry = 500 * time.Millisecond

// applyLoop applies every image the quorum publishes until Close. A failed
// apply (a partition that could not be opened, say) is retried on the next
// change or after applyRetry.
func (m *Member) applyLoop() {
	defer close(m.done)
	known := map[string][16]byte{} // topics of the last applied image
	for {
		img := m.node.Image()
		var retry <-chan time.Time
		if err := m.apply(img, known); err != nil {
			if m.ctx.Err() != nil {
				return
			}
			m.logger.Warn("clusternode: apply metadata", "index", img.Index(), "err", err)
			retry = time.After(applyRetry)
		} else {
			m.setApplied(img.Index())
		}
		select {
		case <-m.ctx.Done():
			return
		case <-img.Changed():
		case <-retry:
		}
	}
}

// apply applies one image: removes the local replicas of topics gone (or
// recreated under another id) since the last image, then applies the
// roles. known is updated to the image's topics.
func (m *Member) apply(img *quorum.Image, known map[string][16]byte) error {
	topics := img.Topics()
	current := make(map[string][16]byte, len(topics))
	for _, t := range topics {
		current[t.Name] = t.ID
	}
	var gone []string
	for name, id := range known {
		if cur, ok := current[name]; !ok || cur != id {
			gone = append(gone, name)
		}
	}
	if err := m.broker.RemoveTopics(gone); err != nil {
		return err
	}
	for _, name := range gone {
		delete(known, name)
	}
	brokers, roles := Convert(img)
	if err := m.broker.ApplyPartitionRoles(m.ctx, brokers, roles); err != nil {
		return err
	}
	// Configs of topics first seen, or whose configs the quorum changed;
	// an AlterConfigs on this broker alone stays until then.
	configs := map[string]map[string]string{}
	for _, t := range topics {
		if last, seen := m.configs[t.Name]; !seen || !maps.Equal(last, t.Configs) {
			configs[t.Name] = t.Configs
		}
	}
	if err := m.broker.ApplyTopicConfigs(configs); err != nil {
		return err
	}
	for name, cfg := range configs {
		m.configs[name] = cfg
	}
	for name := range m.configs {
		if _, ok := current[name]; !ok {
			delete(m.configs, name)
		}
	}
	for name, id := range current {
		known[name] = id
	}
	return nil
}

// Convert turns a quorum image into the broker's view of it: every
// registered broker and every partition's role.
func Convert(img *quorum.Image) ([]broker.ClusterBroker, []broker.PartitionRole) {
	var brokers []broker.ClusterBroker
	for _, b := range img.Brokers() {
		listeners := make([]broker.ListenerEndpoint, len(b.Listeners))
		for i, e := range b.Listeners {
			listeners[i] = broker.ListenerEndpoint{Name: e.Name, Host: e.Host, Port: e.Port}
		}
		brokers = append(brokers, broker.ClusterBroker{ID: b.ID, Host: b.Host, Port: b.Port, Rack: b.Rack, Listeners: listeners, Fenced: b.Fenced})
	}
	var roles []broker.PartitionRole
	for _, p := range img.Partitions() {
		roles = append(roles, role(p))
	}
	return brokers, roles
}

func role(p quorum.Partition) broker.PartitionRole {
	return broker.PartitionRole{
		Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition,
		Replicas: p.Replicas, ISR: p.ISR, Leader: p.Leader,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
	}
}

func (m *Member) setApplied(index uint64) {
	m.appliedMu.Lock()
	defer m.appliedMu.Unlock()
	if index > m.applied {
		m.applied = index
		close(m.appliedCh)
		m.appliedCh = make(chan struct{})
	}
}

// waitApplied waits until the apply loop has applied an image of at least
// the quorum's current index.
func (m *Member) waitApplied(ctx context.Context) error {
	want := m.node.Image().Index()
	for {
		m.appliedMu.Lock()
		applied, ch := m.applied, m.appliedCh
		m.appliedMu.Unlock()
		if applied >= want {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("clusternode %d: waiting to apply metadata %d (applied %d): %w", m.cfg.NodeID, want, applied, ctx.Err())
		case <-m.ctx.Done():
			return fmt.Errorf("clusternode %d: closed", m.cfg.NodeID)
		}
	}
}

// isrChanger is the broker's ISRChanger on the quorum.
type isrChanger struct{ node *quorum.Node }

func (c isrChanger) AlterPartition(ctx context.Context, topic string, partition, leaderEpoch, partitionEpoch int32, isr []int32) (broker.PartitionRole, error) {
	p, err := c.node.AlterPartition(ctx, topic, partition, leaderEpoch, partitionEpoch, isr)
	if err != nil {
		return broker.PartitionRole{}, err
	}
	return role(p), nil
}
