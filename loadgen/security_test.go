package loadgen

import (
	"testing"

	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stats"
)

// FinishSecurity over rounds: a protocol that is clearly slower in every
// round is "slower", one that moves as much as the A/A pair is "within
// noise", the reference's row has its values and no ratios, each cell's
// ratio is to the reference of its own round, and a failed run's round
// is left out of its row's ratios.
func TestFinishSecurityRounds(t *testing.T) {
	t.Parallel()
	const rounds = 6
	// Per round: the reference's throughput drifts, A/A follows it within
	// ±3 %, SSL runs at half of it, SASL_SSL within ±3 % of it.
	reference := []float64{1000, 1100, 900, 1050, 950, 1000}
	wobble := []float64{1.02, 0.98, 1.03, 0.97, 1.01, 0.99}
	section := &report.Security{Reference: "PLAINTEXT", Rounds: rounds,
		Protocols: []string{"PLAINTEXT", "SSL", "SASL_SSL", AAProtocol("PLAINTEXT")}}
	for round := 1; round <= rounds; round++ {
		r := reference[round-1]
		add := func(protocol string, throughput, p99 float64, status string) {
			section.Cells = append(section.Cells, report.SecurityCell{Mode: "at-least-once", Protocol: protocol, Round: round,
				Run: "at-least-once over " + protocol, Status: status, RecordsPerSecond: throughput, AckP99Millis: p99, EndToEndP99Millis: 2 * p99})
		}
		// Added out of order: FinishSecurity sorts.
		add("SSL", r/2, 20, report.StatusPass)
		add("PLAINTEXT", r, 10, report.StatusPass)
		sasl := report.StatusPass
		if round == 3 {
			sasl = report.StatusFail
		}
		add("SASL_SSL", r*wobble[(round+2)%rounds], 10*wobble[round-1], sasl)
		add(AAProtocol("PLAINTEXT"), r*wobble[round-1], 10*wobble[(round+1)%rounds], report.StatusPass)
	}
	FinishSecurity(section)

	if len(section.Rows) != 4 {
		t.Fatalf("rows %+v, want 4", section.Rows)
	}
	byProtocol := map[string]report.SecurityRow{}
	for i, row := range section.Rows {
		if row.Protocol != section.Protocols[i] {
			t.Errorf("row %d is %s, want %s (Protocols order)", i, row.Protocol, section.Protocols[i])
		}
		byProtocol[row.Protocol] = row
	}
	ref := byProtocol["PLAINTEXT"]
	if !ref.Reference || len(ref.Throughput.Ratios) != 0 || ref.Throughput.Median() != 1000 || ref.RatioVerdict(ref.Throughput) != "1" {
		t.Errorf("reference row %+v", ref)
	}
	ssl := byProtocol["SSL"]
	if ssl.Throughput.MedianRatio != 0.5 || ssl.Throughput.Verdict != stats.Slower || ssl.AckP99.MedianRatio != 2 || ssl.AckP99.Verdict != stats.Slower {
		t.Errorf("SSL row: throughput %+v, ack p99 %+v; want 0.5 and 2, both slower", ssl.Throughput, ssl.AckP99)
	}
	sasl := byProtocol["SASL_SSL"]
	if len(sasl.Throughput.Ratios) != rounds-1 || sasl.Throughput.Verdict != stats.WithinNoise {
		t.Errorf("SASL_SSL row %+v: want %d ratios (the failed round left out), within noise", sasl.Throughput, rounds-1)
	}
	aa := byProtocol[AAProtocol("PLAINTEXT")]
	if !aa.NoiseFloor || len(aa.Throughput.Ratios) != rounds {
		t.Errorf("A/A row %+v", aa)
	}
	if got := aa.RatioVerdict(aa.Throughput); got[len(got)-len("noise floor"):] != "noise floor" {
		t.Errorf("A/A ratio text %q, want it to say noise floor", got)
	}
	for _, cell := range section.Cells {
		if cell.Protocol == "SSL" && cell.ThroughputRatio != 0.5 {
			t.Errorf("round %d SSL cell ratio %v, want 0.5 (to its own round's reference)", cell.Round, cell.ThroughputRatio)
		}
	}
	for i := 1; i < len(section.Cells); i++ {
		a, b := section.Cells[i-1], section.Cells[i]
		if a.Protocol == b.Protocol && a.Round >= b.Round {
			t.Errorf("cells not in round order: %s round %d before round %d", a.Protocol, a.Round, b.Round)
		}
	}
}

// RoundOrder rotates the slots so that each runs first in some round.
func TestRoundOrder(t *testing.T) {
	t.Parallel()
	slots := []string{"A", "B", "C"}
	for round, want := range map[int]string{1: "ABC", 2: "BCA", 3: "CAB", 4: "ABC"} {
		got := ""
		for _, slot := range RoundOrder(slots, round) {
			got += slot
		}
		if got != want {
			t.Errorf("round %d: %s, want %s", round, got, want)
		}
	}
}
