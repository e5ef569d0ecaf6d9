package loadgen

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// TestDescribeTargetReadsBrokerSettings: the broker settings in the
// results come from the broker (a non-default log.fsync is reported as
// set), an embedded broker shares the machine, and a setting the broker
// does not have is "unknown".
func TestDescribeTargetReadsBrokerSettings(t *testing.T) {
	t.Parallel()
	target, err := startEmbeddedWith(t.Context(), t.TempDir(), map[string]string{"log.fsync": "interval:50ms"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Close() })
	admin, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	described := report.Target{Kind: target.Kind(), Bootstrap: target.Bootstrap()}
	describeTarget(t.Context(), admin, target.Kind(), &described)
	t.Logf("broker settings %v; sharing: %s", described.BrokerSettings, described.Sharing)
	if got := described.BrokerSettings["log.fsync"]; got != "interval:50ms" {
		t.Errorf("log.fsync = %q, want interval:50ms (set, not default)", got)
	}
	if got := described.BrokerSettings["log.flush.interval.ms"]; got != unknownSetting {
		t.Errorf("log.flush.interval.ms = %q, want %q: our broker has no such setting", got, unknownSetting)
	}
	if described.SharesMachine == nil || !*described.SharesMachine || !strings.Contains(described.Sharing, "share") {
		t.Errorf("embedded target: shares machine %v (%s), want true", described.SharesMachine, described.Sharing)
	}
}

func TestSharesMachine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind      string
		bootstrap []string
		want      string // "yes", "unknown"
	}{
		{TargetEmbedded, []string{"127.0.0.1:9092"}, "yes"},
		{TargetKfake, []string{"127.0.0.1:1"}, "yes"},
		{TargetBootstrap, []string{"127.0.0.1:9092", "[::1]:9093", "localhost:9094"}, "yes"},
		{TargetBootstrap, []string{"127.0.0.1:9092", "10.0.0.7:9092"}, "unknown"},
		{TargetBootstrap, []string{"kafka-1.example:9092"}, "unknown"},
	}
	for _, test := range cases {
		shared, why := sharesMachine(test.kind, test.bootstrap)
		got := "unknown"
		if shared != nil && *shared {
			got = "yes"
		}
		if got != test.want || why == "" {
			t.Errorf("sharesMachine(%s, %v) = %s (%q), want %s", test.kind, test.bootstrap, got, why, test.want)
		}
	}
}
