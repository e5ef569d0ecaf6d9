package loadgen

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// eos-pipeline and consumer-dedup under consumer-crash on the consumer
// protocol, on our broker started as the loadgen starts it for such a
// workload: a SIGKILLed worker's partitions move on after the classic
// workers' 6 s session, within the drain, so every input record arrives
// once downstream.
func TestConsumerCrashConsumerProtocolAgainstEmbeddedBroker(t *testing.T) {
	t.Parallel()
	workload := matrixWorkload(t, MatrixEntry{Plan: "consumer-crash", Modes: []string{ModeEOSPipeline, ModeConsumerDedup},
		Duration: Duration(4 * time.Second)}) // the crash is at 3 s

	workload.GroupProtocol = GroupProtocolConsumer
	properties := map[string]string{"group.initial.rebalance.delay.ms": "0"}
	maps.Copy(properties, LaunchedBrokerProperties(workload))
	target, err := startEmbeddedWith(t.Context(), t.TempDir(), properties)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Close() })
	results := runMatrix(t, target, workload)
	logMatrix(t, results)
	if len(results.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(results.Runs))
	}
	for _, run := range results.Runs {
		seen := observe(run)
		if run.Status != report.StatusPass || seen.lost != 0 || seen.duplicated != 0 || run.FaultsFired == 0 {
			t.Errorf("%s: %s (%s): lost %d, duplicated %d, faults %d", run.Name, run.Status, run.Reason, seen.lost, seen.duplicated, run.FaultsFired)
		}
		if session := run.ClientSettings[consumerSessionName]; !strings.HasPrefix(session, "6000 ") {
			t.Errorf("%s: %s = %q, want the embedded broker's 6000", run.Name, consumerSessionName, session)
		}
	}
}

// A consumer-crash cell on the consumer protocol drains for at least the
// broker's session plus the margin; other cells keep their drain.
func TestFitCrashDrains(t *testing.T) {
	t.Parallel()
	workload := matrixWorkload(t, MatrixEntry{Plan: "consumer-crash", Modes: []string{ModeEOSPipeline, ModeAtLeastOnce}},
		MatrixEntry{Plan: "none", Modes: []string{ModeEOSPipeline}})
	drain := time.Duration(workload.Drain)
	for _, test := range []struct {
		protocol  string
		session   time.Duration
		known     bool
		wantDrain time.Duration // of eos-pipeline:consumer-crash
		wantNote  string
	}{
		{GroupProtocolConsumer, 45 * time.Second, false, 60 * time.Second, "45s (the broker did not describe group.consumer.session.timeout.ms; Kafka's default)"},
		{GroupProtocolConsumer, 90 * time.Second, true, 105 * time.Second, "1m30s (the broker's group.consumer.session.timeout.ms), so those cells drain for 1m45s"},
		{GroupProtocolConsumer, time.Second, true, drain, "1s (the broker's"},
		{GroupProtocolClassic, 45 * time.Second, true, drain, ""},
	} {
		workload.GroupProtocol = test.protocol
		plans, err := planRuns(workload, 0xabc, nil)
		if err != nil {
			t.Fatal(err)
		}
		note := fitCrashDrains(plans, test.session, test.known)
		if test.wantNote == "" && note != "" || !strings.Contains(note, test.wantNote) {
			t.Errorf("%s, session %s: note %q, want it to say %q", test.protocol, test.session, note, test.wantNote)
		}
		for _, plan := range plans {
			want := drain
			if plan.name == "eos-pipeline:consumer-crash/consumer" || plan.name == "eos-pipeline:consumer-crash" {
				want = test.wantDrain
			}
			if got := time.Duration(plan.workload.Drain); got != want {
				t.Errorf("%s, session %s: %s drains for %s, want %s", test.protocol, test.session, plan.name, got, want)
			}
		}
	}
}

// The session is read from the broker's DescribeConfigs answer; without
// it, Kafka's default.
func TestDescribedSession(t *testing.T) {
	t.Parallel()
	answer := func(errorCode int16, value *string) *kmsg.DescribeConfigsResponse {
		response := kmsg.NewPtrDescribeConfigsResponse()
		resource := kmsg.NewDescribeConfigsResponseResource()
		resource.ErrorCode = errorCode
		config := kmsg.NewDescribeConfigsResponseResourceConfig()
		config.Name, config.Value = consumerSessionName, value
		resource.Configs = append(resource.Configs, config)
		response.Resources = append(response.Resources, resource)
		return response
	}
	for _, test := range []struct {
		response *kmsg.DescribeConfigsResponse
		want     time.Duration
		known    bool
	}{
		{answer(0, kmsg.StringPtr("6000")), 6 * time.Second, true},
		{answer(0, kmsg.StringPtr("not a number")), kafkaConsumerSessionTimeout, false},
		{answer(0, nil), kafkaConsumerSessionTimeout, false},
		{answer(2, kmsg.StringPtr("6000")), kafkaConsumerSessionTimeout, false},
		{kmsg.NewPtrDescribeConfigsResponse(), kafkaConsumerSessionTimeout, false},
	} {
		if got, known := describedSession(test.response, consumerSessionName); got != test.want || known != test.known {
			t.Errorf("%+v: %s %v, want %s %v", test.response.Resources, got, known, test.want, test.known)
		}
	}
}

// The embedded broker gets the crash workers' session only for a
// workload that runs consumer-crash on the consumer protocol.
func TestLaunchedBrokerProperties(t *testing.T) {
	t.Parallel()
	crash := matrixWorkload(t, MatrixEntry{Plan: "consumer-crash", Modes: []string{ModeEOSPipeline}})
	if got := LaunchedBrokerProperties(crash); got != nil {
		t.Errorf("classic: %v, want none", got)
	}
	crash.GroupProtocol = GroupProtocolConsumer
	if got := LaunchedBrokerProperties(crash); got[consumerSessionName] != "6000" || got["group.consumer.heartbeat.interval.ms"] != "500" {
		t.Errorf("consumer: %v, want the session 6000 and the heartbeat 500", got)
	}
	churn := matrixWorkload(t, MatrixEntry{Plan: "group-churn", Modes: []string{ModeEOSPipeline}})
	churn.GroupProtocol = GroupProtocolConsumer
	if got := LaunchedBrokerProperties(churn); got != nil {
		t.Errorf("group-churn: %v, want none (Kafka's defaults)", got)
	}
	// Share groups' session is the broker's too, also when consumer-crash
	// is one of the cost rounds' plans rather than the matrix's.
	queues := matrixWorkload(t, MatrixEntry{Plan: "none"})
	queues.Modes = []string{modes.ShareGroup}
	queues.Overhead = &OverheadSpec{Faults: []MatrixEntry{{Plan: "consumer-crash"}}}
	if got := LaunchedBrokerProperties(queues); got[shareSessionName] != "6000" || got["group.share.heartbeat.interval.ms"] != "500" || got[consumerSessionName] != "" {
		t.Errorf("share-group: %v, want the share session 6000 and heartbeat 500 only", got)
	}
}
