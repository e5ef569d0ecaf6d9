package loadgen

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// The security workload (`exactly loadgen --workload security`) runs the
// same delivery modes over each security protocol of one broker —
// PLAINTEXT, SSL, SASL_SSL on the embedded broker's three listeners — and
// reports what each costs beside the modes' own: throughput and p99 per
// protocol per mode, with ratios to PLAINTEXT, and the CPU one consumer's
// reads cost per GB (consumecost.go). The command (cmd/exactly) starts the
// broker and runs Run once per protocol; this file is the workload's
// settings and the section it fills.

// SecuritySpec is the security workload's section of a workload file.
type SecuritySpec struct {
	// Protocols are the security protocols to run over, in order; the
	// first is the reference of the ratios.
	Protocols []string `yaml:"protocols" json:"protocols"`
	// Mechanism is the SASL mechanism of the SASL protocols (the
	// embedded broker's user has a credential for it).
	Mechanism string `yaml:"mechanism" json:"mechanism"`
	// ConsumeBytes is how much one consumer reads per pass to measure the
	// consume CPU per GB (0: not measured); ConsumePasses how many passes
	// per protocol, interleaved across protocols.
	ConsumeBytes  int64 `yaml:"consume_bytes" json:"consume_bytes"`
	ConsumePasses int   `yaml:"consume_passes" json:"consume_passes"`
}

// validate reports the first setting of s that cannot run in w.
func (s SecuritySpec) validate(w Workload) error {
	if len(s.Protocols) == 0 {
		return errors.New("protocols: at least one security protocol is needed")
	}
	for _, protocol := range s.Protocols {
		if !slices.Contains(clientsec.Protocols(), protocol) {
			return fmt.Errorf("protocols: %q is not one of %s", protocol, strings.Join(clientsec.Protocols(), ", "))
		}
		if strings.HasPrefix(protocol, "SASL_") && !slices.Contains(clientsec.Mechanisms(), s.Mechanism) {
			return fmt.Errorf("mechanism: %q is not one of %s (the SASL protocols need one)", s.Mechanism, strings.Join(clientsec.Mechanisms(), ", "))
		}
	}
	if s.ConsumeBytes < 0 || (s.ConsumeBytes > 0 && s.ConsumePasses < 1) {
		return errors.New("consume_bytes and consume_passes: bytes >= 0, and at least one pass when bytes > 0")
	}
	if w.Overhead != nil || w.EqualLoad != nil {
		return errors.New("protocols: a security workload has no overhead rounds and no equal-load fractions")
	}
	for _, entry := range w.Faults {
		if entry.Plan != "none" {
			return fmt.Errorf("protocols: a security workload runs without faults (the fault proxy cannot read TLS), not under %s", entry.Plan)
		}
	}
	return nil
}

// SecurityCells are the cells of runs, one run each of a mode over
// protocol, named by the runs' names as Run gave them (before the command
// adds " over <protocol>").
func SecurityCells(protocol string, runs []*report.Run) []report.SecurityCell {
	cells := make([]report.SecurityCell, 0, len(runs))
	for _, run := range runs {
		cells = append(cells, report.SecurityCell{Mode: run.Name, Protocol: protocol, Run: run.Name, Status: run.Status,
			RecordsPerSecond:  run.Throughput.RecordsPerSecond,
			AckP99Millis:      run.Latency[report.LatencyProduceAck].Percentile(99),
			EndToEndP99Millis: run.Latency[report.LatencyEndToEnd].Percentile(99)})
	}
	return cells
}

// FinishSecurity orders the section's cells by mode (in the order the
// modes first ran), then by protocol, and divides each cell's and each
// consume cost's figures by the reference protocol's of the same mode.
func FinishSecurity(section *report.Security) {
	order := map[string]int{}
	for i, protocol := range section.Protocols {
		order[protocol] = i
	}
	modes := section.ProtocolModes()
	modeOrder := map[string]int{}
	for i, mode := range modes {
		modeOrder[mode] = i
	}
	slices.SortStableFunc(section.Cells, func(a, b report.SecurityCell) int {
		if a.Mode != b.Mode {
			return modeOrder[a.Mode] - modeOrder[b.Mode]
		}
		return order[a.Protocol] - order[b.Protocol]
	})
	for i := range section.Cells {
		cell := &section.Cells[i]
		reference := section.Cell(cell.Mode, section.Reference)
		if reference == nil {
			continue
		}
		cell.ThroughputRatio = divide(cell.RecordsPerSecond, reference.RecordsPerSecond)
		cell.AckP99Ratio = divide(cell.AckP99Millis, reference.AckP99Millis)
	}
	var referenceCPU float64
	for _, cost := range section.Consume {
		if cost.Protocol == section.Reference && cost.Error == "" {
			referenceCPU = cost.CPUSecondsPerGB
		}
	}
	for i := range section.Consume {
		if section.Consume[i].Error == "" {
			section.Consume[i].Ratio = divide(section.Consume[i].CPUSecondsPerGB, referenceCPU)
		}
	}
}

// divide is value / reference, 0 when either is not positive.
func divide(value, reference float64) float64 {
	if value <= 0 || reference <= 0 {
		return 0
	}
	return value / reference
}
