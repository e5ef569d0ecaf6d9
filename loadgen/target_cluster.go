package loadgen

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/faults"
)

// TargetCluster is a replicated cluster of our brokers that the load
// generator launches as processes of the exactly binary (`exactly broker
// --controller-quorum`): ClusterBrokers brokers, every one a voter of the
// metadata quorum, topics replicated ClusterReplicationFactor times with
// min.insync.replicas ClusterMinInsync. Its processes are the ones the
// cluster fault plans (leader-kill, …) kill and restart.
const TargetCluster = "cluster"

// The shape of --target cluster.
const (
	ClusterBrokers           = 3
	ClusterReplicationFactor = 3
	ClusterMinInsync         = 2
)

// clusterRPCOffset is how far above a voter's Raft port its quorum RPC
// listens (`exactly broker --controller-quorum` derives it so).
const clusterRPCOffset = 100

// clusterTarget is a launched cluster: one faults.Process per broker, each
// with its own data directory under root, kept across kills and restarts,
// and its output appended to root's broker-i.log (every start of it).
type clusterTarget struct {
	root      string // removed by Close: a temporary directory, or "" (the user's --data-dir)
	dir       string // where the brokers' data and logs are
	processes []*faults.Process
	bootstrap []string
	// proxies, when the run has a broker-partition cell, are the
	// partition proxies every connection to a broker goes through
	// (clusterProxies); nil: direct connections.
	proxies *clusterProxies
	logs    []*os.File // the brokers' log files, closed by Close
}

// startCluster launches the brokers of a cluster target with self, waits
// until every broker answers Metadata listing all of them, and returns it.
// dataDir, when set, holds the brokers' data directories (kept on close);
// empty means a temporary directory, removed on close. partitioned puts
// the brokers behind partition proxies (for broker-partition);
// properties are more broker settings for every broker.
func startCluster(ctx context.Context, self SelfCommand, dataDir string, partitioned bool, properties map[string]string) (*clusterTarget, error) {
	root, temporary := dataDir, dataDir == ""
	if temporary {
		var err error
		if root, err = os.MkdirTemp("", "exactly-loadgen-cluster-*"); err != nil {
			return nil, fmt.Errorf("cluster data directory: %w", err)
		}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("cluster data directory: %w", err)
	}
	target := &clusterTarget{root: root, dir: root}
	if temporary {
		defer func() {
			if target.processes == nil {
				os.RemoveAll(root)
			}
		}()
	}
	listens, rafts, err := clusterAddresses(ClusterBrokers)
	if err != nil {
		return nil, err
	}
	voterRafts, bootstrap := rafts, listens
	if partitioned {
		if target.proxies, err = startClusterProxies(listens, rafts); err != nil {
			return nil, err
		}
		defer func() {
			if target.processes == nil {
				target.proxies.group.Close()
			}
		}()
		voterRafts, bootstrap = target.proxies.rafts, target.proxies.kafka
	}
	voters := make([]string, ClusterBrokers)
	for i := range voters {
		voters[i] = fmt.Sprintf("%d@%s", i+1, voterRafts[i])
	}
	var processes []*faults.Process
	for i := range ClusterBrokers {
		dir := filepath.Join(root, fmt.Sprintf("broker-%d", i+1))
		logFile, err := os.OpenFile(dir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			stopProcesses(processes)
			target.closeLogs()
			return nil, fmt.Errorf("cluster broker %d log: %w", i+1, err)
		}
		target.logs = append(target.logs, logFile)
		args := faults.BrokerArgs(listens[i], dir, i+1, "--controller-quorum", strings.Join(voters, ","),
			"--config", "default.replication.factor="+strconv.Itoa(ClusterReplicationFactor),
			"--config", "min.insync.replicas="+strconv.Itoa(ClusterMinInsync))
		for _, name := range slices.Sorted(maps.Keys(properties)) {
			args = append(args, "--config", name+"="+properties[name])
		}
		if target.proxies != nil {
			args = append(args, target.proxies.brokerArgs(i, rafts[i])...)
		}
		process, err := faults.NewProcess(faults.ProcessConfig{
			Name: fmt.Sprintf("broker %d (%s)", i+1, listens[i]), Path: self.Path, Args: self.command(args...),
			Env: self.Env, DataDir: dir, Addr: listens[i], StartTimeout: 30 * time.Second, Stdout: logFile, Stderr: logFile})
		if err == nil {
			err = process.Start(ctx)
		}
		if err != nil {
			stopProcesses(processes)
			target.closeLogs()
			return nil, fmt.Errorf("launch cluster broker %d: %w", i+1, err)
		}
		processes = append(processes, process)
	}
	if err := waitForBrokers(ctx, bootstrap, ClusterBrokers, time.Minute); err != nil {
		stopProcesses(processes)
		target.closeLogs()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	target.processes, target.bootstrap = processes, bootstrap
	if target.proxies != nil {
		target.proxies.setHooks(target)
	}
	if !temporary {
		target.root = "" // the user's directory: kept
	}
	return target, nil
}

// clusterAddresses picks n free loopback listener addresses and n Raft
// addresses whose RPC port (Raft port + clusterRPCOffset) is free too.
func clusterAddresses(n int) (listens, rafts []string, err error) {
	for range n {
		listen, err := freeLoopbackAddr()
		if err != nil {
			return nil, nil, err
		}
		listens = append(listens, listen)
	}
	rafts, err = raftAddresses(n)
	return listens, rafts, err
}

// raftAddresses picks n free loopback Raft addresses whose RPC port (Raft
// port + clusterRPCOffset) is free too.
func raftAddresses(n int) (rafts []string, err error) {
	for attempt := 0; len(rafts) < n; attempt++ {
		if attempt == 100 {
			return nil, errors.New("cluster: no free pair of Raft and RPC ports on loopback after 100 tries")
		}
		raft, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		host, portText, _ := net.SplitHostPort(raft)
		port, _ := strconv.Atoi(portText)
		if port+clusterRPCOffset > 65535 || !portFree(host, port+clusterRPCOffset) {
			continue
		}
		rafts = append(rafts, raft)
	}
	return rafts, nil
}

// portFree reports whether nothing listens on host:port now.
func portFree(host string, port int) bool {
	listener, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	listener.Close()
	return true
}

// waitForBrokers waits until a Metadata request to bootstrap lists want
// brokers, polling until timeout.
func waitForBrokers(ctx context.Context, bootstrap []string, want int, timeout time.Duration) error {
	client, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.ClientID("exactly-loadgen-cluster-wait"))
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	seen := 0
	for {
		request := kmsg.NewPtrMetadataRequest()
		if response, err := request.RequestWith(ctx, client); err == nil {
			if seen = len(response.Brokers); seen >= want {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d brokers in Metadata after %v", seen, want, timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stopProcesses stops every process (SIGTERM, SIGKILL after a grace).
func stopProcesses(processes []*faults.Process) error {
	var errs []error
	for _, process := range processes {
		errs = append(errs, process.Stop(20*time.Second))
	}
	return errors.Join(errs...)
}

func (t *clusterTarget) Kind() string        { return TargetCluster }
func (t *clusterTarget) Bootstrap() []string { return t.bootstrap }
func (t *clusterTarget) Description() string {
	pids := make([]string, len(t.processes))
	for i, process := range t.processes {
		pids[i] = strconv.Itoa(process.PID())
	}
	proxied := ""
	if t.proxies != nil {
		proxied = " behind partition proxies"
	}
	return fmt.Sprintf("exactly cluster of %d brokers launched as processes for this run (pids %s at launch; a fault's kills and restarts are its events)%s, %s, replication factor %d, min.insync.replicas %d, data and logs in %s",
		len(t.processes), strings.Join(pids, ","), proxied, strings.Join(t.bootstrap, ","), ClusterReplicationFactor, ClusterMinInsync, t.dir)
}

// Processes are the cluster's brokers, in node id order (node id = index + 1).
func (t *clusterTarget) Processes() []*faults.Process { return t.processes }

// closeLogs closes the brokers' log files.
func (t *clusterTarget) closeLogs() {
	for _, logFile := range t.logs {
		logFile.Close()
	}
	t.logs = nil
}

// Close stops every broker, closes their logs and removes a temporary
// data directory.
func (t *clusterTarget) Close() error {
	err := stopProcesses(t.processes)
	if t.proxies != nil {
		t.proxies.group.Close()
	}
	t.closeLogs()
	if t.root != "" {
		if removeErr := os.RemoveAll(t.root); removeErr != nil && err == nil {
			err = removeErr
		}
	}
	return err
}
