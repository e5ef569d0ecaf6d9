package report

import (
	"bytes"
	"strings"
	"testing"
)

// findMaxFixture is a find_max section of two targets, the second faster
// in idempotent and slower in at-least-once.
func findMaxFixture() *FindMax {
	steps := []FindMaxStep{{TargetRecordsPerSecond: 1000, Attempt: 1, Held: true, Status: StatusPass}}
	return &FindMax{Criteria: FindMaxCriteria{Tolerance: 0.01, MaxP99Millis: 50, Precision: 0.05, StepWarmupSeconds: 2, StepSeconds: 5,
		ConfirmSeconds: 20, Confirmations: 5, StepDown: 0.2},
		Targets: []FindMaxTarget{
			{Target: Target{Kind: "embedded"}, Modes: []FindMaxMode{
				{Name: "at-least-once", Mode: "at-least-once", SustainableRecordsPerSecond: 12000, FailedRecordsPerSecond: 12500,
					SearchedRecordsPerSecond: 13000, Confirmed: true, RatioToBaseline: 1, Stopped: "precision", Steps: steps},
				{Name: "idempotent", Mode: "idempotent", SustainableRecordsPerSecond: 9000, RatioToBaseline: 0.75, Stopped: "max-steps", Steps: steps}}},
			{Target: Target{Kind: "kfake"}, Modes: []FindMaxMode{
				{Name: "at-least-once", Mode: "at-least-once", SustainableRecordsPerSecond: 6000, RatioToBaseline: 1, Stopped: "precision", Steps: steps},
				{Name: "idempotent", Mode: "idempotent", SustainableRecordsPerSecond: 18000, RatioToBaseline: 3, Stopped: "budget",
					Error: "", Steps: steps}}}}}
}

func TestWriteFindMaxTablesAndTargetRatio(t *testing.T) {
	var out bytes.Buffer
	if err := WriteFindMax(&out, findMaxFixture()); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	lines := strings.Split(text, "\n")
	find := func(fields ...string) string {
		for _, line := range lines {
			if strings.Join(strings.Fields(line), " ") == strings.Join(fields, " ") {
				return line
			}
		}
		t.Errorf("no line %q in:\n%s", strings.Join(fields, " "), text)
		return ""
	}
	find("sustainable", "rate:", "the", "highest", "offered", "rate", "that", "held", "(achieved", "within", "1", "%,", "ack", "p99", "<=",
		"50", "ms),", "to", "5", "%,", "confirmed", "by", "a", "20", "s", "step")
	find("embedded", "at-least-once", "12000", "1.00", "13000", "12500", "1", "precision,", "confirmed")
	find("embedded", "idempotent", "9000", "0.75", "-", "-", "1", "max-steps")
	find("mode", "embedded", "kfake", "kfake/embedded")
	find("at-least-once", "12000", "6000", "0.50")
	find("idempotent", "9000", "18000", "2.00")
}

func TestDashboardShowsSustainableRates(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	results.FindMax = findMaxFixture()
	page := renderFixtures(t, results)
	for _, want := range []string{"Sustainable rate", "<td class=\"text\">kfake</td><td class=\"text\">idempotent</td><td>18000</td><td>3.00</td>",
		"ack p99 at most 50 ms", "run once more for 20 s, stepping down 20 % until such a long step held, then bisecting between the long steps (at most 5 in all)",
		"<td>12000</td><td>1.00</td><td>13000</td><td>12500</td><td>1</td><td class=\"text\">precision, confirmed</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if page := renderFixtures(t, loadFixture(t, kfakeFixture)); strings.Contains(page, "Sustainable rate") {
		t.Error("a file without find_max shows a sustainable-rate section")
	}
}
