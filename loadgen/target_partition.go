package loadgen

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
	"github.com/exactly-eos/exactly/internal/partition"
	"github.com/exactly-eos/exactly/loadgen/faults"
)

// clusterProxies are the partition proxies of a cluster target launched
// for a run with a broker-partition or slow-follower cell: one in front of
// every listener (Kafka, Raft, quorum RPC) of every broker. The brokers
// bind the real addresses and hand out the proxies' (advertised Kafka
// listener, quorum voters), and broker i dials the others from
// clusterSource(i), so the group can cut one off or slow its links to the
// others (internal/partition).
type clusterProxies struct {
	group *partition.Group
	// kafka and rafts are the proxies' addresses by broker index: the
	// advertised listeners (the run's bootstrap) and the voter entries
	// (each RPC proxy on the Raft proxy's port + clusterRPCOffset).
	kafka, rafts []string
}

// clusterSource is the loopback address broker index dials the other
// brokers from (node id = index + 1: 127.0.0.11, .12, ...).
func clusterSource(index int) string { return "127.0.0." + strconv.Itoa(11+index) }

// startClusterProxies starts the proxies in front of the brokers' real
// addresses: listens (Kafka) and rafts (Raft; RPC on port +
// clusterRPCOffset).
func startClusterProxies(listens, rafts []string) (*clusterProxies, error) {
	proxyRafts, err := raftAddresses(len(rafts))
	if err != nil {
		return nil, err
	}
	proxies := &clusterProxies{group: partition.New()}
	for i := range listens {
		id := int32(i + 1)
		if err := proxies.group.AddBroker(id, clusterSource(i)); err != nil {
			proxies.group.Close()
			return nil, err
		}
		kafka, err := proxies.group.Forward(id, "127.0.0.1:0", listens[i])
		if err == nil {
			_, err = proxies.group.Forward(id, proxyRafts[i], rafts[i])
		}
		if err == nil {
			_, err = proxies.group.Forward(id, rpcOf(proxyRafts[i]), rpcOf(rafts[i]))
		}
		if err != nil {
			proxies.group.Close()
			return nil, fmt.Errorf("cluster: partition proxies of broker %d: %w", id, err)
		}
		proxies.kafka = append(proxies.kafka, kafka)
	}
	proxies.rafts = proxyRafts
	return proxies, nil
}

// brokerArgs are the extra `exactly broker` arguments of broker index
// behind the proxies.
func (p *clusterProxies) brokerArgs(index int, realRaft string) []string {
	return []string{"--advertised", p.kafka[index], "--controller-listen", realRaft, "--source-address", clusterSource(index)}
}

// setHooks gives every process the hooks that cut it off and heal it, and
// the one that slows its links to the other brokers.
func (p *clusterProxies) setHooks(t *clusterTarget) {
	for i, process := range t.processes {
		id := int32(i + 1)
		// Blocked counts since the broker was added: this cut's count is
		// the growth since the last heal (the hooks run one at a time,
		// under the process's lock).
		var before uint64
		process.SetPartition(func() (string, error) { return "", p.group.Cut(id) }, func() (string, error) {
			err := p.group.Heal(id)
			blocked := p.group.Blocked(id)
			detail := fmt.Sprintf("%d connections dropped or refused during the cut", blocked-before)
			before = blocked
			return detail, err
		})
		// The restore (a zero link after a non-zero one) says what the
		// degrade impaired: the growth of Impaired since (the hook runs
		// under the process's lock too).
		var degradedAt partition.Impairment
		degraded := false
		process.SetNetwork(func(link netem.Link) (string, error) {
			if err := p.group.Degrade(id, link); err != nil {
				return "", err
			}
			now, detail := p.group.Impaired(id), ""
			if degraded && link.Zero() {
				impaired := now.Sub(degradedAt)
				detail = fmt.Sprintf("impaired %s; deliveries at most %v late", impaired, impaired.MaxLateness.Round(time.Microsecond))
			}
			degradedAt, degraded = now, !link.Zero()
			return detail, nil
		})
	}
}

// rpcOf is the quorum RPC address of a Raft address (port +
// clusterRPCOffset).
func rpcOf(raft string) string {
	host, portText, _ := net.SplitHostPort(raft)
	port, _ := strconv.Atoi(portText)
	return net.JoinHostPort(host, strconv.Itoa(port+clusterRPCOffset))
}

// NeedsPartitionProxies reports whether a workload's fault matrix has a
// plan that cuts brokers off the network (broker-partition) or slows
// their links to each other (slow-follower): then a cluster target must
// be started with TargetConfig.PartitionProxies. A plan that does not
// load is left to the run to report.
func NeedsPartitionProxies(workload Workload) bool {
	entries := workload.Faults
	if workload.Overhead != nil {
		// The cost rounds' plans, a network sweep's steps layered on.
		entries = append(slices.Clone(entries), workload.Overhead.faultEntries()...)
	}
	for _, entry := range entries {
		plan, err := entry.load()
		if err != nil {
			continue
		}
		for _, action := range plan.Processes {
			if action.Action == faults.ProcessBrokerPartition || action.Action == faults.ProcessSlowFollower {
				return true
			}
		}
	}
	return false
}
