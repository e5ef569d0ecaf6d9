package broker

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/exactly-eos/exactly/broker/quorum"
)

// A broker is always one member of a cluster, KRaft-style in combined
// mode: [Start] opens a metadata quorum node (package quorum) beside it
// and glues the two together, here. A single broker is a cluster of one:
// its quorum has one voter, itself, running in process (no RPC listener,
// a 50ms election), through the same state machine as a member of three.
//
// What the glue (member) does:
//   - The broker's ISR changes (AlterPartition) go to the quorum
//     (quorumISR), and a broker id resolves to the listener the quorum has
//     registered for it (member.resolveBroker).
//   - The broker registers with the quorum under its advertised listeners
//     and heartbeats (quorum.Node.StartHeartbeats); a member that stops
//     heartbeating is fenced by the active controller.
//   - Once the node's image holds this process's registration (everything
//     committed before it: member.waitCaughtUp), and then on every change
//     of the quorum's metadata image, the apply loop
//     (member.applyLoop) converts the image's brokers and partitions (same
//     field names on both sides) and calls [Broker.ApplyPartitionRoles],
//     removes the local replicas of topics the image no longer has
//     ([Broker.RemoveTopics]) and sets the topics' configs
//     ([Broker.ApplyTopicConfigs]).
//   - Client topic administration (CreateTopics, DeleteTopics,
//     CreatePartitions, configs, auto-creation) goes to the quorum through
//     the [TopicController] quorumTopics, which returns once the apply loop
//     has applied the image holding the change.
//
// Data layout: Config.DataDir/quorum holds the raft log and snapshots,
// Config.DataDir/broker the broker's topics, partitions and files.

// Directories of a member's data directory (Config.DataDir).
const (
	quorumDirName = "quorum"
	brokerDirName = "broker"
)

// QuorumConfig configures the metadata quorum node a broker runs beside
// itself ([Config.Quorum]).
type QuorumConfig struct {
	// Voters are the quorum's members and their addresses (see
	// quorum.Config.Voters); it must hold the broker's NodeID. Empty
	// means a cluster of one: this node alone, its quorum in process with
	// no listener of its own.
	Voters map[int32]quorum.VoterAddrs
	// HeartbeatInterval, SessionTimeout and ElectionTimeout tune the
	// quorum (zero: quorum's defaults; a cluster of one elects itself in
	// 50ms unless ElectionTimeout is set).
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	ElectionTimeout   time.Duration
	// SourceAddress, when set, is the local IP address every connection
	// this member opens to another member is dialed from (raft, the
	// quorum's RPC, replica fetchers, the coordinators' clients to other
	// leaders), so a partition proxy in front of the others can cut it off
	// (quorum.Config.SourceAddress). Empty lets the system choose.
	SourceAddress string
	// RaftListen and RPCListen are the addresses the quorum node binds
	// (quorum.Config RaftBind and RPCBind); empty means its Voters entry.
	RaftListen, RPCListen string
}

// member is a broker's membership of its metadata quorum: the quorum
// node and the apply loop that feeds the node's metadata to the broker.
//
// Goroutines: the quorum node's own, its heartbeat loop, and the apply
// loop (applyLoop), ended by stop.
type member struct {
	nodeID int32
	logger *slog.Logger
	// replicationFactor is default.replication.factor: the replication
	// factor of topics created with -1 and of auto-created ones.
	replicationFactor int32
	node              *quorum.Node
	broker            *Broker // set once the broker has started
	stopHeartbeats    func()
	// configs are the topic configs last applied (apply loop only).
	configs map[string]map[string]string

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	done   chan struct{} // closed when the apply loop ends

	// appliedMu guards applied and appliedCh: the index of the last image
	// the apply loop applied without error, and a channel closed (and
	// replaced) whenever it grows.
	appliedMu sync.Mutex
	applied   uint64
	appliedCh chan struct{}
	// firstApplied is the index of the first image the apply loop
	// applied (tried to), once firstAppliedSet; under appliedMu.
	firstApplied    uint64
	firstAppliedSet bool
}

// aloneStartTimeout bounds how long a cluster of one waits at start for
// its quorum to elect itself and register its broker (milliseconds, as a
// rule).
const aloneStartTimeout = 30 * time.Second

// startMember opens the quorum node in cfg.DataDir/quorum, starts the
// broker over cfg.DataDir/broker with the quorum as its controller,
// registers it and starts applying the quorum's metadata. A cluster of
// one returns once its broker is registered, so its Metadata lists
// itself from the first request.
func startMember(ctx context.Context, cfg Config) (*Broker, error) {
	var qc QuorumConfig
	if cfg.Quorum != nil {
		qc = *cfg.Quorum
	}
	alone := len(qc.Voters) == 0
	if alone {
		qc.Voters = map[int32]quorum.VoterAddrs{cfg.NodeID: {}}
	}
	root := cfg.DataDir
	if err := checkDataDir(root); err != nil {
		return nil, err // says what to do; the node id adds nothing
	}
	props := maps.Clone(cfg.Properties)
	rf := int32(1)
	if v, ok := props["default.replication.factor"]; ok {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("broker %d: default.replication.factor %q: must be an integer of at least 1", cfg.NodeID, v)
		}
		rf = int32(n)
		// The quorum places the replicas; the broker's own setting
		// serves only 1.
		delete(props, "default.replication.factor")
	}
	rebalance, err := leaderRebalance(props)
	if err != nil {
		return nil, fmt.Errorf("broker %d: %w", cfg.NodeID, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &member{nodeID: cfg.NodeID, logger: logger.With("node", cfg.NodeID), replicationFactor: rf,
		done: make(chan struct{}), appliedCh: make(chan struct{}), configs: map[string]map[string]string{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	node, err := quorum.Open(quorum.Config{
		NodeID: cfg.NodeID, Voters: qc.Voters, DataDir: filepath.Join(root, quorumDirName),
		HeartbeatInterval: qc.HeartbeatInterval, SessionTimeout: qc.SessionTimeout,
		ElectionTimeout: qc.ElectionTimeout, Logger: logger.With("component", "quorum"),
		SourceAddress: qc.SourceAddress, RaftBind: qc.RaftListen, RPCBind: qc.RPCListen,
		LeaderRebalance: rebalance,
	})
	if err != nil {
		m.cancel()
		return nil, fmt.Errorf("broker %d: %w", cfg.NodeID, err)
	}
	m.node = node
	cfg.Properties, cfg.DataDir = props, filepath.Join(root, brokerDirName)
	cfg.Replication = &ReplicationConfig{
		ISR:           quorumISR{node: node},
		ResolveBroker: m.resolveBroker,
		Topics:        quorumTopics{m: m},
		// Kafka's default of 3, or fewer in a smaller cluster: the
		// coordinators wait for that many live brokers rather than
		// creating their topics short of replicas.
		InternalReplicationFactor: int32(min(3, len(qc.Voters))),
		Dial:                      dialerFrom(qc.SourceAddress),
		Alone:                     alone,
		ProducerIDs:               quorumProducerIDs{node: node, brokerID: cfg.NodeID},
		GroupConfigs:              quorumGroupConfigs{node: node},
	}
	b, err := start(ctx, cfg)
	if err != nil {
		m.cancel()
		node.Close()
		return nil, fmt.Errorf("broker %d: %w", cfg.NodeID, err)
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
	b.member = m
	if alone {
		ctx, cancel := context.WithTimeout(m.ctx, aloneStartTimeout)
		err := m.waitRegistered(ctx, reg)
		cancel()
		if err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// stop ends the apply loop and the heartbeats (so the controller fences
// this broker after its session timeout); the broker closes next, then
// the node (closeNode).
func (m *member) stop() {
	m.cancel()
	<-m.done
	m.stopHeartbeats()
}

// waitRegistered waits until the quorum's image holds reg, unfenced, and
// the apply loop has applied it.
func (m *member) waitRegistered(ctx context.Context, reg quorum.BrokerRegistration) error {
	_, err := m.node.WaitFor(ctx, func(img *quorum.Image) bool {
		b, ok := img.Broker(reg.ID)
		return ok && !b.Fenced && b.Host == reg.Host && b.Port == reg.Port
	})
	if err == nil {
		err = m.waitApplied(ctx)
	}
	if err != nil {
		return fmt.Errorf("broker %d: registering with its quorum: %w", m.nodeID, err)
	}
	return nil
}

// legacyLayoutFile is at the top of a data directory written by a single
// broker before a single broker ran as a cluster of one.
const legacyLayoutFile = topicsFile

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

// dialerFrom is the broker's dial hook for connections to other brokers:
// from source when set, nil (kgo's default) otherwise. quorum.Open has
// already refused a source that is not an IP address.
func dialerFrom(source string) func(ctx context.Context, network, address string) (net.Conn, error) {
	if source == "" {
		return nil
	}
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 10 * time.Second}
	return dialer.DialContext
}

// registration is the broker as the quorum registers it: its
// inter-broker listener (Host, Port) and every listener by name.
func (m *member) registration() (quorum.BrokerRegistration, error) {
	addr := m.broker.AdvertisedAddr()
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return quorum.BrokerRegistration{}, fmt.Errorf("broker %d: advertised address %q: %w", m.nodeID, addr, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return quorum.BrokerRegistration{}, fmt.Errorf("broker %d: advertised port %q: %w", m.nodeID, portText, err)
	}
	reg := quorum.BrokerRegistration{ID: m.nodeID, Host: host, Port: int32(port)}
	for _, l := range m.broker.AdvertisedListeners() {
		reg.Listeners = append(reg.Listeners, quorum.Endpoint{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	return reg, nil
}

// QuorumNode returns the metadata quorum node the broker runs beside
// itself; nil for a broker started with [Config.Replication] (tests).
func (b *Broker) QuorumNode() *quorum.Node {
	if b.member == nil {
		return nil
	}
	return b.member.node
}

// resolveBroker returns the registered listener of broker id.
func (m *member) resolveBroker(id int32) (string, error) {
	b, ok := m.node.Image().Broker(id)
	if !ok {
		return "", fmt.Errorf("broker %d is not registered", id)
	}
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), nil
}

// applyRetry is how soon a failed apply is tried again without a change.
const applyRetry = 500 * time.Millisecond

// applyLoop applies every image the quorum publishes until stop. A failed
// apply (a partition that could not be opened, say) is retried on the next
// change or after applyRetry.
func (m *member) applyLoop() {
	defer close(m.done)
	if !m.waitCaughtUp() {
		return
	}
	known := map[string][16]byte{} // topics of the last applied image
	for {
		img := m.node.Image()
		m.appliedMu.Lock()
		if !m.firstAppliedSet {
			m.firstApplied, m.firstAppliedSet = img.Index(), true
		}
		m.appliedMu.Unlock()
		var retry <-chan time.Time
		if err := m.apply(img, known); err != nil {
			if m.ctx.Err() != nil {
				return
			}
			m.logger.Warn("broker: apply metadata", "index", img.Index(), "err", err)
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

// waitCaughtUp holds the apply loop back until the node's image holds
// this process's registration (quorum.Node.Registered): every change the
// quorum committed before it. A restarted broker's node first replays its
// snapshot and then its log entry by entry, and an image from that replay
// can be older than what the broker did before the restart: it may name
// this broker leader of partitions led elsewhere since, or lack a topic
// created after the snapshot, which a transaction coordinator loaded from
// it would take for deleted (and skip its markers). Until then the broker
// has no roles: it answers NOT_LEADER_OR_FOLLOWER and loads no
// coordinator, as Kafka's broker does before it has caught up with the
// metadata log. It returns false when the member stops first.
func (m *member) waitCaughtUp() bool {
	select {
	case <-m.node.Registered():
	case <-m.ctx.Done():
		return false
	}
	epoch := uint64(m.node.RegisteredEpoch())
	_, err := m.node.WaitFor(m.ctx, func(img *quorum.Image) bool { return img.Index() >= epoch })
	if err != nil {
		return false
	}
	m.logger.Debug("broker: metadata caught up with the registration", "broker_epoch", epoch)
	return true
}

// apply applies one image: removes the local replicas of topics gone (or
// recreated under another id) since the last image, then applies the
// roles and the configs. known is updated to the image's topics.
func (m *member) apply(img *quorum.Image, known map[string][16]byte) error {
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
	brokers, roles := convertImage(img)
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

// convertImage turns a quorum image into the broker's view of it: every
// registered broker and every partition's role.
func convertImage(img *quorum.Image) ([]ClusterBroker, []PartitionRole) {
	var brokers []ClusterBroker
	for _, b := range img.Brokers() {
		listeners := make([]ListenerEndpoint, len(b.Listeners))
		for i, e := range b.Listeners {
			listeners[i] = ListenerEndpoint{Name: e.Name, Host: e.Host, Port: e.Port}
		}
		brokers = append(brokers, ClusterBroker{ID: b.ID, Host: b.Host, Port: b.Port, Rack: b.Rack, Listeners: listeners, Fenced: b.Fenced})
	}
	var roles []PartitionRole
	for _, p := range img.Partitions() {
		roles = append(roles, quorumRole(p))
	}
	return brokers, roles
}

// quorumRole is a quorum partition as the broker's PartitionRole.
func quorumRole(p quorum.Partition) PartitionRole {
	return PartitionRole{
		Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition,
		Replicas: p.Replicas, ISR: p.ISR, Leader: p.Leader,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
	}
}

func (m *member) setApplied(index uint64) {
	m.appliedMu.Lock()
	defer m.appliedMu.Unlock()
	if index > m.applied {
		m.applied = index
		close(m.appliedCh)
		m.appliedCh = make(chan struct{})
	}
}

// hasApplied reports whether the apply loop has applied an image.
func (m *member) hasApplied() bool {
	m.appliedMu.Lock()
	defer m.appliedMu.Unlock()
	return m.applied > 0
}

// waitApplied waits until the apply loop has applied an image of at least
// the quorum's current index.
func (m *member) waitApplied(ctx context.Context) error {
	return m.waitAppliedIndex(ctx, m.node.Image().Index())
}

// waitCaughtUpApplied waits until the apply loop has applied its first
// image (after waitCaughtUp): topic administration from a member that has
// just started goes to the quorum once the member has registered and
// holds everything committed before, so that it is judged on a view that
// counts this broker.
func (m *member) waitCaughtUpApplied(ctx context.Context) error {
	return m.waitAppliedIndex(ctx, 1)
}

// waitAppliedIndex waits until the apply loop has applied an image of at
// least index want.
func (m *member) waitAppliedIndex(ctx context.Context, want uint64) error {
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
			return fmt.Errorf("broker %d: waiting to apply metadata %d (applied %d): %w", m.nodeID, want, applied, ctx.Err())
		case <-m.ctx.Done():
			return fmt.Errorf("broker %d: closed", m.nodeID)
		}
	}
}

// quorumISR is the broker's ISRChanger on the quorum.
type quorumISR struct{ node *quorum.Node }

func (c quorumISR) AlterPartition(ctx context.Context, topic string, partition, leaderEpoch, partitionEpoch int32, isr []int32) (PartitionRole, error) {
	p, err := c.node.AlterPartition(ctx, topic, partition, leaderEpoch, partitionEpoch, isr)
	if err != nil {
		return PartitionRole{}, err
	}
	return quorumRole(p), nil
}

// leaderRebalance reads auto.leader.rebalance.enable and its interval and
// threshold from the broker's properties (validated as the broker's own
// settings; Kafka's defaults: on, 300 s, 10 %) for the quorum's controller.
func leaderRebalance(props map[string]string) (quorum.LeaderRebalance, error) {
	config, err := newBrokerConfig(props)
	if err != nil {
		return quorum.LeaderRebalance{}, err
	}
	s, err := parseSettings(config)
	if err != nil {
		return quorum.LeaderRebalance{}, err
	}
	return s.LeaderRebalance, nil
}
