package loadgen

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// eos-pipeline under group-churn on the consumer protocol (KIP-848,
// every stage's workers on ConsumerGroupHeartbeat with the uniform
// assignor), on our broker: every input record exactly once downstream
// through both chained stages, the static phase's workers removed by
// instance id, and the rebalance pauses measured after the churn events.
func TestGroupChurnConsumerProtocolAgainstEmbeddedBroker(t *testing.T) {
	t.Parallel()
	workload := matrixWorkload(t, MatrixEntry{Plan: churnMatrixPlan(t), Modes: []string{ModeEOSPipeline}})
	workload.GroupProtocol = GroupProtocolConsumer
	target := newQuickGroupsEmbedded(t)
	results := runMatrix(t, target, workload)
	logMatrix(t, results)
	assertGroupTypes(t, target, "exactly-"+results.RunID+"-", "consumer")
	if len(results.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(results.Runs))
	}
	run := results.Runs[0]
	seen := observe(run)
	if run.Status != report.StatusPass || seen.lost != 0 || seen.duplicated != 0 {
		t.Errorf("%s: %s (%s): lost %d, duplicated %d", run.Name, run.Status, run.Reason, seen.lost, seen.duplicated)
	}
	if run.Name != "eos-pipeline:churn/consumer" || run.GroupProtocol != GroupProtocolConsumer ||
		run.ClientSettings["group.protocol"] != GroupProtocolConsumer || run.ClientSettings["group.remote.assignor"] != "uniform" {
		t.Errorf("run %q records protocol %q, settings %q %q", run.Name, run.GroupProtocol,
			run.ClientSettings["group.protocol"], run.ClientSettings["group.remote.assignor"])
	}
	pauses := run.RebalancePauses
	t.Logf("%s: %s", run.Name, pauses.Text())
	if pauses == nil || pauses.Events == 0 || pauses.Pauses == 0 || len(pauses.PausesMs) != pauses.Pauses ||
		pauses.MedianMs <= 0 || pauses.MaxMs < pauses.MedianMs || pauses.TotalMs < pauses.MaxMs {
		t.Errorf("rebalance pauses %+v: want churn events with a pause each", pauses)
	}
}

// A comparison interleaves the protocols (classic first in odd rounds,
// consumer first in even ones), keeps only the runs with groups, and
// names each run after its protocol and round, on topics of its own.
func TestPlanGroupProtocolRuns(t *testing.T) {
	t.Parallel()
	workload := matrixWorkload(t, MatrixEntry{Plan: "group-churn", Modes: []string{ModeEOSPipeline}},
		MatrixEntry{Plan: "none", Modes: []string{ModeIdempotent}})
	workload.GroupProtocols = &GroupProtocolsSpec{Rounds: 2}
	plans, err := planGroupProtocolRuns(workload, 0xabc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	topics := map[string]bool{}
	for _, plan := range plans {
		names = append(names, plan.name)
		for _, topic := range plan.stageTopics() {
			if topics[topic] {
				t.Errorf("topic %s used twice", topic)
			}
			topics[topic] = true
		}
		if plan.slot != plan.groupProtocol() {
			t.Errorf("%s: slot %q, protocol %q", plan.name, plan.slot, plan.groupProtocol())
		}
	}
	want := []string{"eos-pipeline:group-churn/classic #1", "eos-pipeline:group-churn/consumer #1",
		"eos-pipeline:group-churn/consumer #2", "eos-pipeline:group-churn/classic #2"}
	if !slices.Equal(names, want) {
		t.Errorf("runs %v, want %v", names, want)
	}
}

// The comparison's row: each protocol's median pause over the rounds with
// its interval, the lost and duplicated counts, and consumer's pauses
// over classic's round by round.
func TestBuildGroupProtocols(t *testing.T) {
	t.Parallel()
	run := func(protocol string, round int, median, total float64, duplicated uint64) *report.Run {
		r := &report.Run{Name: protocol, Mode: ModeEOSPipeline, Status: report.StatusPass,
			Round: round, Slot: protocol, StartedAt: time.Unix(0, 0),
			Checks:          []report.Check{{Counts: verify.Counts{Duplicated: duplicated}}},
			RebalancePauses: &report.RebalancePauses{Events: 9, Pauses: 4, MedianMs: median, TotalMs: total}}
		r.FaultPlan = "group-churn"
		return r
	}
	workload := Workload{GroupProtocols: &GroupProtocolsSpec{Rounds: 3}}
	comparison := buildGroupProtocols(workload, []*report.Run{
		run("classic", 1, 1000, 8000, 0), run("consumer", 1, 500, 2000, 0),
		run("consumer", 2, 300, 3000, 0), run("classic", 2, 600, 6000, 0),
		run("classic", 3, 2000, 9000, 0), run("consumer", 3, 500, 3000, 1),
	})
	if len(comparison.Rows) != 1 || len(comparison.Rows[0].Sides) != 2 {
		t.Fatalf("comparison %+v", comparison)
	}
	row := comparison.Rows[0]
	classic, consumer := row.Sides[0], row.Sides[1]
	if classic.Protocol != "classic" || classic.MedianPause.Median != 1000 || classic.Passed != 3 || classic.Duplicated != 0 ||
		consumer.MedianPause.Median != 500 || consumer.Duplicated != 1 || consumer.TotalPaused.Median != 3000 {
		t.Errorf("sides %+v / %+v", classic, consumer)
	}
	if !slices.Equal(row.MedianPauseRatio.Ratios, []float64{0.5, 0.5, 0.25}) || row.MedianPauseRatio.MedianRatio != 0.5 ||
		row.MedianPauseRatio.CILow > 0.25 || row.MedianPauseRatio.CIHigh < 0.5 {
		t.Errorf("median pause ratio %+v", row.MedianPauseRatio)
	}
}

// assertGroupTypes checks that the broker lists the run's groups (ids
// starting with prefix), and each with type want: the clients really
// spoke that protocol (franz-go falls back to classic without a word).
func assertGroupTypes(t *testing.T, target Target, prefix, want string) {
	t.Helper()
	client, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	response, err := kmsg.NewPtrListGroupsRequest().RequestWith(t.Context(), client)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, group := range response.Groups {
		if strings.HasPrefix(group.Group, prefix) {
			found++
			if group.GroupType != want {
				t.Errorf("group %s has type %q, want %q", group.Group, group.GroupType, want)
			}
		}
	}
	if found == 0 {
		t.Errorf("no group of the run (%s*) listed", prefix)
	}
}

// consumer-crash's worker subprocesses get the run's protocol in their
// spec, for the pipeline and the database stage roles alike.
func TestWorkerSpecsCarryGroupProtocol(t *testing.T) {
	t.Parallel()
	workload := matrixWorkload(t, MatrixEntry{Plan: "consumer-crash", Modes: []string{ModeEOSPipeline, ModeExternalOffsets}})
	workload.GroupProtocol = GroupProtocolConsumer
	plans, err := planRuns(workload, 0xabc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, plan := range plans {
		plan.observations = newRunObservations()
		if spec := plan.consumeWorkerSpec(0); spec.GroupProtocol != GroupProtocolConsumer {
			t.Errorf("%s: worker spec protocol %q", plan.name, spec.GroupProtocol)
		}
	}
	if len(plans) != 2 {
		t.Errorf("%d plans, want 2", len(plans))
	}
}
