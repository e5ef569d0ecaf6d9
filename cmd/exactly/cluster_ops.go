package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The operator's commands of a running cluster: `exactly cluster
// add-broker` starts one more member of a cluster `exactly cluster`
// started and moves a fair share of the replicas to it; `exactly cluster
// drain` moves every replica off one broker so it can be stopped;
// `exactly cluster rebalance` spreads replicas and preferred leaders
// evenly. drain and rebalance work on any cluster that serves
// AlterPartitionReassignments (ours, or Kafka).

// clusterLayoutFile is where `exactly cluster` records its layout in its
// data directory, for add-broker.
const clusterLayoutFile = "cluster.json"

// savedLayout is clusterLayout as JSON.
type savedLayout struct {
	Host        string   `json:"host"`
	Port        int      `json:"port"`
	Brokers     int      `json:"brokers"`
	Settings    []string `json:"settings,omitempty"`
	MetricsHost string   `json:"metrics_host,omitempty"`
	MetricsPort int      `json:"metrics_port,omitempty"`
	SASLHost    string   `json:"sasl_host,omitempty"`
	SASLPort    int      `json:"sasl_port,omitempty"`
	UsersFile   string   `json:"users_file,omitempty"`
}

func saveLayout(layout clusterLayout) error {
	data, err := json.MarshalIndent(savedLayout{Host: layout.host, Port: layout.port, Brokers: layout.brokers,
		Settings: layout.settings, MetricsHost: layout.metricsHost, MetricsPort: layout.metricsPort,
		SASLHost: layout.saslHost, SASLPort: layout.saslPort, UsersFile: layout.usersFile}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(layout.dataDir, clusterLayoutFile), append(data, '\n'), 0o644)
}

func loadLayout(dataDir string) (clusterLayout, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, clusterLayoutFile))
	if err != nil {
		return clusterLayout{}, fmt.Errorf("%s is not the data directory of a cluster started by `exactly cluster`: %w", dataDir, err)
	}
	var s savedLayout
	if err := json.Unmarshal(data, &s); err != nil {
		return clusterLayout{}, fmt.Errorf("%s: %w", clusterLayoutFile, err)
	}
	return clusterLayout{dataDir: dataDir, host: s.Host, port: s.Port, brokers: s.Brokers, settings: s.Settings,
		metricsHost: s.MetricsHost, metricsPort: s.MetricsPort, saslHost: s.SASLHost, saslPort: s.SASLPort, usersFile: s.UsersFile}, nil
}

const addBrokerDescription = `Starts one more broker of a cluster that 'exactly cluster --data-dir DIR'
is running, as a child of this command, with the ports and settings that
cluster gave its members (read from DIR/cluster.json): broker id --id
(default: the next free one) listens on PORT+id-1, joins the metadata
quorum as a non-voter and registers. Once it is in the cluster's metadata,
with --rebalance (the default) the replicas and preferred leaders of every
topic (the internal ones too) are spread evenly over all brokers with
AlterPartitionReassignments: new replicas copy their partitions from the
leaders and join the in-sync replicas before old ones leave, so producers
with acks=all and consumers keep running. Then it keeps the broker running
until SIGINT or SIGTERM.`

const drainDescription = `Moves every replica off broker --broker, so it can be stopped or retired
without losing a copy: each partition that has a replica there gets, in its
place, the broker that holds the fewest replicas, with
AlterPartitionReassignments. The new replicas copy from the leaders and join
the in-sync replicas before the drained broker leaves each replica set (a
partition it led moves its leadership to an in-sync replica). Waits until
ListPartitionReassignments shows none left and prints what moved. Works
against any cluster that serves AlterPartitionReassignments.`

const rebalanceDescription = `Spreads the replicas of every topic (the internal ones too) evenly over the
cluster's brokers (or --brokers), within one replica of each other, and the
preferred leaders (each partition's first replica) within two, moving as
few replicas as it can; waits for the moves, then elects the preferred
leaders (ElectLeaders). Works against any cluster that serves
AlterPartitionReassignments.`

// clusterOperations are the operations `exactly cluster` takes as its
// first argument.
var clusterOperations = []string{"add-broker", "drain", "rebalance"}

// runClusterOperation runs `exactly cluster <op>`; ok is false when args
// name no operation (then it is `exactly cluster` itself).
func runClusterOperation(args []string, stdout, stderr io.Writer) (bool, error) {
	if len(args) == 0 {
		return false, nil
	}
	switch args[0] {
	case "add-broker":
		return true, runAddBroker(args[1:], stdout, stderr)
	case "drain":
		return true, runDrain(args[1:], stdout, stderr)
	case "rebalance":
		return true, runRebalance(args[1:], stdout, stderr)
	}
	return false, nil
}

func runDrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cluster drain", drainDescription, stderr)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "the cluster's bootstrap addresses, comma-separated")
	brokerID := fs.Int("broker", -1, "the id of the broker to drain (required)")
	timeout := fs.Duration("timeout", 30*time.Minute, "how long to wait for the moves")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *brokerID < 0 {
		return usageError("--broker is required (the id of the broker to drain)")
	}
	ctx, adm, done, err := adminSession(*bootstrap, *timeout)
	if err != nil {
		return err
	}
	defer done()
	current, brokers, err := currentAssignment(ctx, adm)
	if err != nil {
		return err
	}
	gone := int32(*brokerID)
	if !slices.Contains(brokers, gone) {
		fmt.Fprintf(stderr, "exactly cluster drain: broker %d is not in the cluster's metadata (stopped?); moving its replicas anyway\n", gone)
	}
	moves, stuck := planDrain(current, brokers, gone)
	if len(stuck) > 0 {
		return fmt.Errorf("broker %d cannot be drained: %d partitions (e.g. %s-%d) have a replica on every other broker; add a broker or lower their replication factor", gone, len(stuck), stuck[0].topic, stuck[0].partition)
	}
	if err := moveReplicas(ctx, adm, moves, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "broker %d holds no replica; it can be stopped\n", gone)
	return nil
}

func runRebalance(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cluster rebalance", rebalanceDescription, stderr)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "the cluster's bootstrap addresses, comma-separated")
	only := fs.String("brokers", "", "spread over these broker ids only, comma-separated (default: every broker in the metadata)")
	timeout := fs.Duration("timeout", 30*time.Minute, "how long to wait for the moves")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	brokers, err := parseBrokerIDs(*only)
	if err != nil {
		return usageError("--brokers %q: %v", *only, err)
	}
	ctx, adm, done, err := adminSession(*bootstrap, *timeout)
	if err != nil {
		return err
	}
	defer done()
	return rebalance(ctx, adm, brokers, stdout)
}

// adminSession is an admin client of the cluster at bootstrap and a
// context that ends at SIGINT, SIGTERM or after timeout; done releases
// both.
func adminSession(bootstrap string, timeout time.Duration) (context.Context, *kadm.Client, func(), error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	adm, closeAdmin, err := adminClient(bootstrap)
	if err != nil {
		cancel()
		stop()
		return nil, nil, nil, err
	}
	return ctx, adm, func() { closeAdmin(); cancel(); stop() }, nil
}

// rebalance spreads every partition over brokers (nil: every broker in
// the metadata), waits, and elects the preferred leaders.
func rebalance(ctx context.Context, adm *kadm.Client, brokers []int32, stdout io.Writer) error {
	current, live, err := currentAssignment(ctx, adm)
	if err != nil {
		return err
	}
	if brokers == nil {
		brokers = live
	}
	if err := moveReplicas(ctx, adm, planRebalance(current, brokers), stdout); err != nil {
		return err
	}
	elected, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	if err != nil {
		return fmt.Errorf("elect preferred leaders: %w", err)
	}
	n := 0
	for _, ps := range elected {
		for _, r := range ps {
			if r.Err == nil {
				n++
			}
		}
	}
	fmt.Fprintf(stdout, "preferred leaders elected: %d partitions\n", n)
	return nil
}

func parseBrokerIDs(text string) ([]int32, error) {
	if text == "" {
		return nil, nil
	}
	var ids []int32
	for _, part := range strings.Split(text, ",") {
		var id int32
		if _, err := fmt.Sscanf(strings.TrimSpace(part), "%d", &id); err != nil || id < 0 {
			return nil, fmt.Errorf("%q is not a broker id", part)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func adminClient(bootstrap string) (*kadm.Client, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return nil, nil, fmt.Errorf("client for %s: %w", bootstrap, err)
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// currentAssignment reads every partition's replicas (internal topics
// included) and the brokers from Metadata.
func currentAssignment(ctx context.Context, adm *kadm.Client) (assignment, []int32, error) {
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("metadata: %w", err)
	}
	current := assignment{}
	for _, td := range md.Topics {
		if td.Err != nil {
			return nil, nil, fmt.Errorf("metadata of %s: %w", td.Topic, td.Err)
		}
		for _, pd := range td.Partitions {
			current[topicPartition{topic: td.Topic, partition: pd.Partition}] = slices.Clone(pd.Replicas)
		}
	}
	var brokers []int32
	for _, b := range md.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	slices.Sort(brokers)
	return current, brokers, nil
}

// moveReplicas submits moves and waits until none is in progress,
// printing progress and, at the end, what moved and how long it took.
func moveReplicas(ctx context.Context, adm *kadm.Client, moves assignment, stdout io.Writer) error {
	if len(moves) == 0 {
		fmt.Fprintln(stdout, "nothing to move")
		return nil
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	watch := kadm.TopicsSet{}
	for tp, list := range moves {
		req.Assign(tp.topic, tp.partition, list)
		watch.Add(tp.topic, tp.partition)
	}
	start := time.Now()
	answers, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("alter partition reassignments: %w", err)
	}
	var errs []error
	for _, a := range answers.Sorted() {
		if a.Err != nil {
			errs = append(errs, fmt.Errorf("%s-%d: %w %s", a.Topic, a.Partition, a.Err, a.ErrMessage))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reassignments refused: %w", err)
	}
	size := partitionBytes(ctx, adm, watch)
	fmt.Fprintf(stdout, "moving %d partitions (%s)\n", len(moves), formatBytes(size))
	lastReport := time.Now()
	for {
		// Done when no move is listed and the metadata shows every
		// partition on its target (a broker may answer the list before it
		// has applied a move just accepted by another).
		listed, err := adm.ListPartitionReassignments(ctx, watch)
		if err == nil && len(listed.Sorted()) == 0 && onTargets(ctx, adm, moves) {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("reassignments still in progress: %d of %d partitions: %w", len(listed.Sorted()), len(moves), ctx.Err())
		}
		if time.Since(lastReport) >= 5*time.Second {
			fmt.Fprintf(stdout, "  %d of %d partitions still copying (%s)\n", len(listed.Sorted()), len(moves), time.Since(start).Round(time.Second))
			lastReport = time.Now()
		}
		time.Sleep(200 * time.Millisecond) // poll interval of a bounded wait
	}
	fmt.Fprintf(stdout, "moved %d partitions (%s) in %s\n", len(moves), formatBytes(size), time.Since(start).Round(time.Millisecond))
	return nil
}

// onTargets reports whether the metadata shows every partition of moves
// with exactly its target replicas.
func onTargets(ctx context.Context, adm *kadm.Client, moves assignment) bool {
	current, _, err := currentAssignment(ctx, adm)
	if err != nil {
		return false
	}
	for tp, target := range moves {
		if !slices.Equal(current[tp], target) {
			return false
		}
	}
	return true
}

// partitionBytes sums the partitions' sizes on disk (DescribeLogDirs; the
// largest copy of each), 0 when the cluster does not say.
func partitionBytes(ctx context.Context, adm *kadm.Client, partitions kadm.TopicsSet) int64 {
	dirs, err := adm.DescribeAllLogDirs(ctx, partitions)
	if err != nil {
		return 0
	}
	largest := map[topicPartition]int64{}
	for _, perBroker := range dirs {
		perBroker.EachPartition(func(p kadm.DescribedLogDirPartition) {
			tp := topicPartition{topic: p.Topic, partition: p.Partition}
			largest[tp] = max(largest[tp], p.Size)
		})
	}
	var total int64
	for _, size := range largest {
		total += size
	}
	return total
}

// formatBytes prints a byte count in binary units.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func runAddBroker(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cluster add-broker", addBrokerDescription, stderr)
	dataDir := fs.String("data-dir", "", "the data directory of the running `exactly cluster` (required)")
	id := fs.Int("id", 0, "the new broker's id (default: one more than the highest broker directory)")
	move := fs.Bool("rebalance", true, "once the broker is in the cluster, spread replicas and preferred leaders over every broker")
	readyTimeout := fs.Duration("ready-timeout", time.Minute, "how long to wait for the broker to be in the cluster's metadata")
	stopTimeout := fs.Duration("stop-timeout", 20*time.Second, "how long to wait for the broker to stop after a signal before killing it")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dataDir == "" {
		return usageError("--data-dir is required (the --data-dir of the running `exactly cluster`)")
	}
	if *id != 0 && (*id <= 3 || *id > maxClusterBrokers) {
		return usageError("--id %d: must be 4..%d (ids 1..3 are the quorum's voters)", *id, maxClusterBrokers)
	}
	layout, err := loadLayout(*dataDir)
	if err != nil {
		return err
	}
	if *id == 0 {
		*id = layout.brokers + 1
		for {
			if _, err := os.Stat(filepath.Join(*dataDir, fmt.Sprintf("broker-%d", *id))); err != nil {
				break
			}
			*id++
		}
	}
	if *id <= 3 || *id > maxClusterBrokers {
		return usageError("--id %d: must be 4..%d (ids 1..3 are the quorum's voters)", *id, maxClusterBrokers)
	}
	if _, _, err := clusterListen(net0(layout), *id); err != nil {
		return usageError("--id %d: %v", *id, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	members, err := startMember(exe, layout, *id)
	if err != nil {
		return err
	}
	m := members[0]
	if err := waitBrokerInMetadata(ctx, m, layout, int32(*id), *readyTimeout); err != nil {
		stopMembers(members, syscall.SIGTERM, *stopTimeout, stderr)
		return err
	}
	fmt.Fprintf(stdout, "broker %d is in the cluster (listening on %s)\n", *id, m.listen)
	if *move {
		adm, closeAdmin, err := adminClient(m.listen)
		if err != nil {
			stopMembers(members, syscall.SIGTERM, *stopTimeout, stderr)
			return err
		}
		err = rebalance(ctx, adm, nil, stdout)
		closeAdmin()
		if err != nil {
			fmt.Fprintf(stderr, "exactly cluster add-broker: rebalance: %v; the broker keeps running\n", err)
		}
	}
	select {
	case <-ctx.Done():
		fmt.Fprintf(stderr, "exactly cluster add-broker: signal received; stopping broker %d\n", *id)
		return stopMembers(members, syscall.SIGTERM, *stopTimeout, stderr)
	case <-m.exited:
		return fmt.Errorf("broker %d exited (%v); see %s", *id, m.err, filepath.Join(*dataDir, fmt.Sprintf("broker-%d.log", *id)))
	}
}

// net0 is the layout's first listen address.
func net0(layout clusterLayout) string {
	return fmt.Sprintf("%s:%d", layout.host, layout.port)
}

// waitBrokerInMetadata waits until the new member's Metadata lists it.
func waitBrokerInMetadata(ctx context.Context, m *clusterMember, layout clusterLayout, id int32, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		n, err := metadataBrokers(ctx, m.listen)
		if err == nil && n > min(3, layout.brokers) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(m.listen))
			if err == nil {
				md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
				cl.Close()
				if err == nil && slices.ContainsFunc(md.Brokers, func(b kadm.BrokerDetail) bool { return b.NodeID == id }) {
					return nil
				}
			}
		}
		select {
		case <-m.exited:
			return fmt.Errorf("broker %d exited before joining (%v)", id, m.err)
		case <-ctx.Done():
			return fmt.Errorf("broker %d not in the cluster's metadata after %v", id, timeout)
		case <-time.After(200 * time.Millisecond): // poll interval of a bounded wait
		}
	}
}
