package loadgen

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataOf builds a Metadata response for topic t whose partitions have
// the given leaders and replicas.
func metadataOf(leaders []int32, replicas [][]int32) *kmsg.MetadataResponse {
	response := kmsg.NewPtrMetadataResponse()
	topic := kmsg.NewMetadataResponseTopic()
	topic.Topic = kmsg.StringPtr("t")
	for i, leader := range leaders {
		partition := kmsg.NewMetadataResponseTopicPartition()
		partition.Partition, partition.Leader, partition.Replicas = int32(i), leader, replicas[i]
		topic.Partitions = append(topic.Partitions, partition)
	}
	response.Topics = append(response.Topics, topic)
	return response
}

// TestBrokerSelection: leader-kill, leader-pause and broker-partition act
// on the broker leading the most partitions of the run's topic;
// slow-follower on the replica holder leading the fewest (a follower of
// most), a holder that leads none included; ties go to the lowest node id.
func TestBrokerSelection(t *testing.T) {
	t.Parallel()
	all := []int32{1, 2, 3}
	for _, c := range []struct {
		name          string
		leaders       []int32
		replicas      [][]int32
		top, follower int32
	}{
		{"spread", []int32{1, 2, 2, 3, 3, 3}, [][]int32{all, all, all, all, all, all}, 3, 1},
		{"one leads none", []int32{2, 3, 2, 3}, [][]int32{all, all, all, all}, 2, 1},
		{"tie", []int32{3, 2, 1}, [][]int32{all, all, all}, 1, 1},
		{"leaderless partition", []int32{-1, 2, 2}, [][]int32{all, all, all}, 2, 1},
		{"replicas on two brokers", []int32{3, 3, 2}, [][]int32{{2, 3}, {2, 3}, {2, 3}}, 3, 2},
	} {
		response := metadataOf(c.leaders, c.replicas)
		top, err := topLeader(response, "t")
		if err != nil || top != c.top {
			t.Errorf("%s: topLeader = %d, %v; want %d", c.name, top, err, c.top)
		}
		follower, err := leastLeader(response, "t")
		if err != nil || follower != c.follower {
			t.Errorf("%s: leastLeader = %d, %v; want %d", c.name, follower, err, c.follower)
		}
	}
	if _, err := leastLeader(metadataOf(nil, nil), "t"); err == nil {
		t.Error("leastLeader of a topic without partitions succeeded")
	}
}

// TestLeaderless: a fault selects its broker only once Metadata lists the
// topic's partitions, each with a leader.
func TestLeaderless(t *testing.T) {
	t.Parallel()
	all := []int32{1, 2, 3}
	if err := leaderless(metadataOf([]int32{1, 2, 3}, [][]int32{all, all, all}), "t"); err != nil {
		t.Errorf("every partition led: %v", err)
	}
	if err := leaderless(metadataOf([]int32{1, -1, 3}, [][]int32{all, all, all}), "t"); err == nil || !strings.Contains(err.Error(), "t/1 has no leader") {
		t.Errorf("partition 1 without a leader: %v", err)
	}
	if err := leaderless(metadataOf(nil, nil), "t"); err == nil {
		t.Error("a topic without partitions counted as settled")
	}
}

// TestNeedsPartitionProxies: a cluster target starts behind partition
// proxies when the matrix has a plan that cuts a broker off or slows one.
func TestNeedsPartitionProxies(t *testing.T) {
	t.Parallel()
	for plans, want := range map[string]bool{"leader-kill": false, "broker-partition": true, "slow-follower": true, "none,ack-loss": false,
		"ack-loss,slow-follower": true} {
		var entries []MatrixEntry
		for _, plan := range strings.Split(plans, ",") {
			entries = append(entries, MatrixEntry{Plan: plan, Modes: []string{ModeIdempotent}})
		}
		if got := NeedsPartitionProxies(Workload{Faults: entries}); got != want {
			t.Errorf("%s: NeedsPartitionProxies = %v, want %v", plans, got, want)
		}
	}
}
