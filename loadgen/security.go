package loadgen

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stats"
)

// The security workload (`exactly loadgen --workload security`) runs the
// same delivery modes over each security protocol of one broker —
// PLAINTEXT, SSL, SASL_SSL on the embedded broker's three listeners — and
// reports what each costs beside the modes' own: throughput and p99 per
// protocol per mode, with ratios to PLAINTEXT, and the CPU one consumer's
// reads cost per GB ([MeasureConsumeCosts]). The command (cmd/exactly)
// starts the broker and runs Run once per protocol; this file is the
// workload's settings and the section it fills.

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
	// Rounds is how many times every mode runs over every protocol,
	// interleaved (round 1 over each protocol, then round 2, …, the
	// protocols' order rotating from round to round); 0 or 1: once. With
	// 2 or more, the reference protocol also runs a second time per round
	// (its A/A slot, AAProtocol) and the table gives median ratios with a
	// 95% interval over the rounds, the A/A ratio as the noise floor.
	Rounds int `yaml:"rounds" json:"rounds"`
}

// AAProtocol names the A/A slot of the reference protocol: the same
// listener run a second time in each round, whose ratio to the
// reference is the noise floor of the others.
func AAProtocol(reference string) string { return reference + " (A/A)" }

// Slots are the protocols every round runs over: the protocols, then,
// with two or more rounds, the reference's A/A slot.
func (s SecuritySpec) Slots() []string {
	slots := append([]string{}, s.Protocols...)
	if s.Rounds >= 2 && len(slots) > 0 {
		slots = append(slots, AAProtocol(slots[0]))
	}
	return slots
}

// RoundOrder is the order in which round (1-based) runs the slots: the
// slots rotated by round-1, so that no protocol always runs first (on a
// cold page cache) or last.
func RoundOrder(slots []string, round int) []string {
	order := make([]string, 0, len(slots))
	for i := range slots {
		order = append(order, slots[(i+round-1)%len(slots)])
	}
	return order
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
	if s.Rounds < 0 {
		return errors.New("rounds: 0 or more")
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
func SecurityCells(protocol string, round int, runs []*report.Run) []report.SecurityCell {
	cells := make([]report.SecurityCell, 0, len(runs))
	for _, run := range runs {
		cells = append(cells, report.SecurityCell{Mode: run.Name, Protocol: protocol, Round: round, Run: run.Name, Status: run.Status,
			RecordsPerSecond:  run.Throughput.RecordsPerSecond,
			AckP99Millis:      run.Latency[report.LatencyProduceAck].Percentile(99),
			EndToEndP99Millis: run.Latency[report.LatencyEndToEnd].Percentile(99)})
	}
	return cells
}

// FinishSecurity orders the section's cells by mode (in the order the
// modes first ran), then by protocol, then by round; divides each cell's
// figures by the reference protocol's of the same mode and round and each
// consume cost's by the reference's; and, with two or more rounds,
// summarizes the rounds in Rows.
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
		if a.Protocol != b.Protocol {
			return order[a.Protocol] - order[b.Protocol]
		}
		return a.Round - b.Round
	})
	for i := range section.Cells {
		cell := &section.Cells[i]
		reference := section.RoundCell(cell.Mode, section.Reference, max(cell.Round, 1))
		if reference == nil {
			continue
		}
		cell.ThroughputRatio = divide(cell.RecordsPerSecond, reference.RecordsPerSecond)
		cell.AckP99Ratio = divide(cell.AckP99Millis, reference.AckP99Millis)
	}
	if section.Rounds >= 2 {
		section.Rows = securityRows(section)
	}
	finishConsumeCosts(section)
}

// securityRows summarizes every mode over every protocol across the
// rounds: the reference's row first (its values), the A/A row next (its
// intervals are the noise band), then the others, each a paired ratio to
// the reference in the same round; rows come out in Protocols order.
func securityRows(section *report.Security) []report.SecurityRow {
	aa := AAProtocol(section.Reference)
	var rows []report.SecurityRow
	for _, mode := range section.ProtocolModes() {
		reference := securityValues(section, mode, section.Reference)
		byProtocol := map[string]report.SecurityRow{}
		var throughputBand, latencyBand stats.Interval
		haveBand := slices.Contains(section.Protocols, aa)
		protocols := []string{aa}
		for _, protocol := range section.Protocols {
			if protocol != aa && protocol != section.Reference {
				protocols = append(protocols, protocol)
			}
		}
		for _, protocol := range protocols {
			values := securityValues(section, mode, protocol)
			if len(values.runs) == 0 {
				continue
			}
			row := report.SecurityRow{Mode: mode, Protocol: protocol, NoiseFloor: protocol == aa, Runs: values.runs, EndToEndP99Millis: values.endToEndP99}
			var throughputInterval, latencyInterval stats.Interval
			beyond := haveBand && !row.NoiseFloor
			row.Throughput, throughputInterval = ratioOfValues(values.throughput, reference.throughput, true, throughputBand, beyond)
			row.AckP99, latencyInterval = ratioOfValues(values.ackP99, reference.ackP99, false, latencyBand, beyond)
			if row.NoiseFloor {
				throughputBand, latencyBand = stats.NoiseBand(throughputInterval), stats.NoiseBand(latencyInterval)
			}
			byProtocol[protocol] = row
		}
		byProtocol[section.Reference] = report.SecurityRow{Mode: mode, Protocol: section.Reference, Reference: true, Runs: reference.runs, EndToEndP99Millis: reference.endToEndP99,
			Throughput: report.RatioStat{Values: reference.throughput, Baseline: reference.throughput, Ratios: []float64{}},
			AckP99:     report.RatioStat{Values: reference.ackP99, Baseline: reference.ackP99, Ratios: []float64{}}}
		for _, protocol := range section.Protocols {
			if row, ok := byProtocol[protocol]; ok {
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// roundValues are one mode's measurements over one protocol, by round
// (0: the round did not run it, or its run did not pass).
type roundValues struct {
	throughput, ackP99, endToEndP99 []float64
	runs                            []string
}

func securityValues(section *report.Security, mode, protocol string) roundValues {
	values := roundValues{throughput: []float64{}, ackP99: []float64{}, endToEndP99: []float64{}, runs: []string{}}
	for round := 1; round <= section.Rounds; round++ {
		var throughput, ackP99, endToEndP99 float64
		if cell := section.RoundCell(mode, protocol, round); cell != nil {
			values.runs = append(values.runs, cell.Run)
			if cell.Status == report.StatusPass {
				throughput, ackP99, endToEndP99 = cell.RecordsPerSecond, max(cell.AckP99Millis, 0), max(cell.EndToEndP99Millis, 0)
			}
		}
		values.throughput = append(values.throughput, throughput)
		values.ackP99 = append(values.ackP99, ackP99)
		values.endToEndP99 = append(values.endToEndP99, endToEndP99)
	}
	return values
}

// finishConsumeCosts divides each consume cost by the reference
// protocol's and, with two or more passes, pairs the passes turn by turn
// (they ran interleaved) for a ratio with an interval.
func finishConsumeCosts(section *report.Security) {
	var reference *report.ConsumeCost
	for i := range section.Consume {
		if section.Consume[i].Protocol == section.Reference && section.Consume[i].Error == "" {
			reference = &section.Consume[i]
		}
	}
	if reference == nil {
		return
	}
	for i := range section.Consume {
		cost := &section.Consume[i]
		if cost.Error != "" {
			continue
		}
		cost.Ratio = divide(cost.CPUSecondsPerGB, reference.CPUSecondsPerGB)
		if cost != reference && len(cost.PassCPUSecondsPerGB) >= 2 && len(reference.PassCPUSecondsPerGB) >= 2 {
			n := min(len(cost.PassCPUSecondsPerGB), len(reference.PassCPUSecondsPerGB))
			// Lower CPU is better.
			stat, _ := ratioOfValues(cost.PassCPUSecondsPerGB[:n], reference.PassCPUSecondsPerGB[:n], false, stats.Interval{}, false)
			cost.PassRatios = &stat
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
