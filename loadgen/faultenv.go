package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/wire"
)

// maxFaultEvents bounds the events kept in one run's results.
const maxFaultEvents = 20_000

// faultEnv is one run's fault machinery: the event log, the proxy between
// the load's clients and the target (plans with rules), and the broker
// subprocess (plans with process faults). The run's driving goroutine owns
// it; the log is shared with the proxy, the process and the client faults.
type faultEnv struct {
	log    *faults.EventLog
	proxy  *faults.Proxy   // nil without rules
	broker *launchedBroker // nil without process faults (or on a cluster target)
	// cluster is the launched cluster target whose brokers the plan's
	// process faults act on (nil on other targets).
	cluster *clusterTarget
	// topic is the run's load topic and firstTransactionalID its first
	// load producer's transactional id, for the cluster's Selector;
	// topics are all the run's topics, whose ISRs must be full again
	// after a fault on an external cluster.
	topic, firstTransactionalID string
	topics                      []string
	groupID                     string // the consume stage's group, for group-coordinator-kill
	// hooks, when the plan's process faults act on a cluster the load
	// generator did not launch, are the operator's --fault-exec commands
	// (nil otherwise); targetOptions reach that cluster.
	hooks         *faults.Hooks
	targetOptions []kgo.Opt
	admin         *kgo.Client // the launched broker's admin client, or nil
	self          SelfCommand // how to start workers
	// workers is where the load's producers run (Count 0: in process)
	// and how every worker is started; duplicateOnce is a test's fault
	// for the first load worker (worker.Spec.DuplicateOnce).
	workers       WorkerTransport
	duplicateOnce bool
	plan          faults.Plan    // the run's fault plan
	onStop        []func() error // cleanups, run in reverse by close
	mu            sync.Mutex     // guards notes
	notes         []string       // diagnostics worth a line in the results
}

// canLaunch reports whether process faults can run against the target: only
// when the load generator launches the brokers itself (one per run for
// the embedded target, the cluster target's own brokers).
func canLaunch(options Options) bool {
	return (options.Target.Kind() == TargetEmbedded && options.Self.Path != "") || isCluster(options)
}

// externalHooks are the --fault-exec hooks process faults use against
// options' target: a cluster the load generator did not launch, named
// by --bootstrap (nil for the targets it starts itself, or without
// hooks).
func externalHooks(options Options) *faults.Hooks {
	if options.Target.Kind() != TargetBootstrap {
		return nil
	}
	return options.FaultHooks
}

// isCluster reports whether the target is a cluster the load generator
// launched, whose brokers leader-kill and coordinator-kill pick from.
func isCluster(options Options) bool {
	_, ok := options.Target.(*clusterTarget)
	return ok
}

// startFaultEnv sets up plan's faults and returns the plan with the
// addresses its clients must use: a launched broker's for every client
// (process faults), the proxy's for the load's clients (proxy rules). The
// admin client and the verification readers never go through the proxy.
func startFaultEnv(ctx context.Context, plan runPlan, options Options) (*faultEnv, runPlan, error) {
	env := &faultEnv{log: faults.NewEventLog(faultCounter(options.Metrics)), self: options.Self, workers: options.Workers, duplicateOnce: options.duplicateOnce, plan: plan.faults, topic: plan.topic,
		firstTransactionalID: loadTransactionalID(plan, 0), topics: plan.stageTopics(), groupID: plan.groupID()}
	if hooks := externalHooks(options); hooks != nil && plan.faults.NeedsProcesses() {
		env.hooks, env.targetOptions = hooks, plan.targetOptions()
	} else if cluster, ok := options.Target.(*clusterTarget); ok && plan.faults.NeedsProcesses() {
		// The cluster's brokers record this run's kills in its log, until
		// the run ends.
		env.cluster = cluster
		for _, process := range cluster.processes {
			process.SetLog(env.log)
		}
		env.onStop = append(env.onStop, func() error {
			for _, process := range cluster.processes {
				process.SetLog(nil)
			}
			return nil
		})
		admin, err := kgo.NewClient(kgo.SeedBrokers(plan.bootstrap...), kgo.ClientID("exactly-loadgen-admin"),
			kgo.RetryBackoffFn(faultRetryBackoff), kgo.MetadataMinAge(faultMetadataMinAge))
		if err != nil {
			env.close()
			return nil, plan, fmt.Errorf("admin client of the cluster: %w", err)
		}
		env.admin = admin
		env.onStop = append(env.onStop, func() error { admin.Close(); return nil })
	} else if plan.faults.NeedsProcesses() {
		broker, err := launchBroker(ctx, options.Self, env.log)
		if err != nil {
			return nil, plan, err
		}
		env.broker = broker
		env.onStop = append(env.onStop, broker.close)
		plan.bootstrap = []string{broker.process.Addr()}
		plan.clientBootstrap = plan.bootstrap
		plan.security = nil // the launched broker listens on PLAINTEXT
		admin, err := kgo.NewClient(kgo.SeedBrokers(plan.bootstrap...), kgo.ClientID("exactly-loadgen-admin"),
			kgo.RetryBackoffFn(faultRetryBackoff), kgo.MetadataMinAge(faultMetadataMinAge))
		if err != nil {
			env.close()
			return nil, plan, fmt.Errorf("admin client of the launched broker: %w", err)
		}
		env.admin = admin
		env.onStop = append(env.onStop, func() error { admin.Close(); return nil })
	}
	if plan.faults.NeedsProxy() {
		proxy, err := faults.New(faults.Config{Upstreams: plan.bootstrap, Rules: plan.faults.Rules,
			Seed: plan.faults.Seed, Log: env.log, Logf: env.note})
		if err != nil {
			env.close()
			return nil, plan, fmt.Errorf("fault proxy: %w", err)
		}
		env.proxy = proxy
		env.onStop = append(env.onStop, proxy.Close)
		plan.clientBootstrap = proxy.Addrs()
	}
	return env, plan, nil
}

// targetOptions are the options of plan's clients that never go through
// the proxy (verification readers): the target's (or launched broker's)
// address and the run's security.
func (plan runPlan) targetOptions() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(plan.bootstrap...)}, plan.security.Options()...)
}

// note keeps a proxy diagnostic (bounded).
func (e *faultEnv) note(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.notes) < 20 {
		e.notes = append(e.notes, fmt.Sprintf(format, args...))
	}
}

// startProcessFaults runs the plan's process actions against the launched
// broker, or through the hooks against an external cluster, from now
// until stop is called; stop returns once every action has finished (a
// killed broker is running again, a paused one resumed). A hook that
// fails, or a broker that does not come back, ends the actions at once
// and calls failed with the error, so that the load stops too.
func (e *faultEnv) startProcessFaults(ctx context.Context, failed func(error)) (stop func() error) {
	if (e.broker == nil && e.cluster == nil && e.hooks == nil) || len(e.plan.Processes) == 0 {
		return func() error { return nil }
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		var err error
		switch {
		case e.hooks != nil:
			err = faults.RunHookActions(ctx, e.plan.Processes, faults.External{Hooks: e.hooks, Log: e.log,
				Select: e.pickBroker, Recovered: e.brokerRecovered})
		case e.cluster != nil:
			err = faults.RunProcessActions(ctx, e.plan.Processes, e.cluster.processes, e.selectBroker)
		default:
			err = faults.RunProcessActions(ctx, e.plan.Processes, []*faults.Process{e.broker.process}, nil)
		}
		if faults.IsHookFailure(err) {
			failed(err)
		}
		done <- err
	}()
	return func() error {
		cancel()
		return <-done
	}
}

// events converts the log to the results' form, on the run's time axis.
func (e *faultEnv) events(start time.Time) []report.FaultEvent {
	var out []report.FaultEvent
	for _, event := range e.log.Events() {
		if len(out) == maxFaultEvents {
			break
		}
		detail := event.Detail
		if event.APIKey != faults.NoAPIKey {
			detail = fmt.Sprintf("%s (correlation %d) %s", wire.APIName(event.APIKey), event.CorrelationID, detail)
		}
		out = append(out, report.FaultEvent{ElapsedSeconds: event.Time.Sub(start).Seconds(), Kind: string(event.Kind),
			Broker: event.Broker, Detail: detail})
	}
	return out
}

// close tears the machinery down.
func (e *faultEnv) close() error {
	var errs []error
	for i := len(e.onStop) - 1; i >= 0; i-- {
		errs = append(errs, e.onStop[i]())
	}
	e.onStop = nil
	return errors.Join(errs...)
}

// Client settings under faults. kgo waits MetadataMinAge (5 s by default)
// before refreshing metadata after a cut connection, and backs off up to a
// second between retries: under a fault every few hundred requests that
// would stall the run instead of measuring it.
const faultMetadataMinAge = 100 * time.Millisecond

func faultRetryBackoff(tries int) time.Duration {
	return min(10*time.Millisecond<<min(tries, 5), 250*time.Millisecond)
}

// clientOptions are the options every load client of plan gets: its seed
// brokers (the proxy's under proxy rules), its security (TLS, SASL) and,
// under faults, fast reconnects.
func (plan runPlan) clientOptions() []kgo.Opt {
	options := append([]kgo.Opt{kgo.SeedBrokers(plan.clientBootstrap...)}, plan.security.Options()...)
	if hasFaults(plan.faults) {
		options = append(options, kgo.MetadataMinAge(faultMetadataMinAge), kgo.RetryBackoffFn(faultRetryBackoff))
	}
	return options
}
