package loadgen

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"reflect"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/exactly-eos/exactly/internal/suggest"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Workload is one benchmark definition, as read from a YAML file of
// loadgen/workloads (field names below are the YAML keys). Every load loop it
// starts is bounded both by Records and by Warmup+Duration.
type Workload struct {
	// Name identifies the workload in results.
	Name string `yaml:"name" json:"name"`
	// Description says what the workload measures.
	Description string `yaml:"description" json:"description"`
	// Modes lists the delivery modes to run, in order (see Modes).
	Modes []string `yaml:"modes" json:"modes"`
	// Partitions and ReplicationFactor of every topic created.
	Partitions        int `yaml:"partitions" json:"partitions"`
	ReplicationFactor int `yaml:"replication_factor" json:"replication_factor"`
	// RecordSize is the size of each record value in bytes (at least the
	// 32-byte verification header).
	RecordSize int `yaml:"record_size" json:"record_size"`
	// Keys selects record keys (and so partitions).
	Keys KeySpec `yaml:"keys" json:"keys"`
	// Producers is the number of producer clients per mode.
	Producers int `yaml:"producers" json:"producers"`
	// Rate is the target total records per second of all producers; 0 means
	// as fast as the cluster acknowledges.
	Rate int `yaml:"rate" json:"rate"`
	// Consumers is the number of live consumers per mode that measure
	// end-to-end latency (0: none).
	Consumers int `yaml:"consumers" json:"consumers"`
	// Records caps the records sent per mode, over all producers.
	Records int64 `yaml:"records" json:"records"`
	// Duration caps the measured time per mode, after Warmup.
	Duration Duration `yaml:"duration" json:"duration"`
	// Warmup is sent and verified but not measured.
	Warmup Duration `yaml:"warmup" json:"warmup"`
	// Drain caps how long consumers and pipeline workers may take to catch
	// up after producers stop, and how long each verification read may take.
	Drain Duration `yaml:"drain" json:"drain"`
	// Transaction configures transactional producers.
	Transaction TransactionSpec `yaml:"transaction" json:"transaction"`
	// Pipeline configures the consume stages' workers.
	Pipeline PipelineSpec `yaml:"pipeline" json:"pipeline"`
	// Application configures the application-level modes (the
	// application's road to exactly-once).
	Application ApplicationSpec `yaml:"application" json:"application"`
	// Faults is the fault matrix: each entry runs delivery modes under one
	// fault plan. Empty: every mode of Modes, without faults.
	Faults []MatrixEntry `yaml:"faults" json:"faults,omitempty"`
	// Overhead, when set, makes the workload a run of interleaved rounds
	// that measures each mode against the baseline (see [OverheadSpec]); it
	// excludes a fault matrix.
	Overhead *OverheadSpec `yaml:"overhead" json:"overhead,omitempty"`
	// EqualLoad, when set, compares the modes at equal offered load: the
	// command first searches at-least-once's sustainable rate (with the
	// workload named by EqualLoad.Search), then runs every mode of the
	// workload at each fraction of it, unless a fixed --rate is given.
	EqualLoad *EqualLoadSpec `yaml:"equal_load" json:"equal_load,omitempty"`
	// Security, when set, makes the workload the security workload: the
	// command runs every mode over each of its protocols on one broker
	// and measures the consume cost of each (see [SecuritySpec]).
	Security *SecuritySpec `yaml:"security" json:"security,omitempty"`
	// GroupProtocol is the consumer group protocol of every group
	// consumer (Kafka's group.protocol): classic (the default) or
	// consumer (KIP-848; see [GroupProtocolConsumer]).
	GroupProtocol string `yaml:"group_protocol" json:"group_protocol,omitempty"`
	// GroupProtocols, when set, makes the workload a comparison of the
	// two protocols: every run under each, interleaved over rounds, with
	// the rebalance pauses of each side by side (see [GroupProtocolsSpec]).
	GroupProtocols *GroupProtocolsSpec `yaml:"group_protocols" json:"group_protocols,omitempty"`
}

// EqualLoadSpec says at which offered loads a workload compares modes.
type EqualLoadSpec struct {
	// Fractions of at-least-once's sustainable rate, each in (0, 1].
	Fractions []float64 `yaml:"fractions" json:"fractions"`
	// Search names the workload of the sustainable-rate search (empty:
	// find-max).
	Search string `yaml:"search" json:"search,omitempty"`
}

// SearchWorkload is the name of the workload that searches the rate the
// fractions are of.
func (s EqualLoadSpec) SearchWorkload() string {
	if s.Search == "" {
		return "find-max"
	}
	return s.Search
}

// validate reports the first setting of s that cannot be run.
func (s EqualLoadSpec) validate() error {
	if len(s.Fractions) == 0 {
		return errors.New("fractions: at least one fraction is needed")
	}
	for _, fraction := range s.Fractions {
		if fraction <= 0 || fraction > 1 {
			return fmt.Errorf("fractions: %g is not in (0, 1]", fraction)
		}
	}
	return nil
}

// KeySpec is the key distribution.
type KeySpec struct {
	// Distribution is "none" (no key: the client's sticky partitioner),
	// "uniform" or "zipf" over Space distinct keys.
	Distribution string `yaml:"distribution" json:"distribution"`
	// Space is the number of distinct keys.
	Space int `yaml:"space" json:"space"`
}

// TransactionSpec configures transactional producers.
type TransactionSpec struct {
	// CommitIntervals are the transaction lengths in time; one run per
	// interval (a sweep). A transaction also ends after CommitRecords.
	CommitIntervals []Duration `yaml:"commit_intervals" json:"commit_intervals"`
	// CommitRecords ends a transaction after this many records (0: no cap).
	CommitRecords int `yaml:"commit_records" json:"commit_records"`
	// AbortShare is the fraction of transactions deliberately aborted.
	AbortShare float64 `yaml:"abort_share" json:"abort_share"`
	// Timeout is transaction.timeout.ms.
	Timeout Duration `yaml:"timeout" json:"timeout"`
}

// PipelineSpec configures the consume-transform-produce pipeline.
type PipelineSpec struct {
	// Workers is the number of GroupTransactSession workers.
	Workers int `yaml:"workers" json:"workers"`
}

// ApplicationSpec configures the application-level modes.
type ApplicationSpec struct {
	// DedupWindow is the dedup stage's window: the keys of the last
	// DedupWindow offsets of each partition are remembered; a copy that
	// arrives later than that after the first is not detected.
	DedupWindow int64 `yaml:"dedup_window" json:"dedup_window"`
	// ShareReleaseEvery: the share-group mode's consumers release, on its
	// first delivery, each record whose sequence+1 is a multiple of it,
	// so that the run has redeliveries to judge (0: 1000).
	ShareReleaseEvery int64 `yaml:"share_release_every" json:"share_release_every,omitempty"`
	// ShareLockDuration is the share group's acquisition lock
	// (share.record.lock.duration.ms; 0: 15s, Kafka's minimum by default).
	ShareLockDuration Duration `yaml:"share_lock_duration" json:"share_lock_duration,omitempty"`
	// ShareDeliveryLimit is the share group's delivery attempt limit
	// (share.delivery.count.limit; 0: 5, Kafka's default).
	ShareDeliveryLimit int `yaml:"share_delivery_limit" json:"share_delivery_limit,omitempty"`
}

// Duration is a time.Duration written as "10s" or "250ms" in YAML and JSON.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(node *yaml.Node) error {
	parsed, err := time.ParseDuration(node.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration like 10s or 250ms", node.Line, node.Value)
	}
	*d = Duration(parsed)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

//go:embed workloads/*.yaml
var embeddedWorkloads embed.FS

// WorkloadNames lists the workloads shipped in the binary.
func WorkloadNames() []string {
	entries, err := fs.ReadDir(embeddedWorkloads, "workloads")
	if err != nil {
		return nil
	}
	var names []string
	for _, entry := range entries {
		names = append(names, strings.TrimSuffix(entry.Name(), ".yaml"))
	}
	return names
}

// LoadWorkload reads a workload from a file path, or else by the name of a
// workload shipped in the binary ("standard", "standard.yaml").
func LoadWorkload(nameOrPath string) (Workload, error) {
	data, err := os.ReadFile(nameOrPath)
	if errors.Is(err, fs.ErrNotExist) && !strings.ContainsRune(nameOrPath, os.PathSeparator) {
		name := strings.TrimSuffix(nameOrPath, ".yaml") + ".yaml"
		data, err = embeddedWorkloads.ReadFile(path.Join("workloads", name))
		if err != nil {
			return Workload{}, fmt.Errorf("workload %q: no such file, and not one of the shipped workloads %v", nameOrPath, WorkloadNames())
		}
	} else if err != nil {
		return Workload{}, fmt.Errorf("read workload: %w", err)
	}
	workload, err := ParseWorkload(data)
	if err != nil {
		if _, statErr := os.Stat(nameOrPath); statErr == nil {
			return Workload{}, fmt.Errorf("workload file %s: %w", nameOrPath, err)
		}
		return Workload{}, fmt.Errorf("workload %s: %w", nameOrPath, err)
	}
	return workload, nil
}

// ParseWorkload decodes YAML (unknown keys are errors), fills defaults and
// validates the result.
func ParseWorkload(data []byte) (Workload, error) {
	workload := DefaultWorkload()
	decoder := yaml.NewDecoder(bytes.NewReader(data))
	decoder.KnownFields(true)
	if err := decoder.Decode(&workload); err != nil {
		return Workload{}, yamlMistake(err, yamlKeys(reflect.TypeOf(workload)))
	}
	if err := workload.Validate(); err != nil {
		return Workload{}, err
	}
	return workload, nil
}

// DefaultWorkload is the base every workload file overrides.
func DefaultWorkload() Workload {
	return Workload{
		Name:              "custom",
		Modes:             modes.Names(),
		Partitions:        4,
		ReplicationFactor: 1,
		RecordSize:        1024,
		Keys:              KeySpec{Distribution: "uniform", Space: 10_000},
		Producers:         2,
		Consumers:         1,
		Records:           200_000,
		Duration:          Duration(10 * time.Second),
		Warmup:            Duration(2 * time.Second),
		Drain:             Duration(20 * time.Second),
		Transaction: TransactionSpec{
			CommitIntervals: []Duration{Duration(100 * time.Millisecond)},
			AbortShare:      0.1,
			Timeout:         Duration(60 * time.Second),
		},
		Pipeline:    PipelineSpec{Workers: 2},
		Application: ApplicationSpec{DedupWindow: 20_000},
	}
}

// Validate reports the first setting that cannot be run.
func (w Workload) Validate() error {
	switch {
	case len(w.Modes) == 0:
		return errors.New("modes: at least one delivery mode is needed")
	case w.Partitions < 1 || w.Partitions > 10_000:
		return fmt.Errorf("partitions: %d is outside 1..10000", w.Partitions)
	case w.ReplicationFactor < 1 || w.ReplicationFactor > 32:
		return fmt.Errorf("replication_factor: %d is outside 1..32", w.ReplicationFactor)
	case w.RecordSize < verify.HeaderSize || w.RecordSize > 1<<20:
		return fmt.Errorf("record_size: %d is outside %d..%d bytes", w.RecordSize, verify.HeaderSize, 1<<20)
	case w.Producers < 1 || w.Producers > 256:
		return fmt.Errorf("producers: %d is outside 1..256", w.Producers)
	case w.Consumers < 0 || w.Consumers > 256:
		return fmt.Errorf("consumers: %d is outside 0..256", w.Consumers)
	case w.Rate < 0:
		return fmt.Errorf("rate: %d is negative", w.Rate)
	case w.Records < 1:
		return fmt.Errorf("records: %d: every run needs a record bound of at least 1", w.Records)
	case w.Duration <= 0:
		return fmt.Errorf("duration: %s: every run needs a positive time bound", w.Duration)
	case w.Warmup < 0:
		return fmt.Errorf("warmup: %s is negative", w.Warmup)
	case w.Drain <= 0:
		return fmt.Errorf("drain: %s must be positive", w.Drain)
	case w.Transaction.AbortShare < 0 || w.Transaction.AbortShare > 1:
		return fmt.Errorf("transaction.abort_share: %g is outside 0..1", w.Transaction.AbortShare)
	case w.Transaction.CommitRecords < 0:
		return fmt.Errorf("transaction.commit_records: %d is negative", w.Transaction.CommitRecords)
	case len(w.Transaction.CommitIntervals) == 0:
		return errors.New("transaction.commit_intervals: at least one interval is needed")
	case w.Transaction.Timeout < Duration(time.Second):
		return fmt.Errorf("transaction.timeout: %s is under 1s", w.Transaction.Timeout)
	case w.Pipeline.Workers < 1 || w.Pipeline.Workers > 64:
		return fmt.Errorf("pipeline.workers: %d is outside 1..64", w.Pipeline.Workers)
	case w.Application.DedupWindow < 1:
		return fmt.Errorf("application.dedup_window: %d: the window needs at least one offset", w.Application.DedupWindow)
	case w.Application.ShareReleaseEvery < 0:
		return fmt.Errorf("application.share_release_every: %d is negative", w.Application.ShareReleaseEvery)
	case w.Application.ShareLockDuration < 0:
		return fmt.Errorf("application.share_lock_duration: %s is negative", w.Application.ShareLockDuration)
	case w.Application.ShareDeliveryLimit < 0:
		return fmt.Errorf("application.share_delivery_limit: %d is negative", w.Application.ShareDeliveryLimit)
	}
	for _, interval := range w.Transaction.CommitIntervals {
		if interval <= 0 {
			return fmt.Errorf("transaction.commit_intervals: %s is not positive", interval)
		}
	}
	switch w.Keys.Distribution {
	case "none":
	case "uniform", "zipf":
		if w.Keys.Space < 1 {
			return fmt.Errorf("keys.space: %d: a %s distribution needs at least one key", w.Keys.Space, w.Keys.Distribution)
		}
	default:
		return fmt.Errorf("keys.distribution: %q is not none, uniform or zipf", w.Keys.Distribution)
	}
	for _, mode := range w.Modes {
		if _, ok := modes.Lookup(mode); !ok {
			return fmt.Errorf("modes: %q is not one of %v", mode, modes.Names())
		}
	}
	if w.Overhead != nil {
		if err := w.Overhead.validate(w); err != nil {
			return fmt.Errorf("overhead.%w", err)
		}
	}
	if w.EqualLoad != nil {
		if w.Overhead != nil || len(w.Faults) > 0 {
			return errors.New("equal_load: a workload at equal offered load has no overhead rounds and no fault matrix")
		}
		if err := w.EqualLoad.validate(); err != nil {
			return fmt.Errorf("equal_load.%w", err)
		}
	}
	if err := validateGroupProtocol(w.GroupProtocol); err != nil {
		return err
	}
	if w.GroupProtocols != nil {
		if err := w.GroupProtocols.validate(w); err != nil {
			return fmt.Errorf("group_protocols.%w", err)
		}
	}
	if w.Security != nil {
		if err := w.Security.validate(w); err != nil {
			return fmt.Errorf("security.%w", err)
		}
	}
	for i, entry := range w.Faults {
		if err := entry.validate(); err != nil {
			return fmt.Errorf("faults[%d] (%s): %w", i, entry.Plan, err)
		}
	}
	return nil
}

// yamlKeys lists the YAML keys of t's fields and of the structs they hold,
// for a did-you-mean on an unknown key.
func yamlKeys(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		keys = append(keys, key)
		keys = append(keys, yamlKeys(t.Field(i).Type)...)
	}
	return keys
}

var (
	yamlUnknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)
	yamlWrongType    = regexp.MustCompile("^line (\\d+): cannot unmarshal !!\\w+ `(.*)` into (\\S+)$")
)

// yamlMistake rewords the YAML decoder's error as one line in the words
// of a workload file: "line 2: unknown key partitons; did you mean
// partitions?", "line 3: x is not a whole number".
func yamlMistake(err error, keys []string) error {
	var typeErr *yaml.TypeError
	if !errors.As(err, &typeErr) {
		return fmt.Errorf("not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var parts []string
	for _, message := range typeErr.Errors {
		message = strings.TrimSpace(message)
		if m := yamlUnknownField.FindStringSubmatch(message); m != nil {
			message = fmt.Sprintf("line %s: unknown key %s%s", m[1], m[2], suggest.DidYouMean(m[2], keys))
		} else if m := yamlWrongType.FindStringSubmatch(message); m != nil {
			want := "a " + m[3]
			switch {
			case strings.HasPrefix(m[3], "int"), strings.HasPrefix(m[3], "uint"):
				want = "a whole number"
			case strings.HasPrefix(m[3], "float"):
				want = "a number"
			case m[3] == "bool":
				want = "true or false"
			case strings.HasPrefix(m[3], "[]"):
				want = "a list"
			}
			message = fmt.Sprintf("line %s: %s is not %s", m[1], m[2], want)
		}
		parts = append(parts, message)
	}
	return errors.New(strings.Join(parts, "; "))
}
