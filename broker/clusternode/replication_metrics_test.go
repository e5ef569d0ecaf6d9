package clusternode

import (
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// gauge reads one unlabelled metric of m (a gauge or counter) now.
func gauge(t *testing.T, m *metrics.Broker, name string) float64 {
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
			return value(metric)
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func value(metric *dto.Metric) float64 {
	if metric.Gauge != nil {
		return metric.Gauge.GetValue()
	}
	return metric.Counter.GetValue()
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
	under := func() float64 { return gauge(t, m, "exactly_under_replicated_partitions") }
	testutil.Eventually(t, 20*time.Second, "no under-replicated partition before the stop", func() (bool, string) {
		return under() == 0, fmt.Sprintf("%v under-replicated", under())
	})
	testutil.Eventually(t, 20*time.Second, "one active controller, 3 leaders, 9 replicas over the members", func() (bool, string) {
		controllers, leaders, partitions := 0.0, 0.0, 0.0
		for id := int32(1); id <= 3; id++ {
			controllers += gauge(t, c.metrics[id], "exactly_active_controller")
			leaders += gauge(t, c.metrics[id], "exactly_leader_partitions")
			partitions += gauge(t, c.metrics[id], "exactly_partitions")
		}
		return controllers == 1 && leaders == 3 && partitions == 9,
			fmt.Sprintf("active controllers %v, leaders %v, replicas %v", controllers, leaders, partitions)
	})

	for id := int32(1); id <= 3; id++ {
		if applied := labelled(t, c.metrics[id], "exactly_quorum_index", "applied"); applied < 1 {
			t.Errorf("member %d: quorum applied index %v", id, applied)
		}
	}
	c.stop(follower)
	testutil.Eventually(t, 30*time.Second, "under-replicated partitions on the leader while a follower is stopped", func() (bool, string) {
		return under() >= 1, fmt.Sprintf("%v under-replicated", under())
	})
	if shrinks := gauge(t, m, "exactly_isr_shrinks_total"); shrinks < 1 {
		t.Errorf("%v ISR shrinks counted", shrinks)
	}
	if underMin := gauge(t, m, "exactly_under_min_isr_partitions"); underMin != 0 {
		t.Errorf("%v partitions under min ISR with two of three in sync", underMin)
	}
	c.start(follower)
	testutil.Eventually(t, 30*time.Second, "no under-replicated partition once the follower is back", func() (bool, string) {
		return under() == 0, fmt.Sprintf("%v under-replicated", under())
	})
	if expands := gauge(t, m, "exactly_isr_expands_total"); expands < 1 {
		t.Errorf("%v ISR expands counted", expands)
	}
}

// labelled reads the series of metric name whose kind label is kind.
func labelled(t *testing.T, m *metrics.Broker, name, kind string) float64 {
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
			for _, pair := range metric.Label {
				if pair.GetName() == "kind" && pair.GetValue() == kind {
					return value(metric)
				}
			}
		}
	}
	t.Fatalf("no %s{kind=%q}", name, kind)
	return 0
}
