// Package broker is a Kafka broker, always one member of a replicated
// cluster — a single broker is a cluster of one — whose partitions it
// leads or follows as the controller decides ([Broker.ApplyPartitionRoles];
// the leader side in [partition.Partition.BecomeLeader],
// [partition.Partition.RecordFollowerFetch] and Broker.maintainISRs, the
// follower side in the replicaFetcher goroutines and
// [partition.Partition.AppendReplicated]; client topic administration goes
// to the controller, a [TopicController]). The controller is the metadata
// quorum (package quorum) the broker runs beside itself, KRaft-style in
// combined mode, with one in-process voter when alone ([QuorumConfig];
// the glue is member, started by [Start]); the replication tests put a
// fake in its place ([Config.Replication]). It is a TCP listener speaking the
// Kafka protocol, one file per Kafka API handler: Produce, Fetch,
// ApiVersions and SASL here, on the connection (handleProduce,
// handleFetch, ...); every other API in package api, whose handlers see
// an [api.Request] — the connection's authorization and listener and the
// narrow [api.Services] the broker implements (groupService,
// transactionService, topicService, clusterService, adminService,
// aclService, credentialService) — and never the Broker. Then topics
// whose partitions are [partition.Partition]s (package partition: the [storage.Log] segmented log, producer and
// transaction state, role and high watermark, and the one append path,
// [partition.Partition.Append]; the broker binds each to its topic,
// topicPartition, and opens it in openPartition), the group coordinator
// ([group.Coordinator]) and the transaction coordinator ([txn.Coordinator];
// partitions' side of transactions — last stable offset, KIP-890
// verification, markers — in package partition, which asks the
// coordinator through [partition.TxnVerifier], implemented by produceTxn),
// both sharded by the replicated internal topics' partitions led here
// (coordinatorShards), the broker settings table (brokerSettings)
// and the typed settings it is parsed into once at start (settings, by
// parseSettings), the connection limits (connectionLimiter: connections
// in total and per IP, checked at accept; in-flight request bytes,
// checked by each reader), the one table mapping errors to Kafka error
// codes (package errcode, below both the broker and package api), and,
// with [Config.Metrics], the hooks feeding broker/metrics (Broker.configureMetrics and the count
// hooks such as Broker.countProduced: the request time split, data and
// transaction counters, the scrape-time log and group figures).
//
// Goroutines and ownership:
//
//   - One accept loop per listener ([Start] → openListeners, then
//     Broker.acceptLoop) owns that listener.
//   - Each connection has a reader goroutine and a writer goroutine
//     (connection.serve and connection.writeLoop). The reader reads frames
//     in order and runs each request's handler; handlers that must not
//     block the reader (Fetch long polls, the durability wait of acks=all)
//     finish on their own goroutine. The writer sends responses strictly
//     in request order.
//   - Produce appends happen in the reader goroutine, so one connection's
//     batches reach each partition in arrival order; the partition's
//     append lock (Partition.appendMu) orders appends from different
//     connections.
//   - Topic metadata (Broker.topics, topicIDs, each topic's partition list)
//     is guarded by Broker.topicsMu; a topic's config is an immutable
//     snapshot swapped atomically.
//   - The retention goroutine applies retention to every partition.
//   - log.cleaner.threads log cleaner goroutines compact the logs whose
//     cleanup.policy includes compact (logCleaner.run), the internal
//     topics' logs included.
//   - The transaction coordinator's core (broker/txn) starts no goroutine;
//     its driver ([txn.GoroutineDriver], started by
//     [txn.NewCoordinator]) runs a ticker that calls Tick and one
//     goroutine per ending transaction that steps its completion, which
//     writes markers into partitions under their append lock. The group
//     coordinator's core likewise has only the ticker its driver
//     ([group.StartTicker]) runs.
//   - The coordinators are sharded by the partitions of the replicated
//     internal topics this broker leads (coordinatorShards, synced by
//     Broker.syncGroupShards and Broker.syncTxnShards):
//     ApplyPartitionRoles starts one goroutine per newly led partition
//     that loads its coordinator, and closes a shard that lost leadership
//     on another; each shard runs the drivers above. Markers and KIP-890
//     verifications for other brokers go out through one franz-go client
//     per peer broker (peers, Broker.peerRequest).
//   - One replica fetcher goroutine per source leader broker
//     (replicaFetcher.run) truncates and appends the partitions this
//     broker follows, under their append locks; the ISR maintenance
//     goroutine (Broker.maintainISRs) asks the controller to
//     shrink or expand the ISRs of partitions led here, holding no lock
//     while it waits for the answer. ApplyPartitionRoles runs on its
//     caller's goroutine.
//   - Each partition's idempotent-producer state is guarded by its append
//     lock; the producer-expiry goroutine takes that lock to forget idle
//     producers ([partition.Partition.ExpireProducers]). Producer
//     ids come from producerIDs, an allocator of blocks the controller
//     hands out (safe for concurrent use), which asks for the next block
//     on a goroutine of its own once 90% of the current one is used.
//
// # Locks and disk I/O
//
// This is the one list of the broker's mutexes, outermost first: a
// goroutine holding one may take only those below it. "I/O" says what
// disk work may run under it; everything not listed as allowing I/O is
// held only to read or publish memory.
//
//  0. replication.applyMu: serializes
//     ApplyPartitionRoles. I/O: through what it calls — creating or
//     growing a replica's topic (under 1), a new leader's leader-epoch
//     checkpoint (under 6).
//  1. Broker.metadataMu (taken by createTopicWithID, deleteTopic,
//     addPartitions and setTopicConfigs): serializes topic metadata changes
//     (create, delete, add partitions, alter configs). I/O: opening and
//     deleting partition logs, writing topics.json. Lookups never take it.
//  2. Broker.topicsMu (RW; lookups such as topicByName take it for
//     reading): the topic maps, pending topic names and partition lists.
//     No I/O: a topic being created holds only its reserved name
//     (pendingTopics), so lookups of other topics never wait on the disk;
//     a create of the same name waits for the first.
//     Broker.connsMu (the connection set and the connection limits'
//     counts in connectionLimiter) is a leaf beside it;
//     connectionLimiter.bytesMu (the in-flight request bytes) is another.
//  3. Transaction coordinator (broker/txn, see its doc): an id's
//     entry.mu, then Coordinator.mu. I/O under entry.mu: the
//     __transaction_state append and its durability wait. Markers are
//     written by the driver's completion goroutine without entry.mu, each under
//     the data partition's locks below.
//  4. Group coordinator (broker/group, see its doc): group.mu, then
//     Coordinator.mu, then the offset store's mu. I/O under group.mu: the
//     __consumer_offsets append.
//  5. [partition.Partition]'s snapshotMu: producer snapshot file writes,
//     and close, delete and truncate, which take it before appendMu. I/O:
//     the snapshot (temporary file, fsync, rename, directory fsync).
//  6. [partition.Partition]'s appendMu: appends, markers, the producer
//     state (every origin's [partition.Partition.Append] runs under it).
//     I/O: the storage append itself and what storage still does under
//     its own append lock (below); not producer snapshots (encoded under
//     it, written after it is released), not retention's file removal,
//     not KIP-890 verification (done before taking it).
//     With replication: a follower's appends of fetched batches, its
//     truncation (with snapshotMu), and the leader-epoch checkpoint
//     rewrite (once per leader change and per truncation).
//     The Partition's replicaMu (the leader's follower positions and its
//     pending ISR) comes after it, never across I/O; its notifyMu is a
//     leaf under both. Package partition's doc has the same order in
//     detail.
//  7. storage.Log (broker/storage, see Log): removeMu, then appendMu,
//     then checkpointMu, then mu (RW), then durability.mu. Under its
//     appendMu, still: the write(2) of an append; at a roll, the new
//     segment file's creation (fsync of the file and the directory); with
//     log.fsync=interval/always the rolled segment's own fsync, its index
//     files and checkpoint, and the tail of the flush every 64 MiB (its
//     bulk fsync runs without the lock). Off it: with log.fsync=never the
//     flusher goroutine syncs rolled segments and writes their index files
//     and checkpoint (under removeMu and checkpointMu); retention unlinks
//     files under removeMu only; Read scans the files with no lock held
//     (it captures the segments under mu and keeps their files open by
//     reference). mu is never held across I/O but by a full truncation.
//  8. producers.IDAllocator.mu: a leaf, no I/O; a block request to the
//     controller (or, with a fake controller, the id block file rewrite
//     under FileBlockReserver.mu) runs without it.
//  9. fetcherManager.mu, then replicaFetcher.mu:
//     leaves guarding which partitions each fetcher follows; no I/O.
//  10. coordinatorShards.mu (one per internal topic)
//     and peers.mu: leaves guarding the coordinator
//     shards and the clients to other brokers; no I/O (a shard's
//     coordinator is loaded and closed on goroutines of its own, without
//     it). A shard's coordinator takes its own locks (3, 4); its appends go through the internal
//     partition's locks (5, 6) and wait for the ISR with none held, and
//     its requests to other brokers hold no broker lock.
//  11. auth.Store.writeMu, then auth.Store.mu (broker/auth; the store is
//     Broker.credentials): leaves. I/O under writeMu: the SCRAM
//     credentials file rewrite of an AlterUserScramCredentials (or the
//     users file at start); mu, which every SASL authentication reads, is
//     held only to read or swap the credential map.
//  12. logCleaner.mu: a leaf guarding which logs are
//     being cleaned, failed or stalled; no I/O. A cleaner goroutine takes
//     a partition's appendMu (6) only to read its last stable offset and
//     producers' last batches, then calls storage's Clean with no broker
//     lock held; Clean takes the log's own locks (7: cleanMu, removeMu,
//     appendMu briefly per swap). The __consumer_offsets store's
//     partitionTxns.mu (broker/group) is held across that store's append
//     and aborted-index write, under the coordinator's group.mu (4).
//  13. highWatermarkCheckpoint.mu: a leaf taken with no other lock held
//     (the high watermarks are read first, without it). I/O: the
//     broker's one high-watermark checkpoint file, every
//     replica.high.watermark.checkpoint.interval.ms and at close.
//
// storage.WriteFileAtomic is the one way the broker replaces a file
// (topics.json, producer snapshots, the producer-id file, storage's
// checkpoint, the high-watermark checkpoint, the SCRAM credentials file
// with WriteFileAtomicMode),
// through the storage.FS the broker was started with.
//
// What blocks a connection's reader goroutine: every handler runs on it
// except Fetch long polls, the durability wait of acks=all Produce, and
// the coordinator calls that park (JoinGroup, SyncGroup, InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn), which finish on their own
// goroutine. So a connection's next request waits for: its Produce's
// partition appendMu (and the disk work listed under 6 and 7 that another
// append holding it does); an auto-created topic's partition opens and
// topics.json write (its own request only); the offset store append
// (and its durability wait) of the group calls that run on the reader:
// OffsetCommit, TxnOffsetCommit, OffsetDelete, DeleteGroups, and any that
// completes a rebalance (LeaveGroup, for one); and the
// KIP-890 implicit add: a transactional Produce v12+ under
// transaction.version 2 whose partition is not yet in the transaction
// runs AddPartitionsToTxn on the reader, which takes the transactional
// id's entry.mu and waits for the __transaction_state append to be
// durable, so the connection reads nothing more until it is.
// That stays on the reader: appends of one connection must reach each
// partition in arrival order, and the add precedes its batch's append.
// SASL runs on the reader too (connection.saslStep): a SaslAuthenticate
// answer waits for its PBKDF2 derivation (PLAIN; 4096+ iterations, about
// a millisecond) and an AlterUserScramCredentials for the credentials
// file's durable rewrite; the connection's next request waits for them.
package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/api"
	"github.com/exactly-eos/exactly/broker/auth"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// producerIDsFile is the file in the data directory in which brokers
// before producer-id blocks from the quorum reserved their blocks
// (producers.FileBlockReserver); a member only reads it, for its floor
// (cluster_producer_ids.go). producerIDBlockSize ids are handed out at a
// time, the quorum's block size.
const (
	producerIDsFile     = "producer-ids"
	producerIDBlockSize = quorum.ProducerIDBlockSize
)

// Config configures an embedded broker.
type Config struct {
	// NodeID is the broker's id in Metadata responses.
	NodeID int32
	// Listen is the TCP address to listen on, e.g. "127.0.0.1:9092" or
	// "127.0.0.1:0" for any free port: one PLAINTEXT listener named
	// PLAINTEXT. The listeners setting (Properties), when set, wins over
	// it (listenerSpecs).
	Listen string
	// Advertised is the host:port clients of Listen are told to connect
	// to; empty means the listener's actual address. With the listeners
	// setting it must be empty: advertised.listeners takes its place.
	Advertised string
	// DataDir is the member's data directory: quorum/ holds the metadata
	// quorum's raft log and snapshots, broker/ the broker's topic
	// metadata, one directory per partition and its other files. A
	// directory of the layout of before (topics.json at its top) is
	// refused with what to do.
	DataDir string
	// Properties are broker settings by Kafka's names (see
	// [BrokerSettingNames]);
	// unknown keys make Start fail.
	Properties map[string]string
	// UsersFile, if set, is a YAML file of users (broker/auth's
	// LoadUsersFile) whose SCRAM credentials Start puts in the credential
	// store before listening; its users overwrite the store's entries for
	// them, other users stay. Empty: the store as it is.
	UsersFile string
	// Logger receives the broker's logs; nil discards them.
	Logger *slog.Logger
	// Quorum configures the metadata quorum node the broker runs beside
	// itself; nil is a cluster of one (see [QuorumConfig]).
	Quorum *QuorumConfig
	// Replication, if set, replaces the quorum: the broker runs no quorum
	// node, and whoever set it gives partitions their leader or follower
	// roles through [Broker.ApplyPartitionRoles] (the replication tests'
	// fake controller). Nil: the broker's own quorum (Quorum).
	Replication *ReplicationConfig
	// Metrics, if set, receives the broker's metrics (broker/metrics);
	// nil turns them off at the cost of a nil check per event. Serving
	// them over HTTP is the caller's job (metrics.Serve).
	Metrics *metrics.Broker

	// beforeMarkers, if set, runs before every marker write of the
	// transaction coordinator; an error makes the coordinator retry. Tests
	// only (it lets a test kill the broker between PrepareCommit and the
	// markers).
	beforeMarkers func(ctx context.Context) error
	// fs, if set, is the file system partition logs, producer snapshots,
	// topics.json and the producer-id file go through; nil is the OS's.
	// Tests only (a storage.FaultFS injects faults).
	fs storage.FS
}

// Broker is a running Kafka broker, one member of a cluster (of one,
// alone).
type Broker struct {
	nodeID  int32
	dataDir string
	config  brokerConfig
	fs      storage.FS // Config.fs, or storage.OSFS
	logger  *slog.Logger
	// listeners are the open listeners, in the listeners setting's order
	// (openListeners); read-only after Start.
	listeners []*listener
	// advertisedHost and advertisedPort are the inter-broker listener's
	// advertised address (interBrokerListener; AdvertisedAddr, what a
	// cluster member registers for the other brokers).
	advertisedHost string
	advertisedPort int32
	maxFrameSize   int32

	// highWatermarks is the broker's high-watermark checkpoint file.
	highWatermarks highWatermarkCheckpoint

	// producerIDs allocates producer ids for InitProducerId, from the
	// controller's blocks (openProducerIDs); closed by Close.
	producerIDs *producers.IDAllocator
	// producerOptions configure every partition's producer state.
	producerOptions producers.Options

	// authorizer checks every request against the ACLs
	// (connection.authorized);
	// nil when authorizer.class.name is empty (everything allowed). Set
	// by Start, then read-only.
	authorizer *acl.Authorizer

	// cleaner is the log cleaner's state (startLogCleaner), set by Start.
	cleaner *logCleaner

	// transactionVersion is the transaction.version setting (0–2); 2 is
	// KIP-890 part 2.
	transactionVersion int16
	// beforeMarkers is Config.beforeMarkers (tests only).
	beforeMarkers func(ctx context.Context) error
	// metrics is Config.Metrics (nil = off); read-only.
	metrics *metrics.Broker
	// shares is the share-group state of the partitions led here (set by
	// start, then read-only; its own locks guard its state).
	shares *shareManager

	// services is what package api's handlers see of the broker
	// (apiServices), built once.
	services     *api.Services
	servicesOnce sync.Once
	// credentials are the SCRAM credentials SASL checks and
	// Describe/AlterUserScramCredentials manage (openCredentials); set by
	// Start.
	credentials *auth.Store
	// saslStats counts SASL outcomes (connection.saslStep, saslFail).
	saslStats saslStats
	// ready is set at the end of Start: logs recovered, coordinators
	// loaded (see Ready).
	ready atomic.Bool
	// replication is the replication machinery (set by Start, then
	// read-only).
	replication *replication
	// member is the broker's membership of its metadata quorum; nil with
	// Config.Replication (set by startMember, then read-only).
	member *member

	// ctx is cancelled by Close; long polls and durability waits end on it.
	ctx    context.Context
	cancel context.CancelFunc

	// metadataMu serializes changes of topic metadata (create, delete,
	// add partitions, alter configs) and the topics.json writes that
	// persist them, so the file is written in publication order. It is
	// held across that disk I/O; lookups never take it. Lock order:
	// metadataMu before topicsMu.
	metadataMu sync.Mutex
	// topicsMu guards topics, topicIDs, pendingTopics and every topic's
	// partitions slice (which is replaced, never modified in place). It is
	// held only to read or publish them, never across disk I/O.
	// clusterID is set by Start and read-only after.
	topicsMu  sync.RWMutex
	clusterID string
	topics    map[string]*topic
	topicIDs  map[[16]byte]*topic
	// pendingTopics reserves the names of topics being created
	// (createTopic), so concurrent creates of one name agree.
	pendingTopics map[string]*pendingTopic

	// connsMu guards conns, the live connections, so Close can stop them.
	connsMu sync.Mutex
	conns   map[*connection]struct{}
	closing bool
	// limits enforces the connection limits (connectionLimiter); its
	// connection counts are guarded by connsMu.
	limits *connectionLimiter

	connections sync.WaitGroup // one per connection (reader+writer)
	background  sync.WaitGroup // accept loop, retention loop, producer expiry loop, cleaner goroutines
	closeOnce   sync.Once
	closeErr    error
}

// Start opens the data directory and the broker's metadata quorum node,
// loads the topics, starts listening and registers with the quorum. The
// broker runs until Close (or until ctx is cancelled, which closes it).
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("broker: no data directory")
	}
	if cfg.Replication == nil {
		return startMember(ctx, cfg)
	}
	cfg.DataDir = filepath.Join(cfg.DataDir, brokerDirName)
	return start(ctx, cfg)
}

// start starts the broker over cfg.DataDir (the broker's own directory,
// no longer the member's) with cfg.Replication as its controller.
func start(ctx context.Context, cfg Config) (*Broker, error) {
	config, err := newBrokerConfig(cfg.Properties)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("broker: data directory: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	limits, err := newConnectionLimiter(ctx, config.settings.Limits)
	if err != nil {
		return nil, err
	}
	fsys := cfg.fs
	if fsys == nil {
		fsys = storage.OSFS{}
	}
	b := &Broker{
		nodeID:             cfg.NodeID,
		fs:                 fsys,
		dataDir:            cfg.DataDir,
		config:             config,
		logger:             logger,
		maxFrameSize:       config.settings.MaxRequestBytes,
		topics:             map[string]*topic{},
		topicIDs:           map[[16]byte]*topic{},
		pendingTopics:      map[string]*pendingTopic{},
		conns:              map[*connection]struct{}{},
		limits:             limits,
		beforeMarkers:      cfg.beforeMarkers,
		metrics:            cfg.Metrics,
		transactionVersion: config.settings.TransactionVersion,
		producerOptions: producers.Options{
			ExpirationAge: config.settings.ProducerIDExpiration,
			FS:            fsys,
		},
	}
	b.configureMetrics()
	b.shares = newShareManager(b)
	if cfg.Replication == nil || cfg.Replication.ISR == nil || cfg.Replication.Topics == nil {
		return nil, errors.New("broker: replication without an ISR changer or a topic controller")
	}
	b.replication = &replication{config: *cfg.Replication, isrWake: make(chan struct{}, 1)}
	if b.replication.config.GroupConfigs == nil {
		b.replication.config.GroupConfigs = &memoryGroupConfigs{}
	}
	b.replication.groups.topic, b.replication.txns.topic = group.OffsetsTopic, txn.TransactionStateTopic
	if err := b.openCredentials(cfg.UsersFile); err != nil {
		return nil, err
	}
	b.producerIDs, err = openProducerIDs(cfg, fsys, filepath.Join(cfg.DataDir, producerIDsFile))
	if err != nil {
		return nil, fmt.Errorf("broker: producer ids: %w", err)
	}
	b.authorizer, err = openAuthorizer(cfg.DataDir, config.settings.Authorizer)
	if err != nil {
		return nil, err
	}
	if err := b.loadTopics(); err != nil {
		b.closeLogs()
		return nil, err
	}
	specs, err := listenerSpecs(cfg, config.settings)
	interBroker := 0
	if err == nil {
		interBroker, err = interBrokerListener(specs, config.settings.InterBrokerListener, !cfg.Replication.Alone)
	}
	if err == nil {
		b.listeners, err = openListeners(specs)
	}
	if err != nil {
		b.closeLogs()
		return nil, err
	}
	b.advertisedHost, b.advertisedPort = b.listeners[interBroker].advertisedHost, b.listeners[interBroker].advertisedPort
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.background.Add(2 + len(b.listeners))
	for _, l := range b.listeners {
		go b.acceptLoop(l)
	}
	go b.every(b.config.settings.RetentionCheckInterval, b.applyRetention)
	go b.every(b.config.settings.ProducerIDExpirationCheckInterval, b.expireProducers)
	b.startLogCleaner()
	b.replication.fetchers = newFetcherManager(b)
	b.replication.copyThrottle = newByteThrottle(b.config.settings.FollowerReplicationThrottledRate)
	b.background.Add(3)
	go func() {
		defer b.background.Done()
		b.shares.runShareTicker(b.ctx, shareTickInterval)
	}()
	go b.maintainISRs()
	go b.every(b.config.settings.HighWatermarkCheckpointInterval, b.checkpointHighWatermarks)
	go func() {
		select {
		case <-ctx.Done():
			b.Close()
		case <-b.ctx.Done():
		}
	}()
	b.startMetrics()
	b.ready.Store(true)
	for _, l := range b.listeners {
		logger.Info("listening", "listener", l.name, "protocol", l.protocol.String(), "listen", l.net.Addr().String(),
			"advertised", net.JoinHostPort(l.advertisedHost, strconv.Itoa(int(l.advertisedPort))))
	}
	logger.Info("broker started", "node_id", b.nodeID, "listen", b.Addr(), "advertised", b.AdvertisedAddr(),
		"data_dir", b.dataDir, "topics", len(b.topics), "cluster_id", b.clusterID)
	return b, nil
}

// closeListeners closes every listener; their accept loops end.
func (b *Broker) closeListeners() {
	for _, l := range b.listeners {
		l.net.Close()
	}
}

// Addr returns the address the broker's first listener listens on
// (host:port), with the actual port when it asked for port 0
// (ListenerAddr names the others).
func (b *Broker) Addr() string { return b.listeners[0].net.Addr().String() }

// Close shuts the broker down gracefully: it stops accepting connections,
// stops reading requests, lets in-flight requests finish and their
// responses go out, then flushes and closes every partition log. It is
// safe to call more than once.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		if b.member != nil {
			b.member.stop()
		}
		b.closeListeners()
		b.cancel() // long polls answer now with what they have
		b.connsMu.Lock()
		b.closing = true
		for c := range b.conns {
			c.stopReading()
		}
		b.connsMu.Unlock()
		if !waitTimeout(&b.connections, 10*time.Second) {
			b.logger.Warn("connections did not finish in time; closing them")
			b.connsMu.Lock()
			for c := range b.conns {
				c.netConn.Close()
			}
			b.connsMu.Unlock()
			b.connections.Wait()
		}
		b.background.Wait()
		// A barrier: an ApplyPartitionRoles under way (it may open
		// partitions) finishes before the logs close; later ones see
		// b.ctx cancelled and do nothing.
		b.replication.applyMu.Lock()
		b.replication.applyMu.Unlock()
		b.replication.fetchers.close()
		// Transaction shards go first: their completions write markers
		// into partitions and complete groups' offsets; both append to
		// partitions, so before the logs.
		b.replication.txns.close()
		b.replication.groups.close()
		b.closePeers()
		// After the coordinators and connections, which take ids; before
		// the quorum node, which a block request under way waits on.
		b.producerIDs.Close()
		b.closeErr = b.closeLogs()
		if b.member != nil {
			b.closeErr = errors.Join(b.closeErr, b.member.node.Close())
		}
		b.logger.Info("broker stopped", "node_id", b.nodeID)
	})
	return b.closeErr
}

// waitTimeout waits for wg up to timeout and reports whether it finished.
func waitTimeout(wg *sync.WaitGroup, timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// acceptLoop accepts connections on l until it closes; each listener has
// its own. A connection over max.connections or its address's per-IP
// limit (counted over all listeners) is closed at once, here, without a
// goroutine of its own, so a flood of them costs the broker one accept
// and one close each. A TLS handshake never runs here: the connection's
// goroutine does it (connection.handshake), so a slow client cannot stall
// the loop.
func (b *Broker) acceptLoop(l *listener) {
	defer b.background.Done()
	var backoff time.Duration
	for {
		netConn, err := l.net.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if !acceptRetryable(err) {
				b.logger.Error("accept failed; listener stopped", "listener", l.name, "error", err)
				return
			}
			// Out of file descriptors (or a connection aborted before it
			// was accepted): wait and try again, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			if ok, suppressed := b.limits.refusedLog.allow(time.Now()); ok {
				b.logger.Warn("accept failed; retrying", "error", err, "retry_in", backoff, "refusals_not_logged", suppressed)
			}
			select {
			case <-time.After(backoff):
			case <-b.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		b.admit(netConn, l)
	}
}

// admit registers and starts serving a connection accepted on l, or
// closes it (broker closing, or a connection limit reached). On a TLS
// listener the connection is wrapped in a tls.Conn here (no I/O) and
// handshakes in serve.
func (b *Broker) admit(netConn net.Conn, l *listener) {
	addr := clientAddr(netConn)
	b.connsMu.Lock()
	if b.closing {
		b.connsMu.Unlock()
		netConn.Close()
		if b.metrics != nil {
			b.metrics.ConnectionRefused()
		}
		return
	}
	if limit := b.limits.admit(addr, len(b.conns)); limit != "" {
		b.connsMu.Unlock()
		netConn.Close()
		if b.metrics != nil {
			b.metrics.ConnectionRefused()
		}
		b.limits.logRefused(b.logger, netConn.RemoteAddr(), limit)
		return
	}
	if l.tls != nil {
		netConn = tls.Server(netConn, l.tls)
	}
	c := newConnection(b, netConn)
	c.addr, c.listener, c.protocol = addr, l, l.protocol
	c.apiRequest() // built before any goroutine of the connection reads it
	b.conns[c] = struct{}{}
	b.connections.Add(1)
	b.connsMu.Unlock()
	if b.metrics != nil {
		b.metrics.ConnectionOpened()
	}
	go c.serve()
}

// acceptRetryable reports whether an accept error is worth retrying: the
// process or system is out of file descriptors, or the peer gave up
// before the connection was accepted.
func acceptRetryable(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

func (b *Broker) forgetConnection(c *connection) {
	b.connsMu.Lock()
	delete(b.conns, c)
	b.limits.forget(c.addr)
	b.connsMu.Unlock()
	if b.metrics != nil {
		b.metrics.ConnectionClosed()
	}
	b.connections.Done()
}

// every runs task every interval (a broker setting), until the broker
// closes. It runs in its own goroutine, counted in b.background.
func (b *Broker) every(interval time.Duration, task func()) {
	defer b.background.Done()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-ticker.C:
			task()
		}
	}
}

// applyRetention applies retention to every partition; it runs every
// log.retention.check.interval.ms.
func (b *Broker) applyRetention() {
	for _, p := range b.allPartitions() {
		deleted, err := p.ApplyRetention()
		if err != nil {
			b.logger.Error("retention failed", "partition", p.Name(), "error", err)
		} else if deleted > 0 {
			b.logger.Info("retention deleted segments", "partition", p.Name(), "segments", deleted)
		}
	}
}

// expireProducers forgets the producers idle for producer.id.expiration.ms
// on every partition; it runs every producer.id.expiration.check.interval.ms.
// It takes each partition's append lock in turn ([partition.Partition.ExpireProducers]),
// so it never runs concurrently with that partition's appends.
func (b *Broker) expireProducers() {
	for _, p := range b.allPartitions() {
		if dropped := p.ExpireProducers(); dropped > 0 {
			b.logger.Info("idle producers expired", "partition", p.Name(), "producers", dropped)
		}
	}
}

// versions is the table of API version ranges the handlers register;
// ApiVersions answers from it.
var versions wire.VersionTable
