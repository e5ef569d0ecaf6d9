package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/exactly-eos/exactly/broker/clusternode"
)

// repeatedFlag collects every occurrence of a flag.
type repeatedFlag []string

func (r *repeatedFlag) String() string     { return strings.Join(*r, ",") }
func (r *repeatedFlag) Set(v string) error { *r = append(*r, v); return nil }

const brokerDescription = `Runs one Kafka-compatible broker, alone or as a member of a replicated
cluster. Kafka clients use it unmodified; the ones this repository tests
against are franz-go (with franz-go's own kgo test suite in CI),
librdkafka (kcat), sarama and kafka-go.

Alone (no --controller-quorum), the broker is a cluster of one: the same
broker as a cluster member, with a Raft metadata quorum of one voter
inside the process (no port of its own). --data-dir holds quorum/ (the
metadata: topics, partitions, leaders, as a Raft log) and broker/ (one
directory per partition, <topic>-<partition>, the group and transaction
coordinators' __consumer_offsets and __transaction_state among them). A
data directory written by a single broker of an earlier version
(topics.json at its top) is refused at start, saying what to do.

Broker settings use Kafka's server.properties names, from --config-file and
then --config (later wins; a flag given on the command line wins over
both): auto.create.topics.enable, num.partitions,
default.replication.factor (1 on a single broker; a cluster member takes
more), min.insync.replicas, log.segment.bytes,
log.roll.ms/hours, log.retention.ms/minutes/hours, log.retention.bytes,
log.retention.check.interval.ms, log.index.interval.bytes,
log.cleanup.policy (delete; compact or compact,delete for the log cleaner),
log.message.timestamp.type, message.max.bytes, socket.request.max.bytes,
and our extension log.fsync (never | interval:<duration> | always: when
acks=all answers, relative to fsync).
Log compaction: log.cleaner.enable, log.cleaner.threads,
log.cleaner.io.max.bytes.per.second, log.cleaner.backoff.ms and the
defaults of the topic settings min.cleanable.dirty.ratio,
min/max.compaction.lag.ms and delete.retention.ms
(log.cleaner.min.cleanable.ratio, log.cleaner.min.compaction.lag.ms,
log.cleaner.max.compaction.lag.ms, log.cleaner.delete.retention.ms);
offsets.topic.segment.bytes and transaction.state.log.segment.bytes size
the compacted internal topics' segments.
Connection limits (all off by default): max.connections,
max.connections.per.ip, max.connections.per.ip.overrides (host:count,...),
queued.max.request.bytes, and our extension
max.inflight.request.bytes.per.connection; a connection over a limit is
closed and logged, a reader over a byte limit waits.
Listeners, in Kafka's terms (they win over --listen and --advertised):
listeners (e.g. PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093),
listener.security.protocol.map (NAME:PROTOCOL,...; PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL), advertised.listeners; TLS with PEM files only:
ssl.keystore.location (key and chain in one PEM file) or
ssl.keystore.certificate.chain + ssl.keystore.key (inline),
ssl.truststore.location or ssl.truststore.certificates, ssl.client.auth
(none | requested | required); any ssl.* setting for one listener as
listener.name.<lower-case name>.ssl.*.
SASL (on SASL_PLAINTEXT and SASL_SSL listeners): sasl.enabled.mechanisms
(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; all three by default),
connections.max.reauth.ms (KIP-368 re-authentication; 0, no expiry, by
default) and sasl.server.max.receive.size. SCRAM credentials are kept in
<data-dir>/broker/scram-credentials.json (salted, never passwords), managed with
kafka-configs / AlterUserScramCredentials; --users-file adds users at start.
An unknown setting is refused, naming the nearest known one.

Kafka's own server.properties: --config-file reads Kafka 4.x's KRaft file
as it is (docs/server.properties is one, for member 1 of a 3-broker cluster
on this machine). Its other keys map to the flags: node.id (or broker.id)
to --node-id; log.dirs (or log.dir; one directory) to --data-dir;
controller.quorum.voters to --controller-quorum; process.roles
broker,controller is a member that votes, broker alone a member that does
not, controller alone is refused (there are no controller-only nodes);
the listener that controller.listener.names names becomes
--controller-listen (Raft on its port, the quorum RPC on port+100) and is
taken out of listeners, advertised.listeners and
listener.security.protocol.map; inter.broker.listener.name must name a
PLAINTEXT client listener. controller.quorum.bootstrap.servers alone maps
only when it names this node's own controller listener (a one-member
quorum, as Kafka's 'kafka-storage format --standalone'); otherwise list the
voters in controller.quorum.voters. Keys that do not apply here are
ignored, one line each on stderr saying why: num.network.threads,
num.io.threads, background.threads, socket.send.buffer.bytes,
socket.receive.buffer.bytes, num.recovery.threads.per.data.dir,
offsets.topic.replication.factor and
transaction.state.log.replication.factor (derived: 1 alone, min(3,
members listed) in a cluster), transaction.state.log.min.isr (derived:
min(2, the replication factor)), log.flush.interval.messages/ms (see
log.fsync), metadata.log.dir, share.coordinator.* and zookeeper.*.
--config takes the same keys.

SIGINT or SIGTERM stops the broker cleanly: in-flight requests finish and
every partition log is flushed and closed.

With --controller-quorum (or controller.quorum.voters) the broker is one
member of a replicated cluster (KRaft-style combined mode): it runs a node
of the Raft metadata quorum and replicates partitions as the quorum's
controller assigns them. The list is Kafka's controller.quorum.voters
shape, id@host:port,... naming the voters (the three lowest ids vote; list
the same voters on every member). Each voter uses two ports: the Raft
transport on the port given, and the quorum's request-forwarding RPC on
that port + 100. A member whose --node-id is not in the list joins as a
non-voter and needs --controller-listen (its own Raft host:port; its RPC
is again port + 100). A voter given --controller-listen listens there (Raft
on that port, RPC on port + 100) while the others reach it at its
--controller-quorum address: that lets a proxy sit in front of every
member, as the load generator's broker-partition fault does.
--source-address IP makes every connection this member opens to the others
(Raft, the quorum's RPC, replica fetching, transaction markers to other
leaders) leave from that local IP address, so such a proxy can tell the
members apart; clients are not affected. --data-dir is laid out as
alone, and default.replication.factor may exceed 1. Client topic administration
(CreateTopics, DeleteTopics, CreatePartitions, auto-creation) and topic
configs (AlterConfigs and IncrementalAlterConfigs sent to any member) go
through the quorum and reach every replica; broker settings are static
(AlterConfigs on a broker resource is refused). The group and transaction
coordinators are shards of the replicated __consumer_offsets and
__transaction_state topics: the leader of each of their partitions
coordinates the groups and transactional ids that hash to it, and a new
leader loads their state before it serves them, so the coordinators move
with leadership. A cluster member may serve TLS and SASL listeners to
clients beside the PLAINTEXT one the members reach each other on
(inter.broker.listener.name; default: the listener named PLAINTEXT, else
the first PLAINTEXT one): every listener is registered with the quorum,
and a client is told each member's endpoint of the listener it came in
on. SCRAM credentials are kept per member (give every member the same
--users-file).`

func runBroker(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("broker", brokerDescription+"\n\n"+servedAPIsHelp(), stderr)
	listen := fs.String("listen", "127.0.0.1:9092", "address to accept client connections on (Kafka's listeners), host:port")
	advertised := fs.String("advertised", "", "host:port clients are told to connect to (Kafka's advertised.listeners); default: the listen address")
	dataDir := fs.String("data-dir", "data", "directory for partition logs and topic metadata (Kafka's log.dirs, one directory)")
	nodeID := fs.Int("node-id", 0, "this broker's id in Metadata, 0 or more (Kafka's node.id / broker.id)")
	configFile := fs.String("config-file", "", "server.properties file: broker settings, and Kafka's KRaft keys (node.id, log.dirs, process.roles, controller.quorum.voters, ...) mapped to these flags")
	var settings repeatedFlag
	fs.Var(&settings, "config", "a broker setting as key=value, e.g. --config log.retention.ms=60000 (repeatable; mapped as in --config-file)")
	profileKind := fs.String("profile", "", "write a profile into profiles/: cpu, mem, block, mutex or trace")
	controllerQuorum := fs.String("controller-quorum", "", "run as a cluster member: the quorum voters as id@host:port,... (Kafka's controller.quorum.voters; RPC on port+100)")
	controllerListen := fs.String("controller-listen", "", "with --controller-quorum: the host:port this member's Raft listens on (its RPC on port+100); needed when --node-id is not a voter, else default: its --controller-quorum entry")
	sourceAddress := fs.String("source-address", "", "with --controller-quorum: the local IP address connections to the other members are made from (default: the system's choice)")
	usersFile := fs.String("users-file", "", "YAML file of SASL users (name, password, optional mechanisms) whose SCRAM credentials are stored at start; see README, Authentication (SASL)")
	metricsListen := fs.String("metrics-listen", "", "serve Prometheus metrics on this host:port (/metrics, /healthz, /readyz), e.g. 127.0.0.1:9644; default off. Which request times have histogram buckets: --config metrics.request.histograms=default (Produce, Fetch, the transaction and group APIs), all or none")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *nodeID < 0 || *nodeID > math.MaxInt32 {
		return usageError("--node-id %d: must be 0..%d", *nodeID, math.MaxInt32)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	entries, err := readPropEntries(*configFile, settings)
	if err != nil {
		return err
	}
	props, err := classifyProps(entries)
	if err != nil {
		return err
	}
	opts := brokerOptions{nodeID: *nodeID, listen: *listen, advertised: *advertised, dataDir: *dataDir,
		controllerQuorum: *controllerQuorum, controllerListen: *controllerListen}
	notes, err := props.apply(&opts, func(name string) bool { return given[name] })
	if err != nil {
		return err
	}
	for _, note := range notes {
		fmt.Fprintf(stderr, "exactly broker: %s\n", note)
	}
	properties := props.settings
	stopProfile, err := startProfile(*profileKind)
	if err != nil {
		return usageError("%v", err)
	}
	defer stopProfile()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	served, err := startBrokerMetrics(*metricsListen)
	if err != nil {
		return err
	}
	defer served.close()
	if served != nil {
		fmt.Fprintf(stdout, "metrics on %s\n", served.url())
	}
	cfg := clusternode.Config{
		NodeID: int32(opts.nodeID), Listen: opts.listen, Advertised: opts.advertised, DataDir: opts.dataDir,
		Properties: properties, Logger: logger, SourceAddress: *sourceAddress,
		Metrics: served.collectors(), UsersFile: *usersFile,
	}
	if opts.controllerQuorum != "" {
		voters, err := parseControllerQuorum(opts.controllerQuorum, int32(opts.nodeID), opts.controllerListen)
		if err != nil {
			return usageError("%v", err)
		}
		cfg.Voters = voters
		if err := memberBinds(&cfg, opts.controllerListen, *sourceAddress); err != nil {
			return usageError("%v", err)
		}
	}
	// Without a quorum the broker is a cluster of one (cfg.Voters empty):
	// the same member, its quorum in process.
	return runMember(ctx, cfg, stdout, logger, served)
}

// startProfile starts pkg/profile writing into profiles/, or nothing.
func startProfile(kind string) (stop func(), err error) {
	return startProfileIn(kind, "profiles")
}

var _ flag.Value = (*repeatedFlag)(nil)
