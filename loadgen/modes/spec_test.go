package modes

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// The shipped modes, in the suite's order, with the single baseline and
// the client faults each accepts.
func TestShippedModes(t *testing.T) {
	want := []string{AtMostOnce, AtMostOnceAcks1, AtLeastOnce, Idempotent, Transactional, EOSPipeline,
		SingleWriterCheck, ConsumerDedup, ExternalOffsets, ShareGroup}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if got := Baseline(); got != AtLeastOnce {
		t.Errorf("Baseline() = %q", got)
	}
	for kind, want := range map[faults.ClientActionKind][]string{
		faults.ClientZombieProducer: {Transactional},
		faults.ClientConsumerCrash:  {EOSPipeline, ConsumerDedup, ExternalOffsets, ShareGroup},
		faults.ClientGroupChurn:     {AtLeastOnce, EOSPipeline, ConsumerDedup, ExternalOffsets, ShareGroup},
	} {
		if got := Accepting(kind); !slices.Equal(got, want) {
			t.Errorf("Accepting(%s) = %v, want %v", kind, got, want)
		}
	}
}

// Help has one line per mode, the help lines aligned one column after the
// longest name.
func TestHelpAlignsTheModes(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(Help(), "\n"), "\n")
	if len(lines) != len(All()) {
		t.Fatalf("%d help lines for %d modes", len(lines), len(All()))
	}
	column := len("  single-writer-check  ")
	for i, spec := range All() {
		if lines[i] != "  "+spec.Name+strings.Repeat(" ", column-2-len(spec.Name))+spec.Help {
			t.Errorf("help line %q for %s", lines[i], spec.Name)
		}
	}
}

// Register refuses a name taken and a spec naming machinery it lacks.
func TestRegisterRefusesInconsistentSpecs(t *testing.T) {
	valid := Spec{Name: "test-valid", Help: "h", ProducerOptions: func(ProducerParams) []kgo.Opt { return nil },
		Settings: func(RunParams, map[string]string) {}, Readers: []Reader{{Isolation: verify.ReadCommitted}}}
	for name, spec := range map[string]Spec{
		"taken name": func() Spec { s := valid; s.Name = AtLeastOnce; return s }(),
		"no help":    func() Spec { s := valid; s.Help = ""; return s }(),
		"no reader":  func() Spec { s := valid; s.Readers = nil; return s }(),
		"zombie without txn": func() Spec {
			s := valid
			s.ClientFaults = []faults.ClientActionKind{faults.ClientZombieProducer}
			return s
		}(),
		"crash without stage": func() Spec {
			s := valid
			s.ClientFaults = []faults.ClientActionKind{faults.ClientConsumerCrash}
			return s
		}(),
		"churn without stage":   func() Spec { s := valid; s.ClientFaults = []faults.ClientActionKind{faults.ClientGroupChurn}; return s }(),
		"name with a separator": func() Spec { s := valid; s.Name = "a:b"; return s }(),
		"informational on broker": func() Spec {
			s := valid
			s.Readers = []Reader{{Isolation: verify.ReadCommitted, Informational: true}}
			return s
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register accepted %+v", spec)
				}
			}()
			Register(spec)
		})
	}
	if _, ok := Lookup("test-valid"); ok {
		t.Errorf("a refused spec was registered")
	}
}
