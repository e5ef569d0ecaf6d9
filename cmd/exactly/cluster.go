package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const clusterDescription = `Runs N brokers on this machine as one cluster, each a child process of this
binary ('exactly broker --controller-quorum ...'): a metadata quorum on Raft
(KRaft-style combined mode: the three lowest ids vote), partitions replicated
to their replicas with follower fetching, the high watermark, leader epochs
and truncation, acks=all waiting for the in-sync replicas, min.insync.replicas
enforced, and a new leader elected from the ISR when a broker stops.

Ports, from --listen host:PORT: broker i (ids 1..N) listens on PORT+i-1;
its Raft transport is on PORT+100+i-1 and its quorum RPC on PORT+200+i-1.
Broker i's data is in DIR/broker-i (quorum/ and broker/), its log in
DIR/broker-i.log. The brokers get default.replication.factor=min(3,N) and
min.insync.replicas=min(2,N); --config settings are passed to every broker
after those (later wins). Once every broker answers Metadata with all N
brokers, the bootstrap address (comma-separated) is printed.

SIGINT or SIGTERM is forwarded to every broker; one still running after
--stop-timeout is killed.

The group and transaction coordinators move with leadership: their topics
(__consumer_offsets, __transaction_state) are replicated, and a broker that
becomes leader of one of their partitions loads its groups or transactions
before it serves them. Topic configs (at creation, or changed with
AlterConfigs on any broker) reach every replica.

--metrics-listen host:PORT serves each broker's Prometheus metrics: broker i
on PORT+i-1 (/metrics, /healthz, /readyz). --sasl-listen host:PORT gives
broker i a second listener, SASL_PLAINTEXT, on PORT+i-1, with the users of
--users-file (SCRAM-SHA-256/512 and PLAIN); the brokers talk to each other
on the first one.

Operating a running cluster (each has its own --help):
  exactly cluster add-broker --data-dir DIR   start one more broker and move
                                              a fair share of replicas to it
  exactly cluster drain --broker ID           move every replica off a broker
  exactly cluster rebalance                   spread replicas and leaders evenly
Partitions move with AlterPartitionReassignments: new replicas copy the
partition and join the in-sync replicas before old ones leave.`

// maxClusterBrokers is the most brokers `exactly cluster` runs on one
// machine.
const maxClusterBrokers = 100

// clusterMember is one child broker process.
type clusterMember struct {
	id     int32
	listen string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{} // closed when the process has been waited for
	err    error         // the wait's result, set before exited closes
}

func runCluster(args []string, stdout, stderr io.Writer) error {
	if ok, err := runClusterOperation(args, stdout, stderr); ok {
		return err
	}
	fs := newFlagSet("cluster", clusterDescription, stderr)
	brokers := fs.Int("brokers", 3, fmt.Sprintf("number of brokers to run (1..%d)", maxClusterBrokers))
	dataDir := fs.String("data-dir", "", "directory holding one data directory per broker (required)")
	listen := fs.String("listen", "127.0.0.1:9092", "first broker's listen address; the others take the following ports")
	readyTimeout := fs.Duration("ready-timeout", time.Minute, "how long to wait for every broker to see the whole cluster")
	stopTimeout := fs.Duration("stop-timeout", 20*time.Second, "how long to wait for the brokers to stop after a signal before killing them")
	metricsListen := fs.String("metrics-listen", "", "serve each broker's Prometheus metrics from this host:PORT on: broker i on PORT+i-1; default off")
	saslListen := fs.String("sasl-listen", "", "also give each broker a SASL_PLAINTEXT listener from this host:PORT on: broker i on PORT+i-1 (needs --users-file); default off")
	usersFile := fs.String("users-file", "", "YAML file of SASL users every broker stores at start (as `exactly broker --users-file`)")
	var settings repeatedFlag
	fs.Var(&settings, "config", "a broker setting as key=value for every broker (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkFlagRules(fs, []flagRule{
		{"brokers", intIn(*brokers, 1, maxClusterBrokers), fmt.Sprintf("1..%d", maxClusterBrokers)},
		{"ready-timeout", above(readyTimeout, 0), "more than 0s (e.g. 1m)"},
		{"stop-timeout", above(stopTimeout, 0), "more than 0s (e.g. 20s)"},
	}); err != nil {
		return err
	}
	host, port, err := clusterListen(*listen, *brokers)
	if err != nil {
		return usageError("%s", err.Error())
	}
	if *dataDir == "" {
		return usageError("--data-dir is required (e.g. --data-dir /tmp/exactly-cluster)")
	}
	metricsHost, metricsPort := "", 0
	if *metricsListen != "" {
		if metricsHost, metricsPort, err = clusterMetricsListen(*metricsListen, *brokers); err != nil {
			return usageError("%s", err.Error())
		}
	}
	saslHost, saslPort := "", 0
	if *saslListen != "" {
		if *usersFile == "" {
			return usageError("--sasl-listen needs --users-file (the SASL users every broker knows)")
		}
		if saslHost, saslPort, err = clusterMetricsListen(*saslListen, *brokers); err != nil {
			return usageError("%s", strings.Replace(err.Error(), "--metrics-listen", "--sasl-listen", 1))
		}
	}
	if *usersFile != "" {
		if *usersFile, err = filepath.Abs(*usersFile); err != nil {
			return usageError("--users-file: %v", err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary: %w", err)
	}
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	layout := clusterLayout{dataDir: *dataDir, host: host, port: port, brokers: *brokers, settings: settings,
		metricsHost: metricsHost, metricsPort: metricsPort, saslHost: saslHost, saslPort: saslPort, usersFile: *usersFile}
	if err := saveLayout(layout); err != nil {
		return fmt.Errorf("record the cluster's layout: %w", err)
	}
	members, err := startMembers(exe, layout)
	if err != nil {
		stopMembers(members, syscall.SIGTERM, *stopTimeout, stderr)
		return err
	}
	var bootstrap []string
	for _, m := range members {
		bootstrap = append(bootstrap, m.listen)
	}
	if err := waitClusterReady(ctx, members, *readyTimeout); err != nil {
		stopMembers(members, syscall.SIGTERM, *stopTimeout, stderr)
		return err
	}
	fmt.Fprintf(stdout, "exactly cluster of %d brokers ready (data in %s); bootstrap: %s\n", len(members), *dataDir, strings.Join(bootstrap, ","))
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(stderr, "exactly cluster: signal received; stopping the brokers")
			return stopMembers(members, syscall.SIGTERM, *stopTimeout, stderr)
		case <-anyExited(members):
			for _, m := range members {
				select {
				case <-m.exited:
					fmt.Fprintf(stderr, "exactly cluster: broker %d exited (%v); see its log; the others keep running\n", m.id, m.err)
				default:
				}
			}
			members = running(members)
			if len(members) == 0 {
				return errors.New("every broker exited")
			}
		}
	}
}

// clusterListen checks --listen and --brokers and returns the host and
// the first port; every derived port must fit.
func clusterListen(listen string, brokers int) (string, int, error) {
	if brokers < 1 || brokers > maxClusterBrokers {
		return "", 0, fmt.Errorf("--brokers %d: must be 1..%d", brokers, maxClusterBrokers)
	}
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("--listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port+200+brokers-1 > 65535 {
		return "", 0, fmt.Errorf("--listen %q: the port must be 1..%d (the brokers use up to port+%d)", listen, 65535-200-brokers+1, 200+brokers-1)
	}
	return host, port, nil
}

// clusterMetricsListen checks --metrics-listen and returns its host and
// first port; every broker's port must fit.
func clusterMetricsListen(listen string, brokers int) (string, int, error) {
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("--metrics-listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port+brokers-1 > 65535 {
		return "", 0, fmt.Errorf("--metrics-listen %q: the port must be 1..%d (the brokers use up to port+%d)", listen, 65535-brokers+1, brokers-1)
	}
	return host, port, nil
}

// clusterLayout is where `exactly cluster` puts its members.
type clusterLayout struct {
	dataDir, host string
	port, brokers int
	settings      []string
	// metricsHost and metricsPort: broker i serves its metrics on
	// metricsPort+i-1; metricsPort 0 means off.
	metricsHost string
	metricsPort int
	// saslHost and saslPort: broker i has a SASL_PLAINTEXT listener on
	// saslPort+i-1; saslPort 0 means none. usersFile is every broker's
	// --users-file ("" none).
	saslHost  string
	saslPort  int
	usersFile string
}

// memberArgs are the `exactly broker` arguments of member id (1-based).
func memberArgs(layout clusterLayout, id int) []string {
	dataDir, host, port, brokers, settings := layout.dataDir, layout.host, layout.port, layout.brokers, layout.settings
	addr := func(p int) string { return net.JoinHostPort(host, strconv.Itoa(p)) }
	var voters []string
	for v := 1; v <= min(3, brokers); v++ {
		voters = append(voters, fmt.Sprintf("%d@%s", v, addr(port+100+v-1)))
	}
	args := []string{"broker",
		"--node-id", strconv.Itoa(id),
		"--listen", addr(port + id - 1),
		"--data-dir", filepath.Join(dataDir, "broker-"+strconv.Itoa(id)),
		"--controller-quorum", strings.Join(voters, ","),
		"--config", "default.replication.factor=" + strconv.Itoa(min(3, brokers)),
		"--config", "min.insync.replicas=" + strconv.Itoa(min(2, brokers)),
	}
	if id > 3 {
		args = append(args, "--controller-listen", addr(port+100+id-1))
	}
	if layout.metricsPort > 0 {
		args = append(args, "--metrics-listen", net.JoinHostPort(layout.metricsHost, strconv.Itoa(layout.metricsPort+id-1)))
	}
	if layout.usersFile != "" {
		args = append(args, "--users-file", layout.usersFile)
	}
	if layout.saslPort > 0 {
		args = append(args, "--config", fmt.Sprintf("listeners=PLAINTEXT://%s,SASL_PLAINTEXT://%s",
			addr(port+id-1), net.JoinHostPort(layout.saslHost, strconv.Itoa(layout.saslPort+id-1))))
	}
	for _, s := range settings {
		args = append(args, "--config", s)
	}
	return args
}

// startMembers starts every broker process; on error it returns the ones
// started so far.
func startMembers(exe string, layout clusterLayout) ([]*clusterMember, error) {
	var members []*clusterMember
	for id := 1; id <= layout.brokers; id++ {
		started, err := startMember(exe, layout, id)
		members = append(members, started...)
		if err != nil {
			return members, err
		}
	}
	return members, nil
}

// startMember starts broker id of layout, logging to DIR/broker-id.log.
func startMember(exe string, layout clusterLayout, id int) ([]*clusterMember, error) {
	logPath := filepath.Join(layout.dataDir, "broker-"+strconv.Itoa(id)+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("broker %d log: %w", id, err)
	}
	cmd := exec.Command(exe, memberArgs(layout, id)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start broker %d: %w", id, err)
	}
	m := &clusterMember{id: int32(id), listen: net.JoinHostPort(layout.host, strconv.Itoa(layout.port+id-1)), cmd: cmd, log: logFile, exited: make(chan struct{})}
	go func() {
		m.err = cmd.Wait()
		logFile.Close()
		close(m.exited)
	}()
	return []*clusterMember{m}, nil
}

// waitClusterReady waits until every member answers Metadata listing all
// of them, or a member exits, ctx ends or the timeout passes.
func waitClusterReady(ctx context.Context, members []*clusterMember, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, m := range members {
		for {
			n, err := metadataBrokers(ctx, m.listen)
			if err == nil && n == len(members) {
				break
			}
			select {
			case <-m.exited:
				return fmt.Errorf("broker %d exited while starting (%v); see its log", m.id, m.err)
			case <-ctx.Done():
				return fmt.Errorf("broker %d at %s did not list all %d brokers in time (last: %d brokers, %v)", m.id, m.listen, len(members), n, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// metadataBrokers asks the broker at addr for Metadata and returns how
// many brokers it lists.
func metadataBrokers(ctx context.Context, addr string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	// kgo numbers seed brokers from MinInt32: this asks addr itself.
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.Broker(math.MinInt32))
	if err != nil {
		return 0, err
	}
	return len(resp.Brokers), nil
}

// stopMembers sends sig to every running member, waits up to timeout,
// then kills the rest by PID and waits for them.
func stopMembers(members []*clusterMember, sig os.Signal, timeout time.Duration, stderr io.Writer) error {
	for _, m := range running(members) {
		if err := m.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			fmt.Fprintf(stderr, "exactly cluster: signal broker %d (pid %d): %v\n", m.id, m.cmd.Process.Pid, err)
		}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	expired := false
	var errs []error
	for _, m := range members {
		if !expired {
			select {
			case <-m.exited:
				continue
			case <-timer.C:
				expired = true
			}
		}
		select {
		case <-m.exited:
		default:
			fmt.Fprintf(stderr, "exactly cluster: broker %d (pid %d) still running after %v; killing it\n", m.id, m.cmd.Process.Pid, timeout)
			m.cmd.Process.Kill()
			<-m.exited
			errs = append(errs, fmt.Errorf("broker %d killed after %v", m.id, timeout))
		}
	}
	return errors.Join(errs...)
}

// running returns the members whose process has not exited.
func running(members []*clusterMember) []*clusterMember {
	var out []*clusterMember
	for _, m := range members {
		select {
		case <-m.exited:
		default:
			out = append(out, m)
		}
	}
	return out
}

// anyExited returns a channel closed when one of members exits.
func anyExited(members []*clusterMember) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	for _, m := range members {
		go func() {
			<-m.exited
			once.Do(func() { close(ch) })
		}()
	}
	return ch
}
