package quorum

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// VoterAddrs are one node's two loopback-or-network addresses.
type VoterAddrs struct {
	Raft string // hashicorp/raft's network transport over TCP, host:port
	RPC  string // the quorum's forwarding RPC (rpcServer, callRPC), host:port
}

// Config configures a Node.
type Config struct {
	// NodeID is this node's id (the broker id in combined mode). Voters
	// must hold it.
	NodeID int32
	// Voters is the configured quorum set: node id -> addresses. The three
	// lowest ids (all, if fewer) are the raft voters and bootstrap the
	// cluster; a node with any other id joins as a raft non-voter, which
	// receives the log but does not vote. A joining node's map must hold
	// the voters and itself; the voters' maps need not list it.
	Voters map[int32]VoterAddrs
	// DataDir holds the raft log and stable store (raft.db) and the
	// snapshots (snapshots/). Created if missing; an empty one bootstraps,
	// a used one restarts from its state.
	DataDir string
	// HeartbeatInterval is how often StartHeartbeats heartbeats (default
	// 500ms).
	HeartbeatInterval time.Duration
	// SessionTimeout: a broker with no heartbeat for this long is fenced by
	// the active controller (default 3s).
	SessionTimeout time.Duration
	// ElectionTimeout is raft's heartbeat and election timeout (default
	// 1s); tests use less.
	ElectionTimeout time.Duration
	// Logger receives the node's and raft's logs; nil discards them.
	Logger *slog.Logger
	// SourceAddress, when set, is the local IP address every outbound
	// connection of the node (raft, the forwarding RPC) is dialed from, so
	// a partition proxy in front of the other nodes can cut this node off;
	// empty lets the system choose.
	SourceAddress string
	// RaftBind and RPCBind are the addresses the node listens on for raft
	// and the forwarding RPC; empty means its own Voters entry. They let
	// Voters hold addresses of proxies in front of the nodes while the node
	// binds the real ones; raft always advertises the Voters entry.
	RaftBind, RPCBind string
	// LeaderRebalance is Kafka's auto.leader.rebalance.enable with its
	// interval and threshold; the zero value is off.
	LeaderRebalance LeaderRebalance
}

// LeaderRebalance configures automatic preferred-leader elections: every
// Interval the active controller looks for brokers that do not lead more
// than Percent percent of the partitions whose preferred replica they are
// (while in sync), and elects the preferred replicas of those partitions
// (Kafka's auto.leader.rebalance.enable,
// leader.imbalance.check.interval.seconds,
// leader.imbalance.per.broker.percentage).
type LeaderRebalance struct {
	Enabled  bool
	Interval time.Duration
	Percent  int
}

// inProcessAddress is the raft address of the one voter of an in-process
// quorum (Config.inProcess): its in-memory transport's name.
const inProcessAddress = "in-process"

// inProcess reports whether the quorum is one voter, this node, with no
// addresses: a single broker, the cluster of one. Its raft runs over an
// in-memory transport and it serves no RPC — no other node can ask it
// anything, and it is the leader as soon as it has elected itself.
func (c *Config) inProcess() bool {
	return len(c.Voters) == 1 && c.Voters[c.NodeID] == VoterAddrs{}
}

// maxVoters is the number of voters of KRaft-style combined mode.
const maxVoters = 3

// Node is one member of the metadata quorum (one per broker process): a
// raft node (voter or non-voter) applying the log to the state machine,
// the controller logic that runs while it is the raft leader, and the RPC
// server the other nodes forward requests to.
//
// Goroutines owned by a Node, all ended by Close: raft's own (log, FSM,
// transport), the RPC server's accept and connection goroutines, the
// controller loop (controller.run), the join loop of a non-voter, and one
// heartbeat loop per StartHeartbeats. Node's methods are safe for
// concurrent use.
type Node struct {
	cfg       Config
	logger    *slog.Logger
	voter     bool
	fsm       *fsm
	raft      *raft.Raft
	transport closingTransport
	store     *raftboltdb.BoltStore
	rpc       *rpcServer // nil in process (Config.inProcess)
	ctrl      *controller
	dialer    net.Dialer // outbound connections, from Config.SourceAddress

	// registeredEpoch is the broker epoch of this process's first
	// successful registration (StartHeartbeats), 0 until then; registered
	// is closed when it is set.
	registeredEpoch atomic.Int64
	registered      chan struct{}
	registerOnce    sync.Once

	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the node's own goroutines (controller, join, heartbeats)
	closeOnce sync.Once
	closeErr  error
}

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.HeartbeatInterval <= 0 {
		out.HeartbeatInterval = 500 * time.Millisecond
	}
	if out.SessionTimeout <= 0 {
		out.SessionTimeout = 3 * time.Second
	}
	if out.ElectionTimeout <= 0 {
		out.ElectionTimeout = time.Second
		if out.inProcess() {
			// Nobody else votes or can be cut off: the only wait is the
			// node's own first election, so keep it short.
			out.ElectionTimeout = 50 * time.Millisecond
		}
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if _, ok := out.Voters[out.NodeID]; !ok {
		return out, fmt.Errorf("quorum: node %d is not in Voters", out.NodeID)
	}
	if out.DataDir == "" {
		return out, errors.New("quorum: DataDir is empty")
	}
	return out, nil
}

// raftBind is the address raft listens on.
func (c *Config) raftBind() string {
	if c.RaftBind != "" {
		return c.RaftBind
	}
	return c.Voters[c.NodeID].Raft
}

// rpcBind is the address the forwarding RPC listens on.
func (c *Config) rpcBind() string {
	if c.RPCBind != "" {
		return c.RPCBind
	}
	return c.Voters[c.NodeID].RPC
}

// voterIDs returns the ids of the raft voters: the maxVoters lowest ids.
func voterIDs(voters map[int32]VoterAddrs) []int32 {
	ids := make([]int32, 0, len(voters))
	for id := range voters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids[:min(len(ids), maxVoters)]
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// Open starts a node: it opens (or creates) the stores in DataDir,
// bootstraps the raft configuration if this is a voter with no state yet,
// and starts raft, the RPC server and the controller loop. A non-voter
// keeps asking the leader to add it until it is in the configuration.
func Open(cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	dialer, err := sourceDialer(cfg.SourceAddress)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, logger: cfg.Logger.With("node", cfg.NodeID), fsm: newFSM(cfg.Logger), dialer: dialer, registered: make(chan struct{})}
	n.voter = slices.Contains(voterIDs(cfg.Voters), cfg.NodeID)
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.openRaft(); err != nil {
		n.cancel()
		return nil, err
	}
	n.ctrl = newController(n)
	if !cfg.inProcess() {
		n.rpc, err = startRPCServer(cfg.rpcBind(), n.ctrl.handle, n.logger)
		if err != nil {
			n.closeRaft()
			n.cancel()
			return nil, err
		}
	}
	n.wg.Add(1)
	go n.ctrl.run(n.ctx)
	if !n.voter {
		n.wg.Add(1)
		go n.joinLoop()
	}
	return n, nil
}

func (n *Node) openRaft() error {
	if err := os.MkdirAll(n.cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("quorum: data dir: %w", err)
	}
	logWriter := &hclogWriter{logger: n.logger.With("component", "raft"), inProcess: n.cfg.inProcess()}
	store, err := raftboltdb.NewBoltStore(filepath.Join(n.cfg.DataDir, "raft.db"))
	if err != nil {
		return fmt.Errorf("quorum: open raft store: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStore(filepath.Join(n.cfg.DataDir, "snapshots"), 2, logWriter)
	if err != nil {
		store.Close()
		return fmt.Errorf("quorum: open snapshot store: %w", err)
	}
	transport, err := n.openTransport(logWriter)
	if err != nil {
		store.Close()
		return err
	}
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(n.cfg.NodeID)
	rc.HeartbeatTimeout = n.cfg.ElectionTimeout
	rc.ElectionTimeout = n.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = n.cfg.ElectionTimeout / 2
	rc.CommitTimeout = 10 * time.Millisecond
	rc.NoLegacyTelemetry = true
	rc.Logger = newHCLogger(logWriter)
	existing, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		transport.Close()
		store.Close()
		return fmt.Errorf("quorum: inspect raft state: %w", err)
	}
	r, err := raft.NewRaft(rc, n.fsm, store, store, snaps, transport)
	if err != nil {
		transport.Close()
		store.Close()
		return fmt.Errorf("quorum: start raft: %w", err)
	}
	n.raft, n.transport, n.store = r, transport, store
	if !existing && n.voter {
		var servers []raft.Server
		for _, id := range voterIDs(n.cfg.Voters) {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: serverID(id), Address: n.raftAddress(id)})
		}
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			n.closeRaft()
			return fmt.Errorf("quorum: bootstrap: %w", err)
		}
	}
	return nil
}

// closingTransport is a raft transport that can be closed: the TCP one, or
// the in-memory one of an in-process quorum.
type closingTransport interface {
	raft.Transport
	Close() error
}

// openTransport opens raft's transport: in memory for an in-process
// quorum, else TCP on the raft bind address, advertising the Voters entry.
func (n *Node) openTransport(logWriter *hclogWriter) (closingTransport, error) {
	if n.cfg.inProcess() {
		_, transport := raft.NewInmemTransport(inProcessAddress)
		return transport, nil
	}
	stream, err := newStreamLayer(n.cfg.raftBind(), n.cfg.Voters[n.cfg.NodeID].Raft, n.dialer)
	if err != nil {
		return nil, err
	}
	return raft.NewNetworkTransport(stream, 3, 5*time.Second, logWriter), nil
}

// raftAddress is voter id's raft address in the bootstrap configuration.
func (n *Node) raftAddress(id int32) raft.ServerAddress {
	if n.cfg.inProcess() {
		return inProcessAddress
	}
	return raft.ServerAddress(n.cfg.Voters[id].Raft)
}

func (n *Node) closeRaft() {
	if err := n.raft.Shutdown().Error(); err != nil {
		n.logger.Warn("quorum: raft shutdown", "err", err)
	}
	n.transport.Close()
	n.store.Close()
}

// Close stops the node: its heartbeat loops, the controller, the RPC
// server and raft, and closes the stores. Requests in flight fail with
// ErrClosed. Close is idempotent.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		// raft first: requests blocked in raft.Apply (RPC handlers, the
		// controller, heartbeat loops) fail with ErrClosed at once.
		n.cancel()
		if err := n.raft.Shutdown().Error(); err != nil {
			n.closeErr = fmt.Errorf("quorum: raft shutdown: %w", err)
		}
		if n.rpc != nil {
			n.rpc.close()
		}
		n.wg.Wait()
		n.transport.Close()
		if err := n.store.Close(); err != nil && n.closeErr == nil {
			n.closeErr = fmt.Errorf("quorum: close raft store: %w", err)
		}
	})
	return n.closeErr
}

// ID returns the node id.
func (n *Node) ID() int32 { return n.cfg.NodeID }

// Image returns the current metadata image (lock-free; see Image).
func (n *Node) Image() *Image { return n.fsm.current() }

// WaitFor returns the first image (the current one or a later one) for
// which cond is true, or ctx's error.
func (n *Node) WaitFor(ctx context.Context, cond func(*Image) bool) (*Image, error) {
	for {
		img := n.Image()
		if cond(img) {
			return img, nil
		}
		select {
		case <-img.Changed():
		case <-ctx.Done():
			return img, fmt.Errorf("quorum: node %d waiting for the image: %w", n.cfg.NodeID, ctx.Err())
		case <-n.ctx.Done():
			return img, ErrClosed
		}
	}
}

// LogIndexes are the node's raft log end, commit index (what a majority
// holds) and applied index (what its metadata image reflects): a member
// whose applied index lags the commit index serves stale metadata; a
// commit index that stops moving while the log end grows is a quorum
// that cannot commit.
func (n *Node) LogIndexes() (lastLog, committed, applied uint64) {
	return n.raft.LastIndex(), n.raft.CommitIndex(), n.raft.AppliedIndex()
}

// IsController reports whether this node is the active controller (the
// raft leader, caught up with the log).
func (n *Node) IsController() bool { return n.ctrl.active.Load() }

// ControllerID returns the node id of the raft leader as this node knows
// it, or -1.
func (n *Node) ControllerID() int32 {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return -1
	}
	v, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return int32(v)
}

// IsVoter reports whether this node is one of the raft voters.
func (n *Node) IsVoter() bool { return n.voter }

// BrokerRegistration is what a broker registers: its id and listener.
type BrokerRegistration struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
	// Listeners are every client listener of the broker by name, with
	// the address it advertises (Kafka's registered endpoints): a client
	// is told the brokers' endpoints of the listener it came in on. Host
	// and Port are the inter-broker listener's. Empty for a broker of
	// before listeners were registered: Host and Port serve everyone.
	Listeners []Endpoint `json:"listeners,omitempty"`
}

// Endpoint is one named listener of a broker as advertised.
type Endpoint struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// CreateTopicRequest asks for a topic with Partitions partitions of
// ReplicationFactor replicas each, assigned over the unfenced brokers.
type CreateTopicRequest struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int32             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
}

// RegisterBroker registers (or re-registers) a broker and unfences it; it
// returns the new broker epoch, which heartbeats carry. Leaderless
// partitions whose ISR holds the broker elect it.
func (n *Node) RegisterBroker(ctx context.Context, reg BrokerRegistration) (int64, error) {
	resp, err := n.submit(ctx, rpcRequest{Op: opRegister, Register: &reg})
	return resp.Epoch, err
}

// Heartbeat tells the active controller that broker id (with the epoch of
// its registration) is alive. A fenced broker is unfenced by it. It fails
// with ErrUnknownBroker or ErrStaleBrokerEpoch when the broker must
// register (again).
func (n *Node) Heartbeat(ctx context.Context, id int32, epoch int64) error {
	_, err := n.submit(ctx, rpcRequest{Op: opHeartbeat, Heartbeat: &heartbeatRequest{ID: id, Epoch: epoch}})
	return err
}

// CreateTopic creates a topic and returns it with its assignment.
func (n *Node) CreateTopic(ctx context.Context, req CreateTopicRequest) (Topic, error) {
	resp, err := n.submit(ctx, rpcRequest{Op: opCreateTopic, CreateTopic: &req})
	if err != nil {
		return Topic{}, err
	}
	return *resp.Topic, nil
}

// DeleteTopic deletes a topic.
func (n *Node) DeleteTopic(ctx context.Context, name string) error {
	_, err := n.submit(ctx, rpcRequest{Op: opDeleteTopic, DeleteTopic: &deleteTopicCmd{Name: name}})
	return err
}

// CreatePartitions raises topic's partition count to count and returns the
// topic.
func (n *Node) CreatePartitions(ctx context.Context, topic string, count int32) (Topic, error) {
	resp, err := n.submit(ctx, rpcRequest{Op: opCreatePartitions, CreatePartitions: &createPartitionsCmd{Name: topic, Count: count}})
	if err != nil {
		return Topic{}, err
	}
	return *resp.Topic, nil
}

// SetTopicConfigs replaces topic's config overrides in the metadata (every
// replica applies them) and returns the topic.
func (n *Node) SetTopicConfigs(ctx context.Context, topic string, configs map[string]string) (Topic, error) {
	resp, err := n.submit(ctx, rpcRequest{Op: opSetTopicConfigs, SetTopicConfigs: &setTopicConfigsCmd{Name: topic, Configs: configs}})
	if err != nil {
		return Topic{}, err
	}
	return *resp.Topic, nil
}

// SetGroupConfigs replaces the dynamic configs of group id in the
// metadata (none: removes them); every node's image holds them once
// applied, this node's before it returns. The group need not exist.
func (n *Node) SetGroupConfigs(ctx context.Context, id string, configs map[string]string) error {
	_, err := n.submit(ctx, rpcRequest{Op: opSetGroupConfigs, SetGroupConfigs: &setGroupConfigsCmd{Group: id, Configs: configs}})
	return err
}

// AlterPartition is a partition leader's request to change the ISR
// (Kafka's AlterPartition). It fails with ErrFencedLeaderEpoch or
// ErrInvalidUpdateVersion when an epoch is not the current one, and with
// ErrIneligibleReplica when isr lacks the leader or holds a broker that is
// fenced or not a replica. On success it returns the new partition state
// (partition epoch +1). Its signature matches broker.ISRChanger's.
func (n *Node) AlterPartition(ctx context.Context, topic string, partition, leaderEpoch, partitionEpoch int32, isr []int32) (Partition, error) {
	cmd := alterPartitionCmd{Topic: topic, Partition: partition, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch, ISR: isr}
	resp, err := n.submit(ctx, rpcRequest{Op: opAlterPartition, AlterPartition: &cmd})
	if err != nil {
		return Partition{}, err
	}
	return *resp.Partition, nil
}

// submit executes req on the active controller: here if this node is the
// leader, else through the RPC to the leader. It retries (with backoff,
// bounded by ctx) while there is no controller, the controller moved, or
// the RPC failed in transport. On success it waits until this node's image
// holds the command's effect, so a caller reads its own writes.
//
// A retry after a transport failure or a lost leadership may execute a
// request twice; every command is safe to repeat (a repeated create fails
// with ErrTopicAlreadyExists, a repeated registration yields a new epoch).
func (n *Node) submit(ctx context.Context, req rpcRequest) (rpcResponse, error) {
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		resp, err := n.submitOnce(ctx, req, attempt)
		if err == nil {
			if resp.Index > 0 {
				_, err = n.WaitFor(ctx, func(img *Image) bool { return img.Index() >= resp.Index })
			}
			return resp, err
		}
		if !errors.Is(err, ErrNotController) && !errors.Is(err, errTransport) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return rpcResponse{}, fmt.Errorf("quorum: %s: %w (after %d attempts; last: %v)", req.Op, ctx.Err(), attempt+1, err)
		case <-n.ctx.Done():
			return rpcResponse{}, fmt.Errorf("quorum: %s: %w", req.Op, ErrClosed)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// submitOnce sends req to the leader this node knows; when it knows none
// (a non-voter before it joined, or during an election) it tries the voters
// in turn, attempt by attempt, and the non-leaders answer ErrNotController.
func (n *Node) submitOnce(ctx context.Context, req rpcRequest, attempt int) (rpcResponse, error) {
	if n.ctx.Err() != nil {
		return rpcResponse{}, ErrClosed
	}
	leader := n.ControllerID()
	if leader < 0 {
		voters := voterIDs(n.cfg.Voters)
		leader = voters[attempt%len(voters)]
	}
	if leader == n.cfg.NodeID {
		resp := n.ctrl.handle(ctx, req)
		return resp, resp.err()
	}
	addrs, ok := n.cfg.Voters[leader]
	if !ok {
		return rpcResponse{}, fmt.Errorf("%w: leader %d has no configured RPC address", ErrNotController, leader)
	}
	resp, err := callRPC(ctx, n.dialer, addrs.RPC, req)
	if err != nil {
		return resp, err
	}
	if err := resp.err(); errors.Is(err, ErrClosed) {
		// The remote node is closing, not this one: find the next controller.
		return resp, fmt.Errorf("%w: node %d: %v", ErrNotController, leader, err)
	}
	return resp, resp.err()
}

// joinLoop runs on a non-voter until the raft configuration it has
// received holds it: it asks the leader to add it (AddNonvoter).
func (n *Node) joinLoop() {
	defer n.wg.Done()
	ticker := time.NewTicker(n.cfg.HeartbeatInterval)
	defer ticker.Stop()
	for {
		if n.inConfiguration() {
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.SessionTimeout)
		req := rpcRequest{Op: opJoin, Join: &joinRequest{ID: n.cfg.NodeID, Raft: n.cfg.Voters[n.cfg.NodeID].Raft}}
		if _, err := n.submit(ctx, req); err != nil && n.ctx.Err() == nil {
			n.logger.Debug("quorum: join as non-voter", "err", err)
		}
		cancel()
		select {
		case <-n.ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (n *Node) inConfiguration() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == serverID(n.cfg.NodeID) {
			return true
		}
	}
	return false
}

// StartHeartbeats registers reg and heartbeats every HeartbeatInterval
// until stop is called or the node closes; it registers again when the
// controller answers ErrUnknownBroker or ErrStaleBrokerEpoch. stop waits
// for the loop to end.
func (n *Node) StartHeartbeats(reg BrokerRegistration) (stop func()) {
	ctx, cancel := context.WithCancel(n.ctx)
	done := make(chan struct{})
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer close(done)
		n.heartbeatLoop(ctx, reg)
	}()
	return func() { cancel(); <-done }
}

// Registered is closed once the heartbeats started by StartHeartbeats
// have registered the broker for the first time in this process;
// RegisteredEpoch is then that registration's broker epoch, the index of
// its entry in the log. An image of at least that index holds everything
// the quorum had committed before this process registered: a broker
// restarted over its data directory waits for it before it acts on the
// metadata, since the images its node replays first (its snapshot, then
// the log entry by entry) can be older than what it did before the
// restart — a partition led there, a topic created since the snapshot.
func (n *Node) Registered() <-chan struct{} { return n.registered }

// RegisteredEpoch is the broker epoch of the first registration
// (Registered); 0 before it.
func (n *Node) RegisteredEpoch() int64 { return n.registeredEpoch.Load() }

func (n *Node) heartbeatLoop(ctx context.Context, reg BrokerRegistration) {
	var epoch int64
	for ctx.Err() == nil {
		callCtx, cancel := context.WithTimeout(ctx, n.cfg.SessionTimeout)
		var err error
		if epoch == 0 {
			epoch, err = n.RegisterBroker(callCtx, reg)
			// An epoch means the registration took effect, even if this
			// node's image did not catch up with it in time (err): the
			// loop heartbeats with that epoch from now on, so it must
			// count as registered, or Registered would never close (a
			// restarted member then served nothing until it stopped).
			if epoch > 0 {
				n.registerOnce.Do(func() {
					n.registeredEpoch.Store(epoch)
					close(n.registered)
				})
			}
		} else {
			err = n.Heartbeat(callCtx, reg.ID, epoch)
			if errors.Is(err, ErrUnknownBroker) || errors.Is(err, ErrStaleBrokerEpoch) {
				epoch = 0
			}
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			n.logger.Debug("quorum: heartbeat", "broker", reg.ID, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(n.cfg.HeartbeatInterval):
		}
	}
}
