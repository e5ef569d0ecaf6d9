package loadgen

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// shareKfake is an in-process kfake cluster that serves share groups,
// with a short acquisition lock and a quick sweep of expired locks.
func shareKfake(t *testing.T) Target {
	return newKfakeTarget(t, kfake.BrokerConfigs(map[string]string{
		"group.share.record.lock.duration.ms": "5000",
		"share.record.lock.sweep.interval.ms": "500",
	}))
}

// shareWorkload is a few seconds of share-group load: 3 consumers, one
// record in 200 released on its first delivery.
func shareWorkload(t *testing.T, entries ...MatrixEntry) Workload {
	t.Helper()
	workload := matrixWorkload(t, entries...)
	workload.Modes = []string{modes.ShareGroup}
	workload.Pipeline.Workers = 3
	workload.Application.ShareReleaseEvery = 200
	if err := workload.Validate(); err != nil {
		t.Fatal(err)
	}
	return workload
}

func shareRun(t *testing.T, results *report.Results, name string) *report.Run {
	t.Helper()
	run := runsByName(results)[name]
	if run == nil {
		t.Fatalf("no run %s in %v", name, runsByName(results))
	}
	t.Logf("%s: %s %s; %s; errors %v", run.Name, run.Status, run.Reason, run.Expectation.Observed, run.ErrorsByCode)
	if run.Expectation != nil && len(run.Expectation.Offenders) > 0 {
		t.Logf("offenders: %v", run.Expectation.Offenders)
	}
	if run.ShareGroup == nil {
		t.Fatalf("%s: no share-group figures", name)
	}
	return run
}

// The mode against kfake without faults: every acknowledged record
// accepted once, none lost, the records we released delivered again.
func TestShareGroupAgainstKfake(t *testing.T) {
	t.Parallel()
	workload := shareWorkload(t, MatrixEntry{Plan: "none"})
	results := runSuite(t, shareKfake(t), workload)
	run := shareRun(t, results, modes.ShareGroup+":none")
	share := run.ShareGroup
	if run.Status != report.StatusPass || share.Lost != 0 || share.DuplicateAccepted != 0 || share.AboveLimit != 0 ||
		share.ByRelease == 0 || share.Released == 0 || share.Accepted != run.Producers.Acknowledged || share.MaxDeliveryCount < 2 {
		t.Errorf("share-group: %s (%s): %s", run.Status, run.Reason, share.Describe())
	}
	if run.Throughput.RecordsPerSecond <= 0 || run.Latency[report.LatencyEndToEnd] == nil {
		t.Errorf("share-group measured no throughput or end-to-end latency: %+v", run.Throughput)
	}
}

// consumer-crash kills a share consumer between its poll and its
// acknowledgements: the records it held come again, to the others, and
// the check puts those redeliveries down to the crash.
func TestShareGroupConsumerCrashAgainstKfake(t *testing.T) {
	t.Parallel()
	workload := shareWorkload(t, MatrixEntry{Plan: "consumer-crash", Duration: Duration(5 * time.Second)})
	results := runSuite(t, shareKfake(t), workload)
	run := shareRun(t, results, modes.ShareGroup+":consumer-crash")
	share := run.ShareGroup
	if run.Status != report.StatusPass || share.Lost != 0 || share.DuplicateAccepted != 0 || share.ByCrash == 0 ||
		run.FaultEvents[0].Kind != string(faults.KindConsumerCrash) {
		t.Errorf("share-group under consumer-crash: %s (%s): %s, events %+v", run.Status, run.Reason, share.Describe(), run.FaultEvents)
	}
	if !strings.Contains(run.Expectation.Observed, "crash ") {
		t.Errorf("the matrix row does not show the crash's redeliveries: %s", run.Expectation.Observed)
	}
}

// A target without the share APIs makes the mode's cells not
// applicable, with the reason in one line.
func TestShareSupport(t *testing.T) {
	t.Parallel()
	key := func(api kmsg.Key, version int16) kmsg.ApiVersionsResponseApiKey {
		return kmsg.ApiVersionsResponseApiKey{ApiKey: int16(api), MaxVersion: version}
	}
	full := []kmsg.ApiVersionsResponseApiKey{key(kmsg.ShareGroupHeartbeat, 1), key(kmsg.ShareFetch, 2), key(kmsg.ShareAcknowledge, 2)}
	if reason := shareSupport(full); reason != "" {
		t.Errorf("full support: %q", reason)
	}
	want := "not-applicable (the target does not serve share groups: no ShareFetch v2 or ShareAcknowledge v2 in its ApiVersions)"
	if reason := shareSupport([]kmsg.ApiVersionsResponseApiKey{key(kmsg.ShareGroupHeartbeat, 1), key(kmsg.ShareFetch, 1)}); reason != want {
		t.Errorf("without v2:\n got %q\nwant %q", reason, want)
	}
}

// group-churn takes a share consumer out of the group holding its last
// poll and lets another join: its client hands the records back, and
// they come again, put down to the churn.
func TestShareGroupChurnAgainstKfake(t *testing.T) {
	t.Parallel()
	workload := shareWorkload(t, MatrixEntry{Plan: "group-churn", Duration: Duration(6 * time.Second)})
	results := runSuite(t, shareKfake(t), workload)
	run := shareRun(t, results, modes.ShareGroup+":group-churn")
	share := run.ShareGroup
	if run.Status != report.StatusPass || share.Lost != 0 || share.DuplicateAccepted != 0 || share.ByChurn == 0 {
		t.Errorf("share-group under group-churn: %s (%s): %s, events %+v", run.Status, run.Reason, share.Describe(), run.FaultEvents)
	}
}

// The mode against the embedded broker, under no fault, consumer-crash
// and group-churn: every acknowledged record accepted once, none lost,
// and each fault's redeliveries put down to it.
func TestShareGroupAgainstEmbeddedBroker(t *testing.T) {
	t.Parallel()
	workload := shareWorkload(t,
		MatrixEntry{Plan: "none"},
		MatrixEntry{Plan: "consumer-crash", Duration: Duration(5 * time.Second)},
		MatrixEntry{Plan: "group-churn", Duration: Duration(6 * time.Second)})
	properties := LaunchedBrokerProperties(workload)
	properties["group.initial.rebalance.delay.ms"] = "0"
	target, err := startEmbeddedWith(t.Context(), t.TempDir(), properties)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Close() })
	results := runSuite(t, target, workload)
	for _, plan := range []string{"none", "consumer-crash", "group-churn"} {
		run := shareRun(t, results, modes.ShareGroup+":"+plan)
		share := run.ShareGroup
		if run.Status != report.StatusPass || share.Lost != 0 || share.DuplicateAccepted != 0 || share.AboveLimit != 0 ||
			share.Accepted != run.Producers.Acknowledged || share.ByRelease == 0 {
			t.Errorf("share-group under %s: %s (%s): %s", plan, run.Status, run.Reason, share.Describe())
		}
		switch plan {
		case "consumer-crash":
			if share.ByCrash == 0 {
				t.Errorf("consumer-crash caused no redelivery: %s", share.Describe())
			}
		case "group-churn":
			if share.ByChurn == 0 {
				t.Errorf("group-churn caused no redelivery: %s", share.Describe())
			}
		}
	}
}
