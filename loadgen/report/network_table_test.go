package report

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// ratioStat is a RatioStat of three rounds whose ratios have the given
// median and interval, against a baseline of base in every round.
func ratioStat(median, low, high float64, verdict string, base float64) RatioStat {
	ratios := []float64{low, median, high}
	stat := RatioStat{Baseline: []float64{base, base, base}, Ratios: ratios, MedianRatio: median, CILow: low, CIHigh: high,
		ExcludesOne: low > 1 || high < 1, Verdict: verdict}
	for _, ratio := range ratios {
		stat.Values = append(stat.Values, ratio*base)
	}
	return stat
}

// networkStep is one synthetic step of a sweep: the A/A row and the two
// slots' throughput, p99 ack and p99 end-to-end ratios.
type networkStep struct {
	rtt, measured      float64
	records, ack, e2e  float64 // the baseline's
	idempotent, txn100 [3][3]float64
	verdicts           [2][3]string
}

// networkResults is the results of a sweep of the clients' path at
// saturation over 0, 5 and 50 ms, plus a load without a network step
// (which belongs to no sweep): idempotent stays within noise, then turns
// faster at 50 ms; transactional@100ms is slower at every step, its
// throughput ratio falling with the round trip.
func networkResults(steps ...networkStep) *Results {
	if len(steps) == 0 {
		steps = []networkStep{
			{rtt: 0, measured: 0.2, records: 1000, ack: 4, e2e: 9,
				idempotent: [3][3]float64{{0.99, 0.96, 1.02}, {1.01, 0.98, 1.04}, {1.00, 0.97, 1.03}},
				txn100:     [3][3]float64{{0.90, 0.88, 0.92}, {1.50, 1.40, 1.60}, {1.30, 1.20, 1.40}},
				verdicts:   [2][3]string{{"within noise", "within noise", "within noise"}, {"slower", "slower", "slower"}}},
			{rtt: 5, measured: 5.3, records: 900, ack: 9, e2e: 15,
				idempotent: [3][3]float64{{0.98, 0.97, 0.99}, {1.02, 0.99, 1.05}, {1.01, 0.98, 1.04}},
				txn100:     [3][3]float64{{0.52, 0.50, 0.55}, {2.10, 2.00, 2.20}, {1.80, 1.70, 1.90}},
				verdicts:   [2][3]string{{"within noise", "within noise", "within noise"}, {"slower", "slower", "slower"}}},
			{rtt: 50, measured: 50.4, records: 500, ack: 55, e2e: 70,
				idempotent: [3][3]float64{{1.10, 1.06, 1.14}, {0.90, 0.86, 0.94}, {0.95, 0.90, 1.00}},
				txn100:     [3][3]float64{{0.20, 0.18, 0.22}, {3.00, 2.80, 3.20}, {2.50, 2.30, 2.70}},
				verdicts:   [2][3]string{{"faster", "faster", "within noise"}, {"slower", "slower", "slower"}}},
		}
	}
	results := &Results{SchemaVersion: SchemaVersion, Tool: "exactly loadgen", RunID: "00000000000000bb",
		Target: Target{Kind: "embedded"}, Passed: true}
	overhead := &Overhead{Baseline: "at-least-once", Rounds: 3, Producers: 2, Resamples: 2000, Confidence: 0.95, RandomStream: 17}
	overhead.Loads = append(overhead.Loads, overheadResults().Overhead.Loads[0])
	// The steps out of order: the table sorts them by round-trip time.
	order := []int{}
	for index := range steps {
		order = append(order, index)
	}
	if len(order) > 2 {
		order[0], order[1] = order[1], order[0]
	}
	for _, index := range order {
		step := steps[index]
		load := OverheadLoad{Rate: 0, Faults: fmt.Sprintf("rtt-%gms", step.rtt),
			Network:   &NetworkPoint{Path: "clients", RTTMs: step.rtt, Link: fmt.Sprintf("delay %gms", step.rtt/2), MeasuredRTTMs: step.measured},
			NoiseBand: NoiseBand{ThroughputLow: 0.97, ThroughputHigh: 1.03, AckP99Low: 0.95, AckP99High: 1.05, EndToEndP99Low: 0.9, EndToEndP99High: 1.1}}
		load.Rows = append(load.Rows, OverheadRow{Slot: "at-least-once (A/A)", Mode: "at-least-once", NoiseFloor: true,
			Throughput:  ratioStat(1, 0.98, 1.02, "within noise", step.records),
			AckP99:      ratioStat(1, 0.96, 1.04, "within noise", step.ack),
			EndToEndP99: ratioStat(1, 0.92, 1.08, "within noise", step.e2e)})
		for slot, name := range []string{"idempotent", "transactional@100ms"} {
			ratios := step.idempotent
			if slot == 1 {
				ratios = step.txn100
			}
			verdicts := step.verdicts[slot]
			load.Rows = append(load.Rows, OverheadRow{Slot: name, Mode: strings.Split(name, "@")[0],
				Throughput:  ratioStat(ratios[0][0], ratios[0][1], ratios[0][2], verdicts[0], step.records),
				AckP99:      ratioStat(ratios[1][0], ratios[1][1], ratios[1][2], verdicts[1], step.ack),
				EndToEndP99: ratioStat(ratios[2][0], ratios[2][1], ratios[2][2], verdicts[2], step.e2e)})
		}
		overhead.Loads = append(overhead.Loads, load)
	}
	results.Overhead = overhead
	return results
}

// networkText is WriteNetworkCost's output for results.
func networkText(t *testing.T, results *Results) string {
	t.Helper()
	var text strings.Builder
	if err := WriteNetworkCost(&text, results); err != nil {
		t.Fatal(err)
	}
	return text.String()
}

// lineWith returns the first line of text that starts (after its
// indent) with prefix, failing the test when there is none.
func lineWith(t *testing.T, text, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), prefix) {
			return line
		}
	}
	t.Fatalf("no line starting %q in:\n%s", prefix, text)
	return ""
}

// inOrder fails unless every cell appears in line, one after the other.
func inOrder(t *testing.T, line string, cells ...string) {
	t.Helper()
	rest := line
	for _, cell := range cells {
		at := strings.Index(rest, cell)
		if at < 0 {
			t.Errorf("%q (or what follows it) not in order in line:\n%s", cell, line)
			return
		}
		rest = rest[at+len(cell):]
	}
}

// TestNetworkCostTable: the sweep's table has the steps as columns in
// increasing round-trip time, the measured round trip and the baseline's
// values above, and under each measure the A/A noise floor first, then
// every slot's ratio, interval and verdict mark at each step.
func TestNetworkCostTable(t *testing.T) {
	text := networkText(t, networkResults())
	if strings.Count(text, "cost against round-trip time added") != 1 {
		t.Fatalf("want one block (one path, plan and load):\n%s", text)
	}
	words := strings.Join(strings.Fields(text), " ")
	for _, want := range []string{"between the clients and the brokers (clients ↔ brokers), no other fault, at saturation",
		"median of 3 rounds", "each direction of the path: 0 ms: delay 0ms; 5 ms: delay 2.5ms; 50 ms: delay 25ms"} {
		if !strings.Contains(words, want) {
			t.Errorf("the table does not say %q:\n%s", want, text)
		}
	}
	inOrder(t, lineWith(t, text, "added round-trip time"), "0 ms", "5 ms", "50 ms")
	inOrder(t, lineWith(t, text, "measured round trip"), "0.2 ms", "5.3 ms", "50.4 ms")
	inOrder(t, lineWith(t, text, "at-least-once rec/s"), "1000", "900", "500")
	inOrder(t, lineWith(t, text, "at-least-once ack p99"), "4.0 ms", "9.0 ms", "55.0 ms")
	inOrder(t, lineWith(t, text, "at-least-once e2e p99"), "9.0 ms", "15.0 ms", "70.0 ms")

	// The blocks of the three measures, in order, each with the noise
	// floor's row first.
	measures := []string{"throughput ratio to at-least-once", "p99 ack ratio to at-least-once", "p99 end-to-end ratio to at-least-once"}
	blocks := map[string][]string{}
	current := ""
	var order []string
	for _, line := range strings.Split(text, "\n") {
		for _, measure := range measures {
			if strings.HasPrefix(line, measure) {
				current = measure
				order = append(order, measure)
			}
		}
		if current != "" && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "  each direction") {
			blocks[current] = append(blocks[current], line)
		}
	}
	if strings.Join(order, "|") != strings.Join(measures, "|") {
		t.Fatalf("measures %v, want %v:\n%s", order, measures, text)
	}
	for _, measure := range measures {
		rows := blocks[measure]
		if len(rows) != 3 || !strings.Contains(rows[0], "at-least-once (A/A) noise floor") ||
			!strings.Contains(rows[1], "idempotent") || !strings.Contains(rows[2], "transactional@100ms") {
			t.Errorf("%s: rows %q, want the A/A noise floor, idempotent, transactional@100ms", measure, rows)
		}
	}
	throughput := blocks[measures[0]]
	inOrder(t, throughput[0], "floor ±3.0%", "floor ±3.0%", "floor ±3.0%")
	inOrder(t, throughput[1], "0.99 [0.96, 1.02] ≈", "0.980 [0.970, 0.990] ≈", "1.10 [1.06, 1.14] faster")
	inOrder(t, throughput[2], "0.900 [0.880, 0.920] slower", "0.52 [0.50, 0.55] slower", "0.200 [0.180, 0.220] slower")
	inOrder(t, blocks[measures[1]][0], "floor ±5.0%")
	inOrder(t, blocks[measures[1]][2], "1.50 [1.40, 1.60] slower", "2.10 [2.00, 2.20] slower", "3.00 [2.80, 3.20] slower")
	inOrder(t, blocks[measures[2]][0], "floor ±10%")
	inOrder(t, blocks[measures[2]][1], "1.00 [0.97, 1.03] ≈", "1.01 [0.98, 1.04] ≈", "0.95 [0.90, 1.00] ≈")
	for _, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > SummaryWidth {
			t.Errorf("a line of %d columns:\n%s", n, line)
		}
	}
}

// TestNetworkCostTableWithoutNetwork: an overhead section none of whose
// loads carries a network step prints no such table, and neither do
// results without an overhead section.
func TestNetworkCostTableWithoutNetwork(t *testing.T) {
	if text := networkText(t, overheadResults()); text != "" {
		t.Errorf("a section without a network sweep printed:\n%s", text)
	}
	if text := networkText(t, &Results{}); text != "" {
		t.Errorf("results without an overhead section printed:\n%s", text)
	}
}

// TestNetworkCostTableWraps: a sweep of more steps than fit SummaryWidth
// continues in a second table, the slots repeated, every step once and
// in order, every line within the width.
func TestNetworkCostTableWraps(t *testing.T) {
	var steps []networkStep
	for _, rtt := range []float64{0, 1, 5, 20, 50, 100} {
		steps = append(steps, networkStep{rtt: rtt, records: 1000 - 5*rtt, ack: 4 + rtt, e2e: 9 + rtt,
			idempotent: [3][3]float64{{0.99, 0.96, 1.02}, {1.01, 0.98, 1.04}, {1.00, 0.97, 1.03}},
			txn100:     [3][3]float64{{0.52, 0.50, 0.55}, {2.10, 2.00, 2.20}, {1.80, 1.70, 1.90}},
			verdicts:   [2][3]string{{"within noise", "within noise", "within noise"}, {"slower", "slower", "slower"}}})
	}
	text := networkText(t, networkResults(steps...))
	if !strings.Contains(text, "(continued)") {
		t.Fatalf("six steps fit one table of %d columns?\n%s", SummaryWidth, text)
	}
	var heads []string
	for _, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > SummaryWidth {
			t.Errorf("a line of %d columns:\n%s", n, line)
		}
		if strings.HasPrefix(strings.TrimSpace(line), "added round-trip time") {
			heads = append(heads, strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "added round-trip time"))...)
		}
	}
	if got := strings.Join(heads, " "); got != "0 ms 1 ms 5 ms 20 ms 50 ms 100 ms" {
		t.Errorf("steps across the tables %q", got)
	}
	if got := strings.Count(text, "transactional@100ms"); got != 6 {
		t.Errorf("transactional@100ms in %d rows, want 6 (3 measures, 2 tables)", got)
	}
	if strings.Contains(text, "measured round trip") {
		t.Errorf("a sweep that measured no round trip shows a measured line:\n%s", text)
	}
}

// TestNetworkCostTableNotes: a step that could not run on the target and
// a slot the plan cannot touch are said under the block; the slot's
// cells read "-" at the steps where it did not run.
func TestNetworkCostTableNotes(t *testing.T) {
	results := networkResults()
	loads := results.Overhead.Loads
	for index := range loads {
		if network := loads[index].Network; network != nil && network.RTTMs == 50 {
			loads[index].NotApplicable = "the target has no proxy"
		}
		if network := loads[index].Network; network != nil && network.RTTMs == 5 {
			loads[index].Rows[1] = OverheadRow{Slot: "idempotent", Mode: "idempotent", CannotBite: "no transactions"}
		}
	}
	text := networkText(t, results)
	words := strings.Join(strings.Fields(text), " ")
	for _, want := range []string{"50 ms added: not run, the target has no proxy",
		"idempotent: cannot be touched: no transactions"} {
		if !strings.Contains(words, want) {
			t.Errorf("no note %q:\n%s", want, text)
		}
	}
	inOrder(t, lineWith(t, text, "added round-trip time"), "0 ms", "5 ms")
	if strings.Contains(lineWith(t, text, "added round-trip time"), "50 ms") {
		t.Errorf("a step that did not run has a column:\n%s", text)
	}
	if fields := strings.Fields(lineWith(t, text, "idempotent")); fields[len(fields)-1] != "-" {
		t.Errorf("idempotent's cell at 5 ms is not -: %q", fields)
	}
}
