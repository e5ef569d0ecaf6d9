package quorum

import (
	"errors"
	"slices"
	"testing"
)

func partitionOf(t *testing.T, m *machine, topic string, index int32) Partition {
	t.Helper()
	p, ok := m.img.Partition(topic, index)
	if !ok {
		t.Fatalf("%s-%d missing", topic, index)
	}
	return p
}

func TestReassignmentCompletesWhenTargetInSync(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3, 4)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 3})
	before := partitionOf(t, m, "t", 0)
	if !slices.Equal(before.Replicas, []int32{1, 2, 3}) || before.Leader != 1 {
		t.Fatalf("created as %+v", before)
	}
	p := *m.must(alterReassignmentCmd{Topic: "t", Partition: 0, Target: []int32{2, 3, 4}}).partition
	if !slices.Equal(p.Replicas, []int32{2, 3, 4, 1}) || !slices.Equal(p.AddingReplicas, []int32{4}) ||
		!slices.Equal(p.RemovingReplicas, []int32{1}) || p.Leader != 1 || !slices.Equal(p.ISR, []int32{2, 3, 1}) {
		t.Fatalf("in progress: %+v", p)
	}
	if p.PartitionEpoch != before.PartitionEpoch+1 || p.LeaderEpoch != before.LeaderEpoch {
		t.Fatalf("epochs in progress: %+v, before %+v", p, before)
	}
	// The same target again changes nothing.
	idx := m.img.Index()
	m.must(alterReassignmentCmd{Topic: "t", Partition: 0, Target: []int32{2, 3, 4}})
	if m.img.Index() != idx {
		t.Fatal("repeating the reassignment changed the image")
	}
	// The leader adds the new replica to the ISR: the reassignment
	// completes, the removed replica (the leader) leaves, 2 leads.
	done := *m.must(alterPartitionCmd{Topic: "t", Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1, 2, 3, 4}}).partition
	if !slices.Equal(done.Replicas, []int32{2, 3, 4}) || !slices.Equal(done.ISR, []int32{2, 3, 4}) || done.Reassigning() ||
		done.Leader != 2 || done.LeaderEpoch != p.LeaderEpoch+1 {
		t.Fatalf("completed: %+v", done)
	}
}

func TestReassignmentKeepsLeaderInTarget(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3, 4)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 2})
	p := *m.must(alterReassignmentCmd{Topic: "t", Partition: 0, Target: []int32{1, 4}}).partition
	done := *m.must(alterPartitionCmd{Topic: "t", Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1, 2, 4}}).partition
	if !slices.Equal(done.Replicas, []int32{1, 4}) || done.Leader != 1 || done.LeaderEpoch != p.LeaderEpoch {
		t.Fatalf("completed: %+v (from %+v)", done, p)
	}
	// A reorder needs no copy: it completes at once, and the preferred
	// replica is then elected on request.
	re := *m.must(alterReassignmentCmd{Topic: "t", Partition: 0, Target: []int32{4, 1}}).partition
	if !slices.Equal(re.Replicas, []int32{4, 1}) || re.Reassigning() || re.Leader != 1 {
		t.Fatalf("reorder: %+v", re)
	}
	elected := *m.must(electLeaderCmd{Topic: "t", Partition: 0}).partition
	if elected.Leader != 4 || elected.LeaderEpoch != re.LeaderEpoch+1 {
		t.Fatalf("preferred election: %+v", elected)
	}
	if res := m.apply(electLeaderCmd{Topic: "t", Partition: 0}); !errors.Is(res.err, ErrElectionNotNeeded) {
		t.Fatalf("second election: %v", res.err)
	}
}

func TestReassignmentCancel(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3, 4, 5)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 3})
	if res := m.apply(alterReassignmentCmd{Topic: "t", Partition: 0, Cancel: true}); !errors.Is(res.err, ErrNoReassignmentInProgress) {
		t.Fatalf("cancel without a reassignment: %v", res.err)
	}
	p := *m.must(alterReassignmentCmd{Topic: "t", Partition: 0, Target: []int32{4, 5, 1}}).partition
	// 4 joins the ISR; 5 has not yet: still in progress.
	p = *m.must(alterPartitionCmd{Topic: "t", Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1, 2, 3, 4}}).partition
	if !p.Reassigning() || !slices.Equal(p.ISR, []int32{4, 1, 2, 3}) {
		t.Fatalf("half way: %+v", p)
	}
	// A new target starts from the original replicas again.
	q := *m.must(alterReassignmentCmd{Topic: "t", Partition: 0, Target: []int32{1, 2, 5}}).partition
	if !slices.Equal(q.Replicas, []int32{1, 2, 5, 3}) || !slices.Equal(q.AddingReplicas, []int32{5}) ||
		!slices.Equal(q.RemovingReplicas, []int32{3}) || slices.Contains(q.ISR, 4) {
		t.Fatalf("replaced: %+v", q)
	}
	c := *m.must(alterReassignmentCmd{Topic: "t", Partition: 0, Cancel: true}).partition
	if !slices.Equal(c.Replicas, []int32{1, 2, 3}) || c.Reassigning() || !slices.Equal(c.ISR, []int32{1, 2, 3}) || c.Leader != 1 {
		t.Fatalf("cancelled: %+v", c)
	}
}

func TestReassignmentRefusesBadTargets(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 2})
	for _, target := range [][]int32{{}, {1, 1}, {1, 9}} {
		if res := m.apply(alterReassignmentCmd{Topic: "t", Partition: 0, Target: target}); !errors.Is(res.err, ErrInvalidReplicaAssignment) {
			t.Errorf("target %v: %v", target, res.err)
		}
	}
	if res := m.apply(alterReassignmentCmd{Topic: "t", Partition: 3, Target: []int32{1}}); !errors.Is(res.err, ErrUnknownTopicOrPartition) {
		t.Errorf("missing partition: %v", res.err)
	}
}

func TestElectPreferredAndUnclean(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 3, ReplicationFactor: 3})
	m.fence(1)
	// Broker 1 is fenced: partitions preferring it are led elsewhere and
	// it cannot be elected.
	var prefers1 int32 = -1
	for _, p := range m.img.Partitions() {
		if p.Replicas[0] == 1 {
			prefers1 = p.Partition
		}
	}
	if res := m.apply(electLeaderCmd{Topic: "t", Partition: prefers1}); !errors.Is(res.err, ErrPreferredLeaderNotAvailable) {
		t.Fatalf("fenced preferred: %v", res.err)
	}
	if got := m.img.Imbalanced(10); len(got) != 0 {
		t.Fatalf("imbalanced with the preferred fenced: %v", got)
	}
	m.unfence(1)
	// Unfenced but not yet back in the ISR: still not electable.
	if got := m.img.Imbalanced(10); len(got) != 0 {
		t.Fatalf("imbalanced with the preferred out of sync: %v", got)
	}
	p := partitionOf(t, m, "t", prefers1)
	m.must(alterPartitionCmd{Topic: "t", Partition: prefers1, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1, 2, 3}})
	got := m.img.Imbalanced(10)
	if len(got) != 1 || got[0].Partition != prefers1 {
		t.Fatalf("imbalanced: %v", got)
	}
	if got := m.img.Imbalanced(100); len(got) != 0 {
		t.Fatalf("imbalanced at 100%%: %v", got)
	}
	if e := *m.must(electLeaderCmd{Topic: "t", Partition: prefers1}).partition; e.Leader != 1 {
		t.Fatalf("elected %+v", e)
	}
	// Unclean: only for a leaderless partition, from any live replica.
	if res := m.apply(electLeaderCmd{Topic: "t", Partition: 0, Unclean: true}); !errors.Is(res.err, ErrElectionNotNeeded) {
		t.Fatalf("unclean with a leader: %v", res.err)
	}
	m.must(createTopicCmd{Name: "u", ID: [16]byte{2}, Partitions: 1, ReplicationFactor: 2})
	u := partitionOf(t, m, "u", 0)
	m.fence(u.Replicas[1])
	m.fence(u.Replicas[0])
	if res := m.apply(electLeaderCmd{Topic: "u", Partition: 0, Unclean: true}); !errors.Is(res.err, ErrEligibleLeadersNotAvailable) {
		t.Fatalf("unclean with every replica fenced: %v", res.err)
	}
	m.unfence(u.Replicas[1]) // out of the ISR: a clean election cannot pick it
	if lp := partitionOf(t, m, "u", 0); lp.Leader != -1 {
		t.Fatalf("leader %d before the unclean election", lp.Leader)
	}
	e := *m.must(electLeaderCmd{Topic: "u", Partition: 0, Unclean: true}).partition
	if e.Leader != u.Replicas[1] || !slices.Equal(e.ISR, []int32{u.Replicas[1]}) {
		t.Fatalf("unclean election: %+v", e)
	}
}

func TestReassignmentSurvivesSnapshot(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3, 4)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 2, ReplicationFactor: 3})
	m.must(alterReassignmentCmd{Topic: "t", Partition: 1, Target: []int32{4, 3, 1}}) // from 2, 3, 4
	f := newFSM(nil)
	f.image.Store(m.img)
	g := snapshotRoundTrip(t, f)
	p, _ := g.current().Partition("t", 1)
	if !p.Reassigning() || !slices.Equal(p.AddingReplicas, []int32{1}) || !slices.Equal(p.RemovingReplicas, []int32{2}) {
		t.Fatalf("restored: %+v", p)
	}
}
