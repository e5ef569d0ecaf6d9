package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/exactly-eos/exactly/broker"
	"github.com/exactly-eos/exactly/broker/clusternode"
)

// repeatedFlag collects every occurrence of a flag.
type repeatedFlag []string

func (r *repeatedFlag) String() string     { return strings.Join(*r, ",") }
func (r *repeatedFlag) Set(v string) error { *r = append(*r, v); return nil }

const brokerDescription = `Runs a single Kafka-compatible broker. Unmodified Kafka clients (franz-go,
librdkafka/kcat, sarama, kafkajs, the Java client) produce to and consume
from it. Topics live under --data-dir, one directory per partition
(<topic>-<partition>), with topic metadata in topics.json.

Broker settings use Kafka's server.properties names, from --config-file and
then --config (later wins): auto.create.topics.enable, num.partitions,
default.replication.factor (1; a cluster member takes more, given with
--config), min.insync.replicas, log.segment.bytes,
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
<data-dir>/scram-credentials.json (salted, never passwords), managed with
kafka-configs / AlterUserScramCredentials; --users-file adds users at start.
Unknown settings are refused.

SIGINT or SIGTERM stops the broker cleanly: in-flight requests finish and
every partition log is flushed and closed.

With --controller-quorum the broker is one member of a replicated cluster
(KRaft-style combined mode): it runs a node of the Raft metadata quorum
and replicates partitions as the quorum's controller assigns them. The
list is Kafka's controller.quorum.voters shape, id@host:port,... naming
the voters (the three lowest ids vote; list the same voters on every
member). Each voter uses two ports: the Raft transport on the port given,
and the quorum's request-forwarding RPC on that port + 100. A member whose
--node-id is not in the list joins as a non-voter and needs
--controller-listen (its own Raft host:port; its RPC is again port + 100).
A voter given --controller-listen listens there (Raft on that port, RPC on
port + 100) while the others reach it at its --controller-quorum address:
that lets a proxy sit in front of every member, as the load generator's
broker-partition fault does. --source-address IP makes every connection
this member opens to the others (Raft, the quorum's RPC, replica fetching,
transaction markers to other leaders) leave from that local IP address,
so such a proxy can tell the members apart; clients are not affected.
Then --data-dir holds quorum/ (the Raft log) and broker/ (the partitions),
and default.replication.factor may exceed 1. Client topic administration
(CreateTopics, DeleteTopics, CreatePartitions, auto-creation) goes through
the quorum. Not yet replicated: the group and transaction coordinators are
local to each broker (every member names the lowest-id live broker as the
coordinator; its state does not move with leadership, and a transaction
completes only when that broker leads every partition it wrote), and
AlterConfigs changes only the broker it is sent to (configs given at
creation reach every replica).`

func runBroker(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("broker", brokerDescription, stderr)
	listen := fs.String("listen", "127.0.0.1:9092", "address to accept client connections on (Kafka's listeners), host:port")
	advertised := fs.String("advertised", "", "host:port clients are told to connect to (Kafka's advertised.listeners); default: the listen address")
	dataDir := fs.String("data-dir", "data", "directory for partition logs and topic metadata (Kafka's log.dirs)")
	nodeID := fs.Int("node-id", 0, "this broker's id in Metadata (Kafka's node.id / broker.id)")
	configFile := fs.String("config-file", "", "server.properties file of broker settings")
	var settings repeatedFlag
	fs.Var(&settings, "config", "a broker setting as key=value, e.g. --config log.retention.ms=60000 (repeatable)")
	profileKind := fs.String("profile", "", "write a profile into profiles/: cpu, mem, block, mutex or trace")
	controllerQuorum := fs.String("controller-quorum", "", "run as a cluster member: the quorum voters as id@host:port,... (Kafka's controller.quorum.voters; RPC on port+100)")
	controllerListen := fs.String("controller-listen", "", "with --controller-quorum: the host:port this member's Raft listens on (its RPC on port+100); needed when --node-id is not a voter, else default: its --controller-quorum entry")
	sourceAddress := fs.String("source-address", "", "with --controller-quorum: the local IP address connections to the other members are made from (default: the system's choice)")
	usersFile := fs.String("users-file", "", "YAML file of SASL users (name, password, optional mechanisms) whose SCRAM credentials are stored at start; see README, Authentication (SASL)")
	metricsListen := fs.String("metrics-listen", "", "serve Prometheus metrics on this host:port (/metrics, /healthz, /readyz), e.g. 127.0.0.1:9644; default off")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	properties := map[string]string{}
	if *configFile != "" {
		loaded, err := broker.LoadPropertiesFile(*configFile)
		if err != nil {
			return err
		}
		properties = loaded
	}
	// A cluster member takes default.replication.factor itself (the
	// broker alone validates it as 1): clusternode.Config.Properties.
	memberRF, hasMemberRF := "", false
	if *controllerQuorum != "" {
		settings, memberRF, hasMemberRF = takeSetting(settings, "default.replication.factor")
	}
	overrides, err := broker.ParseProperties(settings)
	if err != nil {
		return err
	}
	for k, v := range overrides {
		properties[k] = v
	}
	stopProfile, err := startProfile(*profileKind)
	if err != nil {
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return errUsage
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
	if *controllerQuorum != "" {
		if hasMemberRF {
			properties["default.replication.factor"] = memberRF
		}
		voters, err := parseControllerQuorum(*controllerQuorum, int32(*nodeID), *controllerListen)
		if err != nil {
			fmt.Fprintln(stderr, err)
			fs.Usage()
			return errUsage
		}
		cfg := clusternode.Config{
			NodeID: int32(*nodeID), Listen: *listen, Advertised: *advertised, DataDir: *dataDir,
			Voters: voters, Properties: properties, Logger: logger, SourceAddress: *sourceAddress,
			Metrics: served.collectors(), UsersFile: *usersFile,
		}
		if err := memberBinds(&cfg, *controllerListen, *sourceAddress); err != nil {
			fmt.Fprintln(stderr, err)
			fs.Usage()
			return errUsage
		}
		return runMember(ctx, cfg, stdout, logger, served)
	}
	b, err := broker.Start(ctx, broker.Config{
		NodeID:     int32(*nodeID),
		Listen:     *listen,
		Advertised: *advertised,
		DataDir:    *dataDir,
		Properties: properties,
		Logger:     logger,
		Metrics:    served.collectors(),
		UsersFile:  *usersFile,
	})
	if err != nil {
		return err
	}
	served.setReady(b.Ready)
	fmt.Fprintf(stdout, "exactly broker %d listening on %s (data in %s)\n", *nodeID, b.Addr(), *dataDir)
	if listeners := b.Listeners(); len(listeners) > 1 {
		fmt.Fprintf(stdout, "listeners: %s\n", strings.Join(listeners, ","))
	}
	<-ctx.Done()
	logger.Info("signal received; shutting down")
	return b.Close()
}

// startProfile starts pkg/profile writing into profiles/, or nothing.
func startProfile(kind string) (stop func(), err error) {
	return startProfileIn(kind, "profiles")
}

var _ flag.Value = (*repeatedFlag)(nil)
