package loadgen

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

func loadChurnPlan(t *testing.T) faults.Plan {
	t.Helper()
	plan, err := faults.LoadPlan("group-churn")
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// group-churn applies exactly to the modes with a consume stage, and to
// at-least-once, whose relay it adds; every other cell is not applicable,
// saying which modes it needs.
func TestGroupChurnApplicability(t *testing.T) {
	t.Parallel()
	plan := loadChurnPlan(t)
	for _, mode := range AllModes {
		reason := notApplicable(plan, mode, faultReach{launched: true, cluster: true})
		if applies := slices.Contains(GroupChurnModes, mode); applies != (reason == "") {
			t.Errorf("%s: not-applicable reason %q, want applicable = %v", mode, reason, applies)
		}
		if reason != "" && !strings.Contains(reason, strings.Join(GroupChurnModes, ", ")) {
			t.Errorf("%s: reason %q does not name the modes group-churn needs", mode, reason)
		}
	}
	want := []string{ModeAtLeastOnce, ModeEOSPipeline, ModeConsumerDedup, ModeExternalOffsets, modes.ShareGroup}
	if !slices.Equal(GroupChurnModes, want) {
		t.Errorf("GroupChurnModes = %v, want %v", GroupChurnModes, want)
	}
}

// Under group-churn at-least-once gets a relay (an output topic), the
// pipeline a chain of the plan's stages, and every cell the plan's
// duration and partitions when the workload asks for less.
func TestGroupChurnPlanRuns(t *testing.T) {
	t.Parallel()
	workload, err := LoadWorkload("standard")
	if err != nil {
		t.Fatal(err)
	}
	workload.Faults = []MatrixEntry{{Plan: "group-churn", Modes: GroupChurnModes}, {Plan: "none", Modes: []string{ModeAtLeastOnce}}}
	runs, err := planRuns(workload, 0xabc, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan := loadChurnPlan(t)
	byName := map[string]runPlan{}
	for _, run := range runs {
		byName[run.name] = run
	}
	relay, pipeline, dedup := byName["at-least-once:group-churn"], byName["eos-pipeline:group-churn"], byName["consumer-dedup:group-churn"]
	if relay.outputTopic == "" || len(relay.chainTopics) != 0 || len(relay.stageReaders()) != 2 || relay.stageReaders()[0].stage != 1 {
		t.Errorf("at-least-once under group-churn: output %q, chain %v, readers %+v", relay.outputTopic, relay.chainTopics, relay.stageReaders())
	}
	if stages := plan.Clients[0].ChainedStages(); len(pipeline.stageTopics()) != stages+1 || len(pipeline.chainTopics) != stages-1 {
		t.Errorf("eos-pipeline under group-churn: topics %v for %d stages", pipeline.stageTopics(), stages)
	}
	if readers := pipeline.stageReaders(); readers[0].topic != pipeline.outputTopic || int(readers[0].stage) != len(readers)-1 ||
		readers[len(readers)-1].topic != pipeline.topic || readers[len(readers)-1].stage != 0 {
		t.Errorf("eos-pipeline chain readers %+v", readers)
	}
	if dedup.outputTopic != "" {
		t.Errorf("consumer-dedup writes its table, not a topic: output %q", dedup.outputTopic)
	}
	if plain := byName["at-least-once:none"]; plain.outputTopic != "" || plain.workload.Partitions != workload.Partitions ||
		plain.workload.Duration != workload.Duration {
		t.Errorf("at-least-once without churn: output %q, %d partitions, %s", plain.outputTopic, plain.workload.Partitions, plain.workload.Duration)
	}
	if relay.workload.Partitions != plan.Partitions || relay.workload.Duration != Duration(plan.Duration) {
		t.Errorf("churn cell: %d partitions, %s; the plan needs %d and %s", relay.workload.Partitions, relay.workload.Duration,
			plan.Partitions, time.Duration(plan.Duration))
	}
}

// The expectations under group-churn: exactly once for eos-pipeline and
// external-offsets, within the window for consumer-dedup, and for
// at-least-once no loss, with duplicates required as the sign that the
// fault acted.
func TestGroupChurnExpectations(t *testing.T) {
	t.Parallel()
	plan := loadChurnPlan(t)
	for _, mode := range []string{ModeEOSPipeline, ModeExternalOffsets} {
		if e := expectationFor(plan, mode); e.lost != mustBeZero || e.duplicated != mustBeZero || e.reordered != mustBeZero || e.sign != signGroupChurn {
			t.Errorf("%s: %+v", mode, e)
		}
	}
	if e := expectationFor(plan, ModeConsumerDedup); e.lost != mustBeZero || e.duplicated != mustBeZero || e.sign != signGroupChurn {
		t.Errorf("consumer-dedup: %+v", e)
	}
	e := expectationFor(plan, ModeAtLeastOnce)
	if e.lost != mustBeZero || e.duplicated != mayBePositive || e.sign != signChurnDuplicates {
		t.Errorf("at-least-once: %+v", e)
	}
	churned := evidence{faultsFired: 3, churnAborts: 2, faultCounts: map[faults.Kind]int64{faults.KindGroupJoin: 1, faults.KindGroupLeave: 2}}
	cases := []struct {
		name  string
		want  sign
		seen  observedCounts
		proof evidence
		why   string
	}{
		{"acted", signGroupChurn, observedCounts{}, churned, ""},
		{"no wave", signGroupChurn, observedCounts{}, evidence{churnAborts: 2, faultCounts: map[faults.Kind]int64{faults.KindGroupLeave: 2}}, "no wave"},
		{"no abort", signGroupChurn, observedCounts{}, evidence{faultCounts: churned.faultCounts}, "no worker aborted"},
		{"relay without copies", signChurnDuplicates, observedCounts{}, churned, "0 duplicates"},
		{"relay with copies", signChurnDuplicates, observedCounts{duplicated: 40}, churned, ""},
	}
	for _, c := range cases {
		why := missingSign(c.want, c.seen, c.proof)
		if (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%s: missing sign %q, want %q", c.name, why, c.why)
		}
	}
}

// At-least-once's relay is the classic loop: a worker that leaves after
// producing a poll it did not commit leaves that poll's records to the
// partition's next owner, who produces them again. Every input record
// reaches the output, and exactly the aborted poll's records twice.
func TestRelayLeavesDuplicatesNotLosses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	target := newKfakeTarget(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const partitions = 2
	spec := stages.RelaySpec{Mode: ModeAtLeastOnce, Options: []kgo.Opt{kgo.SeedBrokers(target.Bootstrap()...)}, Group: "relay-test", Input: "relay.in", Output: "relay.out"}
	for _, topic := range []string{spec.Input, spec.Output} {
		if err := createTopic(ctx, admin, topic, partitions, 1); err != nil {
			t.Fatal(err)
		}
	}
	next := uint64(0)
	produce := func(count int) {
		t.Helper()
		var records []*kgo.Record
		for range count {
			value := verify.NewValue(verify.Header{RunID: 1, Sequence: next}, 64)
			records = append(records, &kgo.Record{Topic: spec.Input, Partition: int32(next % partitions), Value: value})
			next++
		}
		if err := admin.ProduceSync(ctx, records...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	metrics := newRunMetrics(time.Now())
	progress := stages.NewCounter()
	counter := stages.NewIdentityCounter(progress)
	committed, left := make(chan struct{}, 16), make(chan int, 1)
	first := &stages.Departure{AfterCommits: 1, Leave: make(chan struct{}),
		OnCommitted: func(fetches kgo.Fetches) { counter.Commit(fetches); committed <- struct{}{} },
		OnLeft:      func(records, _ int) { left <- records }}
	spec.ClientID = "relay-0"
	worker, err := stages.NewRelay(spec, stageMetrics{metrics})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- worker.Work(ctx, first) }()
	produce(40)
	waitSignal(ctx, t, committed, "the first worker's commit")
	produce(60) // the first worker relays some of these, does not commit them, and leaves
	var aborted int
	select {
	case aborted = <-left:
	case <-ctx.Done():
		t.Fatal("the first worker did not leave")
	}
	if err := <-done; err != nil || aborted == 0 {
		t.Fatalf("first worker: %v, aborted poll of %d records", err, aborted)
	}
	spec.ClientID = "relay-1"
	second, err := stages.NewRelay(spec, stageMetrics{metrics})
	if err != nil {
		t.Fatal(err)
	}
	stayCtx, stop := context.WithCancel(ctx)
	go func() {
		done <- second.Work(stayCtx, &stages.Departure{AfterCommits: -1, Leave: make(chan struct{}), OnCommitted: counter.Commit})
	}()
	if !progress.WaitFor(100, time.Now().Add(30*time.Second)) {
		t.Fatalf("the relay committed %d of 100 records", progress.Load())
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	copies := readOutputCopies(ctx, t, admin, target.Bootstrap(), spec.Output, partitions)
	duplicated := 0
	for seq := range next {
		switch n := copies[seq]; {
		case n == 0:
			t.Errorf("record %d lost", seq)
		case n > 1:
			duplicated += n - 1
		}
	}
	if duplicated != aborted {
		t.Fatalf("%d duplicates, want the %d records of the poll the first worker did not commit", duplicated, aborted)
	}
}

func waitSignal(ctx context.Context, t *testing.T, signal <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-signal:
	case <-ctx.Done():
		t.Fatalf("waiting for %s: %v", what, ctx.Err())
	}
}

// readOutputCopies reads topic to its end and counts the copies of each
// sequence number (stage 1 records only).
func readOutputCopies(ctx context.Context, t *testing.T, admin *kgo.Client, bootstrap []string, topic string, partitions int) map[uint64]int {
	t.Helper()
	ends, err := endOffsets(ctx, admin, topic, partitions, false)
	if err != nil {
		t.Fatal(err)
	}
	remaining := int64(0)
	for _, end := range ends {
		remaining += end
	}
	reader, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	copies := map[uint64]int{}
	for remaining > 0 {
		fetches := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d records left: %v", topic, remaining, ctx.Err())
		}
		fetches.EachRecord(func(record *kgo.Record) {
			remaining--
			header, err := verify.DecodeHeader(record.Value)
			if err != nil || header.Stage != 1 {
				t.Errorf("output record %s[%d]@%d: header %+v, %v", topic, record.Partition, record.Offset, header, err)
				return
			}
			copies[header.Sequence]++
		})
	}
	return copies
}

// churnMatrixPlan is a compact group-churn plan for tests: three waves a
// second apart over two phases (the second static), two chained stages.
func churnMatrixPlan(t *testing.T) string {
	t.Helper()
	path := t.TempDir() + "/churn.yaml"
	text := `name: churn
seed: 1
duration: 4s
partitions: 4
clients:
  - action: group-churn
    after: 1s
    every: 1s
    count: 2
    workers: 1
    leave_after: [0, 1]
    phases: [cooperative-sticky, cooperative-sticky-static]
    stages: 2
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Under group-churn on our broker (initial rebalance delay off, so each
// wave settles at once): eos-pipeline (two chained stages) and
// external-offsets keep every record exactly once, at-least-once's relay
// loses none and shows the duplicates its leaving workers leave behind.
func TestGroupChurnAgainstEmbeddedBroker(t *testing.T) {
	t.Parallel()
	workload := matrixWorkload(t, MatrixEntry{Plan: churnMatrixPlan(t), Modes: []string{ModeEOSPipeline, ModeAtLeastOnce, ModeExternalOffsets}})
	results := runMatrix(t, newQuickGroupsEmbedded(t), workload)
	logMatrix(t, results)
	for _, run := range results.Runs {
		seen := observe(run)
		counts := map[string]int{}
		for _, event := range run.FaultEvents {
			counts[event.Kind]++
		}
		if run.Status != report.StatusPass || seen.lost != 0 || counts[string(faults.KindGroupJoin)] == 0 || counts[string(faults.KindGroupLeave)] == 0 {
			t.Errorf("%s: %s (%s), events %v", run.Name, run.Status, run.Reason, counts)
		}
		if wantCopies := run.Mode == ModeAtLeastOnce; (seen.duplicated > 0) != wantCopies {
			t.Errorf("%s: %d duplicates", run.Name, seen.duplicated)
		}
		topics, base := map[string]bool{}, ""
		for _, check := range run.Checks {
			topics[check.Topic] = true
			if name, isOutput := strings.CutSuffix(check.Topic, ".out"); isOutput {
				base = name
			}
		}
		if run.Mode == ModeEOSPipeline && (len(topics) != 3 || !topics[base+".s1"] || !topics[base+".in"]) {
			t.Errorf("eos-pipeline with two stages checked %v, want its output, stage 1's output and its input", topics)
		}
	}
	if !results.Passed {
		t.Errorf("results not passed: %d runs", len(results.Runs))
	}
}
