package report

import (
	"regexp"
	"strings"
	"testing"
)

// networkSection returns the page's cost against round-trip time
// section, "" when there is none.
func networkSection(page string) string {
	start := strings.Index(page, `<section id="network">`)
	if start < 0 {
		return ""
	}
	section := page[start:]
	return section[:strings.Index(section, "</section>")]
}

// TestDashboardNetworkSection: a sweep of three round-trip times draws
// one chart per measure (throughput, p99 ack, p99 end to end) and one of
// records/s, each a well-formed SVG with a point per step and slot, and
// a table like the text one: the steps in order, the baseline's values,
// the noise floor first, a slower slot coloured.
func TestDashboardNetworkSection(t *testing.T) {
	page := renderFixtures(t, networkResults())
	section := networkSection(page)
	if section == "" {
		t.Fatal("no cost against round-trip time section")
	}
	if !strings.Contains(section, "<h2>Cost against round-trip time") {
		t.Errorf("the section's heading is missing")
	}
	charts := figures(t, section)
	if len(charts) != 4 {
		ids := make([]string, 0, len(charts))
		for id := range charts {
			ids = append(ids, id)
		}
		t.Fatalf("charts %v, want 4 (three measures, records/s)", ids)
	}
	titles := map[string]string{
		"network-0-0-throughput": "throughput relative to at-least-once against added round-trip time (clients ↔ brokers), median and 95% interval",
		"network-0-0-ack-p99":    "p99 acknowledgement latency relative to at-least-once against added round-trip time (clients ↔ brokers)",
		"network-0-0-e2e-p99":    "p99 end-to-end latency relative to at-least-once against added round-trip time",
		"network-0-0-records":    "acknowledged records/s of each slot against added round-trip time (clients ↔ brokers)",
	}
	for id, title := range titles {
		figure, ok := charts[id]
		if !ok {
			t.Errorf("no chart %s", id)
			continue
		}
		if !strings.Contains(figure, title) {
			t.Errorf("chart %s is not titled %q:\n%.400s", id, title, figure)
		}
		svg := regexp.MustCompile(`(?s)<svg.*</svg>`).FindString(figure)
		if svg == "" {
			t.Errorf("chart %s has no SVG: %s", id, figure)
			continue
		}
		parseSVG(t, id, svg)
		if !strings.Contains(svg, `aria-label="`+title) {
			t.Errorf("chart %s's SVG is not labelled with its title for screen readers", id)
		}
		for _, step := range []string{">0 ms<", ">5 ms<", ">50 ms<"} {
			if !strings.Contains(svg, step) {
				t.Errorf("chart %s does not label the step %s", id, step)
			}
		}
		for _, slot := range []string{"idempotent", "transactional@100ms"} {
			if !strings.Contains(figure, slot) {
				t.Errorf("chart %s has no legend entry for %s", id, slot)
			}
		}
	}
	if !strings.Contains(charts["network-0-0-throughput"], "noise floor") {
		t.Errorf("the ratio chart does not draw the noise floor")
	}
	if !strings.Contains(charts["network-0-0-records"], "at-least-once (the baseline)") {
		t.Errorf("the records/s chart does not draw the baseline")
	}

	table := regexp.MustCompile(`(?s)<table class="network-cost">.*?</table>`).FindString(section)
	if table == "" {
		t.Fatal("no table under the charts")
	}
	head := regexp.MustCompile(`<th>([^<]*)</th>`).FindAllStringSubmatch(table, -1)
	var steps []string
	for _, cell := range head {
		steps = append(steps, cell[1])
	}
	if strings.Join(steps, ",") != "0 ms,5 ms,50 ms" {
		t.Errorf("table columns %v, want 0 ms, 5 ms, 50 ms", steps)
	}
	for _, want := range []string{"<td>1000</td><td>900</td><td>500</td>", "<td>0.2 ms</td><td>5.3 ms</td><td>50.4 ms</td>"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks the line %s", want)
		}
	}
	rows := regexp.MustCompile(`<tr data-measure="([^"]+)" data-slot="([^"]+)"[^>]*>(.*)</tr>`).FindAllStringSubmatch(table, -1)
	var order []string
	cells := map[string]string{}
	for _, row := range rows {
		order = append(order, row[1]+"/"+row[2])
		cells[row[1]+"/"+row[2]] = row[3]
	}
	want := "throughput/at-least-once (A/A),throughput/idempotent,throughput/transactional@100ms," +
		"ack-p99/at-least-once (A/A),ack-p99/idempotent,ack-p99/transactional@100ms," +
		"e2e-p99/at-least-once (A/A),e2e-p99/idempotent,e2e-p99/transactional@100ms"
	if strings.Join(order, ",") != want {
		t.Fatalf("table rows %v", order)
	}
	if row := cells["throughput/at-least-once (A/A)"]; !strings.Contains(row, "noise floor") || strings.Count(row, "floor ±3.0%") != 3 {
		t.Errorf("the A/A row is not the noise floor: %s", row)
	}
	if row := cells["throughput/transactional@100ms"]; !strings.Contains(row,
		`<td class="worse">0.900 [0.880, 0.920] slower</td><td class="worse">0.52 [0.50, 0.55] slower</td><td class="worse">0.200 [0.180, 0.220] slower</td>`) {
		t.Errorf("transactional@100ms's throughput cells: %s", row)
	}
	if row := cells["throughput/idempotent"]; !strings.Contains(row, `<td class="">0.99 [0.96, 1.02] ≈</td>`) ||
		!strings.Contains(row, "1.10 [1.06, 1.14] faster") || strings.Contains(row, "worse") {
		t.Errorf("idempotent's throughput cells: %s", row)
	}
	if !strings.Contains(section, "0 ms: delay 0ms; 5 ms: delay 2.5ms; 50 ms: delay 25ms") {
		t.Errorf("the section does not say how each step impaired the path")
	}
}

// TestDashboardNetworkSectionComparesFiles: two files with sweeps show
// one group each, the first file's first; a file without a network
// sweep adds none.
func TestDashboardNetworkSectionComparesFiles(t *testing.T) {
	second := networkResults()
	second.RunID = "00000000000000cc"
	for index := range second.Overhead.Loads {
		if network := second.Overhead.Loads[index].Network; network != nil {
			network.Path = "follower"
		}
	}
	page := renderFixtures(t, networkResults(), overheadResults(), second)
	section := networkSection(page)
	groups := regexp.MustCompile(`<div class="network-sweep" data-file="([^"]+)" data-path="([^"]+)"`).FindAllStringSubmatch(section, -1)
	if len(groups) != 2 || groups[0][1] != "A" || groups[0][2] != "clients" || groups[1][1] != "C" || groups[1][2] != "follower" {
		t.Fatalf("groups %v, want A's clients sweep then C's follower sweep", groups)
	}
	charts := figures(t, section)
	for _, id := range []string{"network-0-0-throughput", "network-2-0-throughput", "network-2-0-records"} {
		if _, ok := charts[id]; !ok {
			t.Errorf("no chart %s", id)
		}
	}
	if len(charts) != 8 {
		t.Errorf("%d charts, want 8 (4 per sweep)", len(charts))
	}
	if !strings.Contains(charts["network-2-0-throughput"], "(follower ↔ other brokers)") {
		t.Errorf("the follower sweep's chart does not name its path")
	}
}

// TestDashboardWithoutNetworkHasNoNetworkSection: overhead sections
// without a network sweep, and results without one, show no section.
func TestDashboardWithoutNetworkHasNoNetworkSection(t *testing.T) {
	page := renderFixtures(t, overheadResults(), loadFixture(t, kfakeFixture), loadFixture(t, overheadFixture))
	if strings.Contains(page, `<section id="network">`) || strings.Contains(page, `data-chart="network-`) {
		t.Error("results without a network sweep got a cost against round-trip time section")
	}
}
