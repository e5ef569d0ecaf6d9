package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/livemetrics"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/suite"
)

// selfCommand is how the load generator runs this binary again: the
// brokers it launches (process faults, --target cluster) and its client
// workers. Tests replace it with their own binary in command mode.
var selfCommand = loadgen.DefaultSelfCommand

// loadgenFlags are the command-line settings of `exactly loadgen`. Flags
// left unset keep the workload file's values.
type loadgenFlags struct {
	workload, modes, target, bootstrap, out, dataDir string
	records                                          int64
	duration, warmup, drain                          time.Duration
	recordSize, partitions, replication              int
	producers, consumers, rate                       int
	commitIntervals                                  string
	commitRecords                                    int
	abortShare                                       float64
	keys                                             string
	faultPlans                                       string
	database, profile                                string
	dedupWindow                                      int64
	shareReleaseEvery                                int64
	rounds                                           int
	rtts, rttPath                                    string
	groupProtocol                                    string
	quiet, jsonProgress                              bool
	// wide prints every column of the summary and the matrix; csv is a
	// file for the runs as CSV ("": none).
	wide                            bool
	csv                             string
	listWorkloads, listPlans, quick bool
	findMax                         findMaxFlags
	metricsListen, brokerMetrics    string
	// faultExec are the --fault-exec name=command hooks, bounded by
	// faultExecTimeout each, with faultRecoveryTimeout for a broker to be
	// back after its fault.
	faultExec                              repeatedFlag
	faultExecTimeout, faultRecoveryTimeout time.Duration
	// security is how clients connect to a --bootstrap cluster.
	security clientsec.Config
	// workers, workerExec and workerHosts are where the load's producers
	// run (--workers, --worker-exec, --worker-hosts).
	workers, pipelineWorkers int
	workerExec, workerHosts  string
	// live is the collectors --metrics-listen serves, started by
	// runLoadgen after parsing (nil: off).
	live *livemetrics.Loadgen
}

func (f *loadgenFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.workload, "workload", "standard", "workload YAML file, or the name of a shipped workload ("+strings.Join(loadgen.WorkloadNames(), ", ")+")")
	fs.StringVar(&f.modes, "mode", "", "comma-separated delivery modes to run: "+strings.Join(modes.Names(), ", "))
	fs.StringVar(&f.target, "target", loadgen.TargetEmbedded, "cluster to run against: embedded (our broker, in process), kfake (franz-go's in-memory Kafka), "+
		"cluster (3 of our brokers launched as processes, a Raft metadata quorum, topics replicated 3 times with min.insync.replicas 2; "+
		"the leader-kill, coordinator-kill, leader-pause, broker-partition and slow-follower fault plans need it, "+
		"or for all but broker-partition and slow-follower --fault-exec with --bootstrap; "+
		"with broker-partition or slow-follower every connection goes through proxies that can cut a broker off or slow its links to the others); "+
		"--bootstrap implies an existing cluster")
	fs.StringVar(&f.bootstrap, "bootstrap", "", "host:port[,host:port...] of an existing Kafka-compatible cluster")
	fs.StringVar(&f.out, "out", "results", "directory for the results JSON file")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory of the embedded broker (default: a temporary directory, removed afterwards)")
	fs.Int64Var(&f.records, "records", 0, "records per mode, over all producers")
	fs.DurationVar(&f.duration, "duration", 0, "measured time per mode, after the warm-up")
	fs.DurationVar(&f.warmup, "warmup", -1, "warm-up per mode: sent and verified, not measured")
	fs.DurationVar(&f.drain, "drain", 0, "time allowed for consumers, pipeline and verification reads to catch up")
	fs.IntVar(&f.recordSize, "record-size", 0, "record value size in bytes (at least 32)")
	fs.IntVar(&f.partitions, "partitions", 0, "partitions per topic")
	fs.IntVar(&f.replication, "replication-factor", 0, "replication factor per topic")
	fs.IntVar(&f.producers, "producers", 0, "producer clients per mode")
	fs.IntVar(&f.consumers, "consumers", -1, "live consumers per mode measuring end-to-end latency")
	fs.IntVar(&f.rate, "rate", -1, "target records/s over all producers (0: as fast as acknowledged)")
	fs.IntVar(&f.workers, "workers", 0, "run the load's producers in N worker processes (divided among them) instead of this one: "+
		"local subprocesses, or through --worker-exec on other machines; their histograms are merged and one checker judges the union")
	fs.StringVar(&f.workerExec, "worker-exec", "", "command that starts one worker where it should run, its stdin and stdout carried back: "+
		"e.g. 'ssh {host} exactly loadgen worker' or 'kubectl exec -i loadgen-{i} -- exactly loadgen worker'; "+
		"{host} is replaced by a host of --worker-hosts (in turn), {i} by the worker's number from 0; split into words like a shell would, "+
		"not run by one (wrap it in sh -c '…' for pipes or variables)")
	fs.StringVar(&f.workerHosts, "worker-hosts", "", "comma-separated hosts for {host} in --worker-exec, used in turn")
	fs.IntVar(&f.pipelineWorkers, "pipeline-workers", 0, "consume-transform-produce workers in eos-pipeline")
	fs.StringVar(&f.commitIntervals, "commit-interval", "", "transactional commit interval(s), comma-separated (e.g. 1ms,10ms,100ms,1s): one run each")
	fs.IntVar(&f.commitRecords, "commit-records", -1, "end a transaction after this many records (0: no cap)")
	fs.Float64Var(&f.abortShare, "abort-share", -1, "fraction of transactions aborted on purpose")
	fs.StringVar(&f.keys, "keys", "", "key distribution: none, uniform or zipf")
	fs.StringVar(&f.faultPlans, "faults", "", "comma-separated fault plans (shipped: "+strings.Join(faults.PlanNames(), ", ")+", or YAML files): run the modes under each, replacing the workload's fault matrix; "+
		"the rounds of --workload cost or overhead run under each plan; the standard and quick suites' cost rounds run under them with --rounds N, "+
		"and are left out without it")
	fs.StringVar(&f.database, "db", "", "application database of consumer-dedup and external-offsets: postgres://… URL or an SQLite file (default: an SQLite file in a temporary directory)")
	fs.Int64Var(&f.dedupWindow, "dedup-window", 0, "consumer-dedup window: keys of the last N offsets of each partition are remembered")
	fs.Int64Var(&f.shareReleaseEvery, "share-release-every", 0,
		"share-group: the consumers hand back (release) 1 record in N on its first delivery, so that redelivery is exercised (1000 unless the workload sets application.share_release_every)")
	fs.IntVar(&f.rounds, "rounds", 0, "interleaved rounds of the cost rounds (the standard and quick suites after their matrix, --workload cost, --workload overhead): "+
		"every mode once per round under each fault plan, ratios to at-least-once with a 95% interval over the rounds and an A/A pair as the noise floor; "+
		"of the security workload (--workload security): every mode over every protocol once per round, ratios to PLAINTEXT likewise; "+
		"or of a comparison of group protocols (--group-protocol both, --workload group-protocols)")
	fs.StringVar(&f.rtts, "rtt", "", "round-trip times to sweep, comma-separated (e.g. 0,1ms,5ms,20ms,50ms): the cost rounds (--workload network, cost, overhead, commit-curve) "+
		"run once per round-trip time added to the network, each direction delayed by half, every mode compared with at-least-once over the same network; "+
		"0 is the same path without delay; replaces the workload's overhead.network.rtts")
	fs.StringVar(&f.rttPath, "rtt-path", "", "what --rtt slows: clients (between the load generator's clients and every broker, the default) "+
		"or follower (one follower's links to the other brokers of --target cluster: acks=all waits for it)")
	fs.StringVar(&f.groupProtocol, "group-protocol", "", "consumer group protocol of every group consumer (eos-pipeline, consumer-dedup, external-offsets, "+
		"the group-churn relay, consumer-crash's workers), Kafka's client setting group.protocol: classic (JoinGroup/SyncGroup, "+
		"the client assigns; the default) or consumer (KIP-848 ConsumerGroupHeartbeat, the broker assigns with the uniform assignor; "+
		"the target must serve it); both: every run with a group under each, interleaved over --rounds rounds (default 3), "+
		"comparing their rebalance pauses under group-churn (--workload group-protocols does that for the three group modes)")
	fs.StringVar(&f.profile, "profile", "", "profile the load generator into profiles/loadgen-<run id>/: cpu, mem, block, mutex or trace")
	fs.BoolVar(&f.quick, "quick", false, "run the short fault matrix and cost rounds under lost acks (the quick workload, about 2½ minutes)")
	fs.BoolVar(&f.listPlans, "list-plans", false, "list the shipped fault plans and exit")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress output: only the summary tables and where the results are")
	fs.BoolVar(&f.jsonProgress, "json-progress", false, "progress as JSON lines on stdout (events suite, cell_started, status, cell_finished, suite_finished) instead of text and tables, for scripts")
	fs.BoolVar(&f.listWorkloads, "list-workloads", false, "list the shipped workloads with what each measures and its expected duration, and exit")
	fs.BoolVar(&f.wide, "wide", false, "print every column of the summary (MB/s, every latency percentile, sent and acknowledged, each anomaly), "+
		"the whole expectation and observation in the fault matrix and the Produce split of the broker-side table, however wide; "+
		"by default those tables fit 120 columns")
	fs.StringVar(&f.csv, "csv", "", "also write the runs to this CSV file: a header row, then one row per run with every column of the wide summary")
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "serve the load generator's own Prometheus metrics on http://ADDR/metrics while it runs, "+
		"e.g. 127.0.0.1:9645 (records sent, acknowledged and failed per mode, ack latency, checker counts so far, faults fired; default: off)")
	fs.StringVar(&f.brokerMetrics, "broker-metrics", "", "URL of the target broker's Prometheus /metrics, read before and after each cell: "+
		"the broker's own figures (time per request, fsyncs, transaction markers) go into the results and the dashboard; "+
		"also reads Apache Kafka through the JMX exporter (e.g. http://kafka:7071/metrics) and Redpanda (http://redpanda:9644/public_metrics) "+
		"(default: the embedded broker's, when it serves them; none for other targets)")
	fs.Var(&f.faultExec, "fault-exec", "name=command (repeatable): a command that acts on one broker of a cluster the load generator did not launch (--bootstrap), "+
		"so that the process fault plans run against it. Names: kill (crash the broker), start (start a killed broker again), pause (stop it without killing it, "+
		"like SIGSTOP), resume (let a paused broker run again, like SIGCONT). broker-restart, leader-kill and coordinator-kill need kill and start; "+
		"leader-pause needs pause and resume. The command runs with sh -c; {id}, {host} and {port} are replaced by the target broker's node id, host and port "+
		"as Metadata lists them (quoted for the shell where needed: do not quote them again), and EXACTLY_BROKER_ID, _HOST and _PORT are set. "+
		"The broker is chosen when the fault fires: the leader of most of the run's partitions (leader-kill, leader-pause), the transaction coordinator "+
		"of the run's first producer (coordinator-kill), or one drawn at random, the same one for the same plan (broker-restart). "+
		"After start or resume the load generator waits until the broker is back in Metadata and every partition of the run's topics has all its replicas in sync. "+
		"A start command that leaves the broker running in the background must send the broker's output elsewhere (e.g. >>broker.log 2>&1). "+
		"Example: --fault-exec kill='ssh {host} sudo systemctl kill -s KILL kafka' --fault-exec start='ssh {host} sudo systemctl start kafka'. "+
		"A command that exits non-zero or runs past --fault-exec-timeout fails its run, and the cells after it are not run")
	fs.DurationVar(&f.faultExecTimeout, "fault-exec-timeout", faults.DefaultHookTimeout, "longest a --fault-exec command may run before it is killed and its run fails")
	fs.DurationVar(&f.faultRecoveryTimeout, "fault-recovery-timeout", faults.DefaultRecoveryTimeout,
		"with --fault-exec: longest wait after a start or resume command until the broker is back in Metadata with every partition's replicas in sync; "+
			"past it the run fails and the cells after it are not run")
	f.findMax.register(fs)
	registerSecurityFlags(fs, &f.security)
	markFromWorkload(fs, "mode", "records", "duration", "warmup", "drain", "record-size", "partitions", "replication-factor",
		"producers", "consumers", "rate", "pipeline-workers", "commit-interval", "commit-records", "abort-share", "keys",
		"faults", "dedup-window", "share-release-every")
}

// workloadSweep is the workload's network sweep, or nil.
func workloadSweep(w loadgen.Workload) *loadgen.NetworkSweep {
	if w.Overhead == nil {
		return nil
	}
	return w.Overhead.Network
}

// applyNetworkSweep applies --rtt and --rtt-path to the workload's cost
// rounds.
func (f *loadgenFlags) applyNetworkSweep(w *loadgen.Workload) error {
	if f.rtts == "" && f.rttPath == "" {
		return nil
	}
	if w.Overhead == nil {
		return usageError("--rtt: workload %s has no cost rounds to sweep (use --workload network, cost, overhead or commit-curve)", w.Name)
	}
	sweep := loadgen.NetworkSweep{}
	if w.Overhead.Network != nil {
		sweep = *w.Overhead.Network
	}
	if f.rtts != "" {
		sweep.RTTs = nil
		for _, text := range strings.Split(f.rtts, ",") {
			text = strings.TrimSpace(text)
			if text == "0" {
				sweep.RTTs = append(sweep.RTTs, 0)
				continue
			}
			rtt, err := time.ParseDuration(text)
			if err != nil || rtt < 0 {
				return usageError("--rtt %s: %q is not a round-trip time such as 0, 500us, 5ms or 50ms", f.rtts, text)
			}
			sweep.RTTs = append(sweep.RTTs, loadgen.Duration(rtt))
		}
	}
	if f.rttPath != "" {
		sweep.Path = f.rttPath
	}
	if len(sweep.RTTs) == 0 {
		return usageError("--rtt-path %s: give the round-trip times with --rtt (workload %s sweeps none)", f.rttPath, w.Name)
	}
	if err := sweep.Validate(); err != nil {
		return usageError("--rtt %s: %v", f.rtts, err)
	}
	w.Overhead.Network = &sweep
	return nil
}

// faultHooks parses --fault-exec (nil when none was given); the hooks
// are for a cluster the load generator did not launch.
func (f *loadgenFlags) faultHooks() (*faults.Hooks, error) {
	if len(f.faultExec) == 0 {
		return nil, nil
	}
	if f.bootstrap == "" {
		return nil, errors.New("--fault-exec is for a cluster the load generator did not launch (--bootstrap host:port): " +
			"it kills, starts, pauses and resumes the brokers of the other targets itself")
	}
	return faults.ParseHooks(f.faultExec, f.faultExecTimeout, f.faultRecoveryTimeout)
}

// apply overrides the workload's values with the flags that were set.
func (f *loadgenFlags) apply(w *loadgen.Workload) error {
	if f.modes != "" {
		w.Modes = nil
		for _, mode := range strings.Split(f.modes, ",") {
			w.Modes = append(w.Modes, strings.TrimSpace(mode))
		}
		for i := range w.Faults {
			w.Faults[i].Modes = nil // --mode applies to every plan of the matrix
		}
		if w.Overhead != nil {
			w.Overhead.Modes = nil // and to the cost rounds' slots
			for i := range w.Overhead.Faults {
				w.Overhead.Faults[i].Modes = nil
			}
		}
	}
	if f.faultPlans != "" {
		var entries []loadgen.MatrixEntry
		for _, plan := range strings.Split(f.faultPlans, ",") {
			entries = append(entries, loadgen.MatrixEntry{Plan: strings.TrimSpace(plan)})
		}
		// An overhead workload's rounds run under the plans. A workload
		// with a fault matrix runs its matrix under them; its cost rounds
		// run under them too only when --rounds asks for them (a focused
		// run of a few plans should not add minutes of rounds).
		if w.Overhead != nil {
			switch {
			case len(w.Faults) == 0:
				w.Overhead.Faults = entries
				entries = nil
			case f.rounds > 0:
				w.Overhead.Faults = append([]loadgen.MatrixEntry(nil), entries...)
			default:
				w.Overhead = nil
			}
		}
		w.Faults = entries
	}
	setPositive(&w.Records, f.records)
	setPositive(&w.Duration, loadgen.Duration(f.duration))
	setPositive(&w.Drain, loadgen.Duration(f.drain))
	if f.warmup >= 0 {
		w.Warmup = loadgen.Duration(f.warmup)
	}
	setPositive(&w.RecordSize, f.recordSize)
	setPositive(&w.Partitions, f.partitions)
	setPositive(&w.ReplicationFactor, f.replication)
	setPositive(&w.Producers, f.producers)
	setPositive(&w.Pipeline.Workers, f.pipelineWorkers)
	setPositive(&w.Application.DedupWindow, f.dedupWindow)
	setPositive(&w.Application.ShareReleaseEvery, f.shareReleaseEvery)
	if f.consumers >= 0 {
		w.Consumers = f.consumers
	}
	if f.rate >= 0 {
		w.Rate = f.rate
	}
	if f.commitRecords >= 0 {
		w.Transaction.CommitRecords = f.commitRecords
	}
	if f.abortShare >= 0 {
		w.Transaction.AbortShare = f.abortShare
	}
	if f.keys != "" {
		w.Keys.Distribution = f.keys
	}
	switch f.groupProtocol {
	case "":
	case loadgen.GroupProtocolBoth:
		// The comparison of protocols replaces a suite's cost rounds
		// (an overhead workload without a matrix is refused below).
		if len(w.Faults) > 0 {
			w.Overhead = nil
		}
		if w.GroupProtocols == nil {
			w.GroupProtocols = &loadgen.GroupProtocolsSpec{Rounds: loadgen.DefaultProtocolRounds}
		}
	case loadgen.GroupProtocolClassic, loadgen.GroupProtocolConsumer:
		if w.GroupProtocols != nil {
			return usageError("--group-protocol %s: workload %s compares both protocols; use --group-protocol both or another workload", f.groupProtocol, w.Name)
		}
		w.GroupProtocol = f.groupProtocol
	default:
		return usageError("--group-protocol %s: not classic, consumer or both", f.groupProtocol)
	}
	if f.rounds < 0 {
		return usageError("--rounds %d: must be 1 or more", f.rounds)
	}
	if f.rounds > 0 {
		switch {
		case w.Overhead != nil:
			w.Overhead.Rounds = f.rounds
		case w.Security != nil:
			w.Security.Rounds = f.rounds
		case w.GroupProtocols != nil:
			w.GroupProtocols.Rounds = f.rounds
		default:
			return usageError("--rounds: workload %s does not run interleaved rounds (use --workload overhead or --workload security, or --group-protocol both)", w.Name)
		}
	}
	if err := f.applyNetworkSweep(w); err != nil {
		return err
	}
	if f.commitIntervals != "" {
		w.Transaction.CommitIntervals = nil
		for _, text := range strings.Split(f.commitIntervals, ",") {
			interval, err := time.ParseDuration(strings.TrimSpace(text))
			if err != nil {
				if ms, msErr := strconv.Atoi(strings.TrimSpace(text)); msErr == nil {
					interval = time.Duration(ms) * time.Millisecond
				} else {
					return usageError("--commit-interval %s: not a duration like 100ms", text)
				}
			}
			if interval <= 0 {
				return usageError("--commit-interval %s: must be more than 0 (e.g. 100ms)", strings.TrimSpace(text))
			}
			w.Transaction.CommitIntervals = append(w.Transaction.CommitIntervals, loadgen.Duration(interval))
		}
	}
	return w.Validate()
}

func setPositive[T int | int64 | loadgen.Duration](field *T, value T) {
	if value > 0 {
		*field = value
	}
}

func runLoadgen(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "worker" {
		// Hidden: a producer or pipeline worker the runner launched for a
		// client fault (see loadgen.RunWorker).
		return loadgen.RunWorker(args[1:], os.Stdin, stdout)
	}
	fs := newFlagSet("loadgen", "Measures what each delivery guarantee costs under faults and checks every record.\n"+
		"With no flags: the standard suite (delivery modes x fault plans, broker-level and application-level\n"+
		"exactly-once side by side, then what each guarantee costs under lost acks, a broker crash and a\n"+
		"zombie producer with 95% intervals; about 10 minutes) against the\n"+
		"embedded broker, with the expectations table; exit status 0 iff no run failed its expectation\n"+
		"(unsupported, untestable and not-applicable runs are listed, not failed).\n\n"+
		"Delivery modes, in Kafka's client settings:\n"+modes.Help()+"\n"+
		"Fault plans (--faults; --list-plans names them):\n"+planHelp(), stderr)
	var flags loadgenFlags
	flags.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := flags.check(fs); err != nil {
		return err
	}
	if flags.listPlans {
		return listPlans(stdout)
	}
	if flags.quick {
		flags.workload = "quick"
	}
	switch {
	case flags.findMax.enabled && !flagSet(fs, "workload"):
		flags.workload = "find-max"
	case flags.findMax.fractions != "" && !flagSet(fs, "workload"):
		flags.workload = fractionWorkload
	}
	if err := checkSecurityFlags(&flags); err != nil {
		return err
	}
	hooks, err := flags.faultHooks()
	if err != nil {
		return usageError("%s", err.Error())
	}
	if flags.listWorkloads {
		return listWorkloads(stdout)
	}
	workload, err := loadgen.LoadWorkload(flags.workload)
	if err != nil {
		return err
	}
	if err := flags.apply(&workload); err != nil {
		return fmt.Errorf("workload %s: %w", workload.Name, err)
	}
	if sweep := workloadSweep(workload); sweep != nil && sweep.Path == loadgen.NetworkPathFollower &&
		(flags.target != loadgen.TargetCluster || flags.bootstrap != "") {
		return usageError("--rtt-path follower slows one follower's links to the other brokers through the partition proxies of a cluster " +
			"the load generator launches: add --target cluster (use --rtt-path clients on other targets)")
	}
	if flags.target == loadgen.TargetCluster && flags.bootstrap == "" && !flagSet(fs, "replication-factor") {
		// A replicated cluster is measured replicated: every topic of the
		// run on all three brokers, acks=all waiting for two of them.
		workload.ReplicationFactor = loadgen.ClusterReplicationFactor
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	stopMetrics, err := startLoadgenMetrics(&flags, stderr)
	if err != nil {
		return err
	}
	defer stopMetrics()
	spec, err := flags.suiteSpec(workload, hooks, stdout)
	if err != nil {
		return err
	}
	return suite.Run(ctx, spec)
}

// startLoadgenMetrics serves the load generator's /metrics when
// --metrics-listen asks for it, saying where on stderr (stdout may carry
// JSON progress), and returns what stops it.
func startLoadgenMetrics(flags *loadgenFlags, stderr io.Writer) (stop func(), err error) {
	if flags.metricsListen == "" {
		return func() {}, nil
	}
	flags.live = livemetrics.New()
	server, err := livemetrics.Serve(flags.metricsListen, flags.live)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	fmt.Fprintf(stderr, "loadgen metrics: %s\n", server.URL())
	return func() { _ = server.Close() }, nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// planHelp lists the shipped fault plans with their descriptions, and
// the modes a client fault applies to where it does not apply to all.
func planHelp() string {
	var text strings.Builder
	for _, name := range faults.PlanNames() {
		plan, err := faults.LoadPlan(name)
		if err != nil {
			continue // cannot happen: the shipped plans are tested
		}
		fmt.Fprintf(&text, "  %-16s %s", name, plan.Description)
		if modes := loadgen.PlanModes(plan); len(modes) > 0 {
			fmt.Fprintf(&text, " (modes: %s)", strings.Join(modes, ", "))
		}
		text.WriteString("\n")
	}
	return strings.TrimSuffix(text.String(), "\n")
}
