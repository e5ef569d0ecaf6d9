package clusternode

import (
	"fmt"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// series reads metric name of m now: its first series, or with labels
// ("name", "value" pairs) the first series carrying them (a gauge or a
// counter).
func series(t *testing.T, m *metrics.Broker, name string, labels ...string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, metric := range family.Metric {
			if hasLabels(metric, labels) {
				if metric.Gauge != nil {
					return metric.Gauge.GetValue()
				}
				return metric.Counter.GetValue()
			}
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return 0
}

// hasLabels reports whether metric carries every "name", "value" pair.
func hasLabels(metric *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		if !slices.ContainsFunc(metric.Label, func(pair *dto.LabelPair) bool {
			return pair.GetName() == labels[i] && pair.GetValue() == labels[i+1]
		}) {
			return false
		}
	}
	return true
}

// The metrics an on-call person pages on, through a follower's stop and
// return: the leader's under-replicated partitions go from 0 to the
// partitions it leads with that follower and back to 0, with an ISR
// shrink and an expand counted; under-min-ISR stays 0 (two of three
// remain, min.insync.replicas 2); one member is the active controller;
// leader and partition counts add up over the members.
func TestReplicationMetrics(t *testing.T) {
	t.Parallel()
	c := newTestClusterWith(t, 3, clusterProps, func(c *testCluster) {
		c.metrics = map[int32]*metrics.Broker{1: metrics.New(), 2: metrics.New(), 3: metrics.New()}
	})
	c.waitMetadata(3, "", 0)
	if _, err := c.anyMember().Node().CreateTopic(t.Context(), quorum.CreateTopicRequest{Name: "watched", Partitions: 3, ReplicationFactor: 3}); err != nil {
		t.Fatal(err)
	}
	img := c.waitImage("watched fully in sync", func(img *quorum.Image) bool { return fullISR(img, "watched") })
	leader, _ := img.Partition("watched", 0)
	var follower int32
	for _, id := range leader.Replicas {
		if id != leader.Leader {
			follower = id
			break
		}
	}
	m := c.metrics[leader.Leader]
	under := func() float64 { return series(t, m, "exactly_under_replicated_partitions") }
	testutil.Eventually(t, 20*time.Second, "no under-replicated partition before the stop", func() (bool, string) {
		return under() == 0, fmt.Sprintf("%v under-replicated", under())
	})
	testutil.Eventually(t, 20*time.Second, "one active controller, 3 leaders, 9 replicas over the members", func() (bool, string) {
		controllers, leaders, partitions := 0.0, 0.0, 0.0
		for id := int32(1); id <= 3; id++ {
			controllers += series(t, c.metrics[id], "exactly_active_controller")
			leaders += series(t, c.metrics[id], "exactly_leader_partitions")
			partitions += series(t, c.metrics[id], "exactly_partitions")
		}
		return controllers == 1 && leaders == 3 && partitions == 9,
			fmt.Sprintf("active controllers %v, leaders %v, replicas %v", controllers, leaders, partitions)
	})

	for id := int32(1); id <= 3; id++ {
		if applied := series(t, c.metrics[id], "exactly_quorum_index", "kind", "applied"); applied < 1 {
			t.Errorf("member %d: quorum applied index %v", id, applied)
		}
	}
	c.stop(follower)
	testutil.Eventually(t, 30*time.Second, "under-replicated partitions on the leader while a follower is stopped", func() (bool, string) {
		return under() >= 1, fmt.Sprintf("%v under-replicated", under())
	})
	if shrinks := series(t, m, "exactly_isr_shrinks_total"); shrinks < 1 {
		t.Errorf("%v ISR shrinks counted", shrinks)
	}
	if underMin := series(t, m, "exactly_under_min_isr_partitions"); underMin != 0 {
		t.Errorf("%v partitions under min ISR with two of three in sync", underMin)
	}
	c.start(follower)
	testutil.Eventually(t, 30*time.Second, "no under-replicated partition once the follower is back", func() (bool, string) {
		return under() == 0, fmt.Sprintf("%v under-replicated", under())
	})
	if expands := series(t, m, "exactly_isr_expands_total"); expands < 1 {
		t.Errorf("%v ISR expands counted", expands)
	}
}
