// Package modes is the registry of the load generator's delivery modes.
//
// A delivery mode is how the load's producers (and, for some, a consume
// stage) are set up, and so what can go wrong with a record under a fault.
// Each mode lives in one file of this package (at_least_once.go,
// eos_pipeline.go, …) as one Spec registered from that file's init: its
// name and help line, the road it takes to exactly-once (the broker's or
// the application's), its client settings (kgo options and their
// statement in Kafka's terms), how its producers run, its consume stage,
// its verification reads, its expectation under faults, the client faults
// that apply to it and whether it sweeps commit intervals. The load
// generator (package loadgen) and `exactly loadgen --help` read
// everything mode-specific from the Spec; adding a mode means adding one
// file here (or, in a test, registering a Spec).
//
// The machinery a Spec names lives elsewhere: producers, the single
// writers and the run's orchestration in package loadgen, the consume
// stages (transact pipeline, database stages, relay) in package
// loadgen/stages, the worker subprocesses in loadgen/worker, the checks in
// loadgen/verify.
package modes

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Road says whose code keeps duplicates out in a mode.
type Road uint8

const (
	// BrokerRoad: the baselines and the broker's road to exactly-once
	// (idempotent producers, transactions).
	BrokerRoad Road = iota
	// ApplicationRoad: the application's own code keeps duplicates out
	// (a checked writer, a deduplicating consumer, offsets stored with
	// the results); its runs carry application results.
	ApplicationRoad
)

// Producers is how a mode's load producers run.
type Producers uint8

const (
	// PlainProducers: each producer sends its share of the records, no
	// transactions.
	PlainProducers Producers = iota
	// TransactionalProducers: producers write in transactions that commit
	// every commit interval (or N records), a share of them aborted; the
	// topic is read read_committed.
	TransactionalProducers
	// PartitionWriters: one checked writer per partition instead of the
	// workload's producers (single-writer-check's resend after reading the
	// partition's tail).
	PartitionWriters
)

// Stage is a mode's consume stage: workers in a consumer group that read
// the topic the producers write.
type Stage uint8

const (
	// NoStage: the producers' topic is the output.
	NoStage Stage = iota
	// TransactStage: consume-transform-produce workers writing an output
	// topic in the transaction that commits their input offsets
	// (GroupTransactSession); chained under group-churn.
	TransactStage
	// DedupStage: database workers that drop keys seen within the dedup
	// window and auto-commit the records marked after their database
	// commit.
	DedupStage
	// StoredOffsetsStage: database workers writing output rows and their
	// partition offsets in one database transaction, seeking to the
	// stored offsets on every assignment (auto-commit off).
	StoredOffsetsStage
	// ShareStage: the consumers of one share group (KIP-932): the broker
	// hands each record to one of them for a lock period; each accepts
	// (or, for a small share, first releases) record by record.
	ShareStage
)

// UsesDatabase reports whether the stage keeps state in the application
// database (its output is a table).
func (s Stage) UsesDatabase() bool { return s == DedupStage || s == StoredOffsetsStage }

// WritesTopic reports whether the stage writes an output topic.
func (s Stage) WritesTopic() bool { return s == TransactStage }

// Chains reports whether the stage runs as a chain of stages when a
// group-churn plan asks for one.
func (s Stage) Chains() bool { return s == TransactStage }

// String names the stage.
func (s Stage) String() string {
	switch s {
	case NoStage:
		return "none"
	case TransactStage:
		return "transact"
	case DedupStage:
		return "dedup"
	case StoredOffsetsStage:
		return "stored-offsets"
	case ShareStage:
		return "share"
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// Reader is one verification read of the topic a mode's producers write
// (a run whose stage writes a topic is read stage by stage instead).
type Reader struct {
	Isolation verify.Isolation
	// Informational reads are counted, not judged (consumer-dedup's
	// input, whose duplicates are what its consumer must drop).
	Informational bool
}

// Bounds says which counts may be positive; the others must be 0.
type Bounds struct {
	MayLose, MayDuplicate, MayReorder bool
}

// Expectation is what a mode must keep. Without faults every mode must
// deliver each acknowledged record exactly once, in order; records read
// under read_committed that were aborted or fenced, and records nobody
// sent, are violations in every cell.
type Expectation struct {
	// UnderFaults are the bounds under a fault plan.
	UnderFaults Bounds
	// AckLossShowsDuplicates: under lost Produce acks the run must show
	// duplicates, or the fault did not act (retries without idempotence).
	AckLossShowsDuplicates bool
	// Note adds what the bounds do not say, in every cell.
	Note string
}

// ProducerParams are what a producer's kgo options may depend on.
type ProducerParams struct {
	// TransactionalID and TransactionTimeout are used by transactional
	// producers only.
	TransactionalID    string
	TransactionTimeout time.Duration
}

// RunParams are the run's settings a mode's statement of its client
// configuration may name.
type RunParams struct {
	TransactionTimeout time.Duration
	CommitInterval     time.Duration
	CommitRecords      int
	AbortShare         float64
	StageWorkers       int
	Partitions         int
	DedupWindow        int64
	// ShareReleaseEvery, ShareLockDuration and ShareDeliveryLimit are
	// the share-group mode's: one record in ShareReleaseEvery is released
	// on its first delivery, the group's acquisition lock and delivery
	// attempt limit.
	ShareReleaseEvery  int64
	ShareLockDuration  time.Duration
	ShareDeliveryLimit int
	// Database describes the application database (database stages).
	Database string
}

// Spec is one delivery mode: everything the load generator does
// differently for it.
type Spec struct {
	// Name is the mode's name in workloads, --mode and results.
	Name string
	// Help is the mode's line in `exactly loadgen --help`, in Kafka's
	// client settings.
	Help string
	// Order places the mode in the suite's order (lowest first).
	Order int
	// Road is the broker's or the application's.
	Road Road
	// Baseline marks the mode whose throughput others are compared with
	// (exactly one registered mode).
	Baseline bool
	// Producers is how the load's producers run.
	Producers Producers
	// ProducerOptions are the kgo options that put a producer in the
	// mode (the relay of RelaysUnderChurn produces with them too).
	ProducerOptions func(ProducerParams) []kgo.Opt
	// Settings states the client configuration in Kafka's terms: it
	// overrides or adds to settings, which holds the defaults (acks=all,
	// idempotence on, retries, isolation.level=read_committed, …).
	Settings func(run RunParams, settings map[string]string)
	// UniqueKeys gives every record its own key, p<producer>-<sequence>,
	// instead of one drawn from the workload's key distribution.
	UniqueKeys bool
	// Stage is the mode's own consume stage.
	Stage Stage
	// RelaysUnderChurn: without a stage of its own, the mode runs a relay
	// (a consumer group producing the input to an output topic with the
	// mode's producer options, then committing the poll's offsets) under
	// group-churn, the fault's at-least-once form.
	RelaysUnderChurn bool
	// Readers are the verification reads of the producers' topic when no
	// stage writes an output topic.
	Readers []Reader
	// Expect is the mode's expectation.
	Expect Expectation
	// ClientFaults are the client faults that apply to the mode; plans
	// with any other client fault are not applicable to it.
	ClientFaults []faults.ClientActionKind
	// SweepsCommitIntervals runs the mode once per commit interval of the
	// workload, named <mode>@<interval>.
	SweepsCommitIntervals bool
}

// AcceptsClientFault reports whether kind applies to the mode.
func (s *Spec) AcceptsClientFault(kind faults.ClientActionKind) bool {
	return slices.Contains(s.ClientFaults, kind)
}

// MaxInFlight is max.in.flight.requests.per.connection for every mode
// that allows more than one.
const MaxInFlight = 5

var registry struct {
	mu    sync.Mutex
	specs map[string]*Spec
}

// Register adds a mode. It panics on a name already registered or a spec
// that names machinery it does not have (a client fault its producers or
// stage cannot take): registration runs from init, where a mistake must
// stop the program.
func Register(spec Spec) {
	if err := spec.validate(); err != nil {
		panic("modes: " + err.Error())
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.specs == nil {
		registry.specs = make(map[string]*Spec)
	}
	if _, taken := registry.specs[spec.Name]; taken {
		panic(fmt.Sprintf("modes: %q registered twice", spec.Name))
	}
	registry.specs[spec.Name] = &spec
}

func (s *Spec) validate() error {
	switch {
	case s.Name == "" || strings.ContainsAny(s.Name, ",:@ "):
		return fmt.Errorf("mode name %q is empty or holds one of \",:@ \"", s.Name)
	case s.Help == "":
		return fmt.Errorf("mode %s has no help line", s.Name)
	case s.ProducerOptions == nil || s.Settings == nil:
		return fmt.Errorf("mode %s needs ProducerOptions and Settings", s.Name)
	case !s.Stage.WritesTopic() && len(s.Readers) == 0:
		return fmt.Errorf("mode %s has no verification read", s.Name)
	}
	for _, reader := range s.Readers {
		if reader.Informational && s.Road != ApplicationRoad {
			return fmt.Errorf("mode %s: informational reads are counted in application results", s.Name)
		}
	}
	for _, kind := range s.ClientFaults {
		switch {
		case kind == faults.ClientZombieProducer && s.Producers != TransactionalProducers:
			return fmt.Errorf("mode %s: zombie-producer needs transactional producers", s.Name)
		case kind == faults.ClientConsumerCrash && s.Stage == NoStage:
			return fmt.Errorf("mode %s: consumer-crash needs a consume stage", s.Name)
		case kind == faults.ClientGroupChurn && s.Stage == NoStage && !s.RelaysUnderChurn:
			return fmt.Errorf("mode %s: group-churn needs a consume stage or a relay", s.Name)
		}
	}
	return nil
}

// All returns the registered modes in the suite's order.
func All() []*Spec {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	all := make([]*Spec, 0, len(registry.specs))
	for _, spec := range registry.specs {
		all = append(all, spec)
	}
	slices.SortFunc(all, func(a, b *Spec) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.Name, b.Name)
	})
	return all
}

// Lookup returns the mode named name.
func Lookup(name string) (*Spec, bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	spec, ok := registry.specs[name]
	return spec, ok
}

// Names lists the registered modes in the suite's order.
func Names() []string {
	var names []string
	for _, spec := range All() {
		names = append(names, spec.Name)
	}
	return names
}

// Accepting lists, in the suite's order, the modes client fault kind
// applies to.
func Accepting(kind faults.ClientActionKind) []string {
	var names []string
	for _, spec := range All() {
		if spec.AcceptsClientFault(kind) {
			names = append(names, spec.Name)
		}
	}
	return names
}

// Baseline names the mode whose throughput others are compared with, or
// "" when none is registered.
func Baseline() string {
	for _, spec := range All() {
		if spec.Baseline {
			return spec.Name
		}
	}
	return ""
}

// Help is the modes' part of `exactly loadgen --help`: one line per mode,
// its name then its help line.
func Help() string {
	all := All()
	width := 0
	for _, spec := range all {
		width = max(width, len(spec.Name))
	}
	var text strings.Builder
	for _, spec := range all {
		fmt.Fprintf(&text, "  %-*s  %s\n", width, spec.Name, spec.Help)
	}
	return text.String()
}
