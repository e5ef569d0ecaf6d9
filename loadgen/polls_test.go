package loadgen

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/pollwatch"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// pollTestTopic is the topic of the kfake poll tests: 3 partitions, 100
// loadgen records each (producer 0, seq = offset*3 + partition), one
// record a batch, so that a small fetch returns a few records of each.
const pollTestTopic = "polls"

func pollTestCluster(t *testing.T) []string {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, pollTestTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	for round := range uint64(100) {
		var records []*kgo.Record
		for partition := range uint64(3) {
			records = append(records, &kgo.Record{Topic: pollTestTopic, Partition: int32(partition),
				Value: verify.NewValue(verify.Header{RunID: 1, Sequence: round*3 + partition}, 40)})
		}
		if err := producer.ProduceSync(t.Context(), records...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return cluster.ListenAddrs()
}

// pollUntil polls client (at most max records a poll, 0: no limit),
// reporting each poll to its watch, until done says so or the deadline
// passes.
func pollUntil(t *testing.T, client *kgo.Client, max int, deadline time.Time, done func() bool) {
	t.Helper()
	polls := pollwatch.Of(client)
	if polls == nil {
		t.Fatal("client has no poll watch")
	}
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("deadline passed")
		}
		ctx, cancel := context.WithDeadline(t.Context(), deadline)
		fetches := client.PollRecords(ctx, max)
		cancel()
		polls.Fetched(fetches)
	}
}

// judgePollTest reads the topic back read_committed and judges the
// consumers' polls against it, as verifyRun does.
func judgePollTest(t *testing.T, bootstrap []string, observations *runObservations) ([]*pendingCheck, map[string][]string) {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	topic := observations.topic(pollTestTopic)
	observer := topic.Observer(verify.ReadCommitted.String())
	ends, complete, err := readBack(t.Context(), admin, []kgo.Opt{kgo.SeedBrokers(bootstrap...)}, pollTestTopic, 3, verify.ReadCommitted,
		verify.NewPollTracker("read-back", topic, observer), func(*kgo.Record) {})
	if err != nil || !complete {
		t.Fatalf("read back: complete %v, %v", complete, err)
	}
	offenders := make(map[string][]string)
	references := map[readKey]readEnd{{pollTestTopic, verify.ReadCommitted}: {observer: observer, ends: ends, complete: true}}
	return verifyPolls(observations, references, offenders), offenders
}

// TestPollWatchThroughARebalance: a group member reads every partition
// part way; a second member joins, takes partitions, and leaves without
// committing, so they come back to the first member at their start. Through
// the real client callbacks none of it is a skip or a move back: each
// assignment change resets the positions.
func TestPollWatchThroughARebalance(t *testing.T) {
	t.Parallel()
	bootstrap := pollTestCluster(t)
	observations := newRunObservations()
	member := func(name string) *kgo.Client {
		options := append([]kgo.Opt{kgo.SeedBrokers(bootstrap...), kgo.ClientID(name), kgo.ConsumerGroup("g"),
			kgo.ConsumeTopics(pollTestTopic), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxPartitionBytes(1),
			kgo.DisableAutoCommit(), kgo.HeartbeatInterval(100 * time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			observations.watch(consumersRelay)},
			stages.AssignmentOptions(pollTestTopic, false, nil)...)
		client, err := kgo.NewClient(options...)
		if err != nil {
			t.Fatal(err)
		}
		return client
	}
	group := observations.group(consumersRelay, pollTestTopic, verify.ReadCommitted)
	distinct := func() uint64 { return group.observations.Distinct(group.observer) }
	polledBy := func(index int) uint64 {
		group.mu.Lock()
		defer group.mu.Unlock()
		if index >= len(group.trackers) {
			return 0
		}
		group.trackers[index].mu.Lock()
		defer group.trackers[index].mu.Unlock()
		return group.trackers[index].tracker.PolledRecords()
	}
	deadline := time.Now().Add(20 * time.Second)
	first := member("first")
	defer first.Close()
	pollUntil(t, first, 0, deadline, func() bool { return distinct() >= 45 })
	second := member("second")
	var wait sync.WaitGroup
	wait.Add(1)
	go func() {
		defer wait.Done()
		pollUntil(t, second, 0, deadline, func() bool { return polledBy(1) >= 5 })
		second.Close() // leaves the group, nothing committed
	}()
	pollUntil(t, first, 0, deadline, func() bool { return polledBy(1) >= 5 })
	wait.Wait()
	pollUntil(t, first, 0, deadline, func() bool { return distinct() == 300 && polledBy(0) >= 300 })

	checks, offenders := judgePollTest(t, bootstrap, observations)
	if len(checks) != 1 {
		t.Fatalf("%d poll checks, want one for the group", len(checks))
	}
	counts := checks[0].Counts
	if !checks[0].Complete || counts.Unique != 300 || counts.PollSkips != 0 || counts.NonMonotonicPolls != 0 {
		t.Fatalf("rebalanced group: %+v complete=%v; offenders %v", counts, checks[0].Complete, offenders)
	}
	if reread := counts.Read - 300; reread == 0 {
		t.Fatalf("polled %d records: nothing came back to the first member, the test shows nothing", counts.Read)
	}
}

// TestPollWatchCatchesRealJumps drives a direct consumer per partition
// through the real client: a seek back reported as a rewind is legitimate;
// the same seek unreported is a non-monotonic poll, and a seek forward
// unreported skips records, named by topic, partition, offset and record.
func TestPollWatchCatchesRealJumps(t *testing.T) {
	t.Parallel()
	bootstrap := pollTestCluster(t)
	observations := newRunObservations()
	consumer := func(partition int32) *kgo.Client {
		client, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{pollTestTopic: {partition: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), observations.watch(consumersLive))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(client.Close)
		return client
	}
	deadline := time.Now().Add(20 * time.Second)
	group := observations.group(consumersLive, pollTestTopic, verify.ReadCommitted)
	polled := func() uint64 {
		group.mu.Lock()
		defer group.mu.Unlock()
		var total uint64
		for _, tracker := range group.trackers {
			tracker.mu.Lock()
			total += tracker.tracker.PolledRecords()
			tracker.mu.Unlock()
		}
		return total
	}
	seek := func(client *kgo.Client, partition int32, offset int64) {
		client.SetOffsets(map[string]map[int32]kgo.EpochOffset{pollTestTopic: {partition: {Epoch: -1, Offset: offset}}})
	}
	// Partition 0: to offset 60, seek back to 20 and report it, to the end.
	rewinding := consumer(0)
	pollUntil(t, rewinding, 1, deadline, func() bool { return polled() >= 60 })
	seek(rewinding, 0, 20)
	pollwatch.Of(rewinding).Rewound([]int32{0})
	target := polled() + 80
	pollUntil(t, rewinding, 1, deadline, func() bool { return polled() >= target })
	// Partition 1: the same seek back, unreported.
	back := consumer(1)
	target = polled() + 60
	pollUntil(t, back, 1, deadline, func() bool { return polled() >= target })
	seek(back, 1, 20)
	target = polled() + 80
	pollUntil(t, back, 1, deadline, func() bool { return polled() >= target })
	// Partition 2: to offset 30, then a seek forward over 10 records.
	forward := consumer(2)
	target = polled() + 30
	pollUntil(t, forward, 1, deadline, func() bool { return polled() >= target })
	seek(forward, 2, 40)
	target = polled() + 60
	pollUntil(t, forward, 1, deadline, func() bool { return polled() >= target })

	checks, offenders := judgePollTest(t, bootstrap, observations)
	if len(checks) != 1 {
		t.Fatalf("%d poll checks", len(checks))
	}
	counts := checks[0].Counts
	// One record a poll: the seeks land exactly after offsets 59 and 29.
	if counts.NonMonotonicPolls != 1 || counts.PollSkips != 10 || counts.InconsistentOffsets != 0 {
		t.Fatalf("counts %+v, want 1 move back (partition 1) and 10 skips (partition 2); offenders %v", counts, offenders)
	}
	skip, back1 := strings.Join(offenders[verify.OffenderPollSkip], "\n"), strings.Join(offenders[verify.OffenderNonMonotonic], "\n")
	if !strings.Contains(skip, "polled partition 2 offset 29 then offset 40") || !strings.Contains(skip, "the first: offset 30, producer 0 seq 92") ||
		!strings.Contains(skip, consumersLive+" "+pollTestTopic) {
		t.Errorf("skip offender: %q", skip)
	}
	if !strings.Contains(back1, "polled partition 1 offset 59 then offset 20") {
		t.Errorf("move-back offender: %q", back1)
	}
}

// TestJudgeRunFailsOnSharperAnomalies: inconsistent offsets, poll skips and
// moves back fail a run in every mode, with their offenders; lost writes
// are loss, allowed where loss is.
func TestJudgeRunFailsOnSharperAnomalies(t *testing.T) {
	t.Parallel()
	ackLoss, err := faults.LoadPlan("ack-loss")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mode   string
		plan   faults.Plan
		counts verify.Counts
		status string
		why    string
		kind   string
	}{
		{"poll skips", ModeEOSPipeline, faults.Plan{}, verify.Counts{PollSkips: 3}, report.StatusFail, "3 records skipped by a poll", verify.OffenderPollSkip},
		{"moves back", ModeAtLeastOnce, ackLoss, verify.Counts{NonMonotonicPolls: 1}, report.StatusFail, "1 non-monotonic polls", verify.OffenderNonMonotonic},
		{"inconsistent offsets", ModeAtMostOnce, ackLoss, verify.Counts{InconsistentOffsets: 2}, report.StatusFail, "2 inconsistent offsets", verify.OffenderInconsistent},
		{"aborted records polled", ModeEOSPipeline, faults.Plan{}, verify.Counts{AbortedVisible: 4}, report.StatusFail, "4 aborted-or-fenced-but-visible", verify.OffenderAbortedVisible},
		{"lost writes where loss is allowed", ModeAtMostOnce, ackLoss, verify.Counts{Lost: 2, LostWrites: 2}, report.StatusPass, "", ""},
		{"lost writes where it is not", ModeIdempotent, ackLoss, verify.Counts{Lost: 2, LostWrites: 1, Unseen: 1}, report.StatusFail, "2 acknowledged-but-lost", verify.OffenderLost},
	}
	for _, test := range cases {
		t.Run(test.name, func(t *testing.T) {
			run := &report.Run{Name: test.name, Mode: test.mode, Producers: verify.LedgerTotals{Sent: 10, Acknowledged: 10},
				Checks: []report.Check{{Reader: "read_committed", Complete: true},
					{Reader: report.PollReader, Consumers: consumersPipeline, Complete: true, Counts: test.counts}}}
			judgeRun(run, test.plan, evidence{faultsFired: 3, offenders: map[string][]string{test.kind: {"the offending record"}}})
			if run.Status != test.status || !strings.Contains(run.Reason, test.why) {
				t.Fatalf("status %s (%s), want %s (%s)", run.Status, run.Reason, test.status, test.why)
			}
			if test.kind != "" && (len(run.Expectation.Offenders) != 1 || !strings.HasPrefix(run.Expectation.Offenders[0], test.kind+": ")) {
				t.Fatalf("offenders %q", run.Expectation.Offenders)
			}
			if !strings.Contains(run.Expectation.Observed, "poll-skips") {
				t.Fatalf("observed %q does not state the poll checks", run.Expectation.Observed)
			}
		})
	}
}

// TestPollWatchAcrossAnAbortedTransaction: a GroupTransactSession whose
// End aborts resets to its committed offsets and reads records again;
// reported (ended, as the pipeline worker does) that is no move back,
// unreported it is.
func TestPollWatchAcrossAnAbortedTransaction(t *testing.T) {
	t.Parallel()
	bootstrap := pollTestCluster(t)
	for _, report := range []bool{true, false} {
		observations := newRunObservations()
		group := "report"
		if !report {
			group = "silent"
		}
		options := append([]kgo.Opt{kgo.SeedBrokers(bootstrap...), kgo.ClientID(group), kgo.TransactionalID(group),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(pollTestTopic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), observations.watch(consumersPipeline)},
			stages.AssignmentOptions(pollTestTopic, false, nil)...)
		session, err := kgo.NewGroupTransactSession(options...)
		if err != nil {
			t.Fatal(err)
		}
		tracked := observations.group(consumersPipeline, pollTestTopic, verify.ReadCommitted)
		polled := func() uint64 {
			tracked.mu.Lock()
			defer tracked.mu.Unlock()
			return tracked.trackers[0].tracker.PolledRecords()
		}
		end := func(commit bool) {
			if err := session.Begin(); err != nil {
				t.Fatal(err)
			}
			committed, err := session.End(t.Context(), kgo.TransactionEndTry(commit))
			if err != nil || committed != commit {
				t.Fatalf("end(commit=%v): committed %v, %v", commit, committed, err)
			}
			if report {
				pollwatch.Of(session.Client()).Ended(committed)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		pollUntil(t, session.Client(), 1, deadline, func() bool { return polled() >= 10 })
		end(true)
		pollUntil(t, session.Client(), 1, deadline, func() bool { return polled() >= 30 })
		// One record a poll: the commit stores the positions after the
		// first 10 records, the abort rewinds there, and the 20 records
		// read since come again among the 290 left to read.
		end(false)
		pollUntil(t, session.Client(), 1, deadline, func() bool { return polled() >= 30+290 })
		session.Close()
		checks, _ := judgePollTest(t, bootstrap, observations)
		backs := checks[0].Counts.NonMonotonicPolls
		if report && backs != 0 || !report && backs == 0 {
			t.Errorf("abort reported %v: %d moves back", report, backs)
		}
	}
}
