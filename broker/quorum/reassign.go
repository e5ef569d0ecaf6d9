package quorum

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Reassignment and leader election, with Kafka's semantics
// (KIP-455 AlterPartitionReassignments, KIP-460 ElectLeaders).
//
// A reassignment of a partition to the target replica set T, from the
// original set O, sets
//
//	Replicas         = T followed by O \ T
//	AddingReplicas   = T \ O
//	RemovingReplicas = O \ T
//
// so the new replicas start fetching from the leader while the old ones
// still serve. The leader adds a new replica to the ISR (AlterPartition)
// once it has caught up; when every member of T is in the ISR the
// reassignment completes in the same command: Replicas = T, the ISR keeps
// its members of T, and if the leader is not in T the first in-sync
// member of T leads (leader epoch +1). A replica therefore leaves only
// after its replacements are in sync: acks=all and min.insync.replicas
// hold throughout. A second reassignment of a partition in progress
// starts from O again; cancelling one (a nil target) returns to O,
// dropping the adding replicas from the ISR.

// alterReassignmentCmd starts or replaces (Target) or cancels (Cancel)
// the reassignment of one partition.
type alterReassignmentCmd struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Target    []int32 `json:"target,omitempty"`
	Cancel    bool    `json:"cancel,omitempty"`
}

// electLeaderCmd elects a partition's leader: the preferred replica
// (Replicas[0], when it is in the ISR and unfenced), or with Unclean a
// live replica outside the ISR when the partition has no leader.
type electLeaderCmd struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Unclean   bool   `json:"unclean,omitempty"`
}

// ReassignmentRequest is one partition's AlterPartitionReassignments
// entry: Target nil cancels.
type ReassignmentRequest struct {
	Topic     string
	Partition int32
	Target    []int32
}

// AlterReassignment starts (or, with a nil target, cancels) the
// reassignment of one partition and returns its new state. It fails with
// ErrUnknownTopicOrPartition, ErrInvalidReplicaAssignment (duplicates, an
// unregistered broker, an empty target) or ErrNoReassignmentInProgress.
func (n *Node) AlterReassignment(ctx context.Context, topic string, partition int32, target []int32) (Partition, error) {
	cmd := alterReassignmentCmd{Topic: topic, Partition: partition, Target: target, Cancel: target == nil}
	resp, err := n.submit(ctx, rpcRequest{Op: opAlterReassignment, AlterReassignment: &cmd})
	if err != nil {
		return Partition{}, err
	}
	return *resp.Partition, nil
}

// ElectLeader elects the preferred leader of a partition (or, unclean,
// any live replica of a leaderless one). It fails with
// ErrElectionNotNeeded when the partition already has that leader (or, unclean, any), and
// with ErrPreferredLeaderNotAvailable / ErrEligibleLeadersNotAvailable.
func (n *Node) ElectLeader(ctx context.Context, topic string, partition int32, unclean bool) (Partition, error) {
	cmd := electLeaderCmd{Topic: topic, Partition: partition, Unclean: unclean}
	resp, err := n.submit(ctx, rpcRequest{Op: opElectLeader, ElectLeader: &cmd})
	if err != nil {
		return Partition{}, err
	}
	return *resp.Partition, nil
}

// Reassigning reports whether a reassignment of p is in progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas is the replica set p is being reassigned to (its
// replicas when no reassignment is in progress).
func (p Partition) TargetReplicas() []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.RemovingReplicas, r) })
}

// originalReplicas is what p had before the reassignment in progress.
func (p Partition) originalReplicas() []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.AddingReplicas, r) })
}

func lookupPartition(img *Image, topic string, partition int32) (Partition, error) {
	t, ok := img.topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return Partition{}, fmt.Errorf("%w: %s-%d", ErrUnknownTopicOrPartition, topic, partition)
	}
	return t.Partitions[partition].clone(), nil
}

func storePartition(next *Image, p Partition) applyResult {
	next.mutableTopic(p.Topic).Partitions[p.Partition] = p
	out := p.clone()
	return applyResult{partition: &out}
}

func applyAlterReassignment(next *Image, c alterReassignmentCmd) (bool, applyResult) {
	p, err := lookupPartition(next, c.Topic, c.Partition)
	if err != nil {
		return false, applyResult{err: fmt.Errorf("reassign: %w", err)}
	}
	name := fmt.Sprintf("%s-%d", c.Topic, c.Partition)
	if c.Cancel {
		if !p.Reassigning() {
			return false, applyResult{err: fmt.Errorf("%w: %s", ErrNoReassignmentInProgress, name)}
		}
		reverted, err := revertReassignment(next, p)
		if err != nil {
			return false, applyResult{err: fmt.Errorf("cancel reassignment of %s: %w", name, err)}
		}
		return true, storePartition(next, reverted)
	}
	if len(c.Target) == 0 {
		return false, applyResult{err: fmt.Errorf("%w: %s: empty target", ErrInvalidReplicaAssignment, name)}
	}
	for i, r := range c.Target {
		if slices.Contains(c.Target[:i], r) {
			return false, applyResult{err: fmt.Errorf("%w: %s: broker %d twice in %v", ErrInvalidReplicaAssignment, name, r, c.Target)}
		}
		if _, ok := next.brokers[r]; !ok {
			return false, applyResult{err: fmt.Errorf("%w: %s: broker %d is not registered", ErrInvalidReplicaAssignment, name, r)}
		}
	}
	base := p
	if p.Reassigning() {
		if slices.Equal(p.TargetReplicas(), c.Target) {
			out := p.clone()
			return false, applyResult{partition: &out} // the same reassignment again
		}
		if base, err = revertReassignment(next, p); err != nil {
			return false, applyResult{err: fmt.Errorf("replace reassignment of %s: %w", name, err)}
		}
	}
	if slices.Equal(base.Replicas, c.Target) && !p.Reassigning() {
		out := p.clone()
		return false, applyResult{partition: &out} // nothing to move
	}
	original := base.Replicas
	q := base.clone()
	q.Replicas = slices.Clone(c.Target)
	for _, r := range original {
		if !slices.Contains(c.Target, r) {
			q.Replicas = append(q.Replicas, r)
			q.RemovingReplicas = append(q.RemovingReplicas, r)
		}
	}
	for _, r := range c.Target {
		if !slices.Contains(original, r) {
			q.AddingReplicas = append(q.AddingReplicas, r)
		}
	}
	q.ISR = inOrder(q.Replicas, q.ISR)
	q.PartitionEpoch = p.PartitionEpoch + 1
	if p.LeaderEpoch > q.LeaderEpoch {
		q.LeaderEpoch = p.LeaderEpoch
	}
	q = completeReassignment(next, q, p)
	return true, storePartition(next, q)
}

// revertReassignment returns p as it was before its reassignment: the
// adding replicas leave the replicas and the ISR, and if one of them led,
// the first in-sync unfenced original replica leads. It fails when no
// original replica is in the ISR (cancelling would leave no copy in sync).
func revertReassignment(img *Image, p Partition) (Partition, error) {
	q := p.clone()
	q.Replicas = p.originalReplicas()
	q.ISR = inOrder(q.Replicas, p.ISR)
	q.AddingReplicas, q.RemovingReplicas = nil, nil
	if len(q.ISR) == 0 {
		return Partition{}, fmt.Errorf("%w: none of the original replicas %v is in the ISR %v", ErrInvalidReplicaAssignment, q.Replicas, p.ISR)
	}
	q.PartitionEpoch++
	if !slices.Contains(q.ISR, q.Leader) {
		q.Leader = chooseLeader(img, q)
		q.LeaderEpoch++
		if q.Leader < 0 {
			q.ISR = q.ISR[:1] // every remaining member is fenced: keep the first, as fencing does
		}
	}
	return q, nil
}

// completeReassignment finishes p's reassignment if every target replica
// is in the ISR (prev is the state before the command, for the epochs).
func completeReassignment(img *Image, p, prev Partition) Partition {
	if !p.Reassigning() {
		return p
	}
	target := p.TargetReplicas()
	for _, r := range target {
		if !slices.Contains(p.ISR, r) {
			return p
		}
	}
	q := p.clone()
	q.Replicas = target
	q.ISR = inOrder(target, p.ISR)
	q.AddingReplicas, q.RemovingReplicas = nil, nil
	if q.PartitionEpoch == prev.PartitionEpoch {
		q.PartitionEpoch++
	}
	if !slices.Contains(target, q.Leader) {
		q.Leader = chooseLeader(img, q)
		q.LeaderEpoch = prev.LeaderEpoch + 1
		if q.Leader < 0 {
			q.ISR = q.ISR[:1]
		}
	}
	return q
}

// inOrder returns the members of set in the order of order.
func inOrder(order, set []int32) []int32 {
	var out []int32
	for _, r := range order {
		if slices.Contains(set, r) {
			out = append(out, r)
		}
	}
	return out
}

func applyElectLeader(next *Image, c electLeaderCmd) (bool, applyResult) {
	p, err := lookupPartition(next, c.Topic, c.Partition)
	if err != nil {
		return false, applyResult{err: fmt.Errorf("elect leader: %w", err)}
	}
	name := fmt.Sprintf("%s-%d", c.Topic, c.Partition)
	if c.Unclean {
		if p.Leader >= 0 {
			return false, applyResult{err: fmt.Errorf("%w: %s is led by broker %d", ErrElectionNotNeeded, name, p.Leader)}
		}
		for _, r := range p.Replicas {
			if b, ok := next.brokers[r]; ok && !b.Fenced {
				q := p.clone()
				q.Leader, q.ISR = r, []int32{r}
				q.LeaderEpoch++
				q.PartitionEpoch++
				return true, storePartition(next, completeReassignment(next, q, p))
			}
		}
		return false, applyResult{err: fmt.Errorf("%w: %s: no replica of %v is live", ErrEligibleLeadersNotAvailable, name, p.Replicas)}
	}
	preferred := p.Replicas[0]
	if p.Leader == preferred {
		return false, applyResult{err: fmt.Errorf("%w: %s is led by its preferred replica %d", ErrElectionNotNeeded, name, preferred)}
	}
	if b, ok := next.brokers[preferred]; !ok || b.Fenced || !slices.Contains(p.ISR, preferred) {
		return false, applyResult{err: fmt.Errorf("%w: %s: preferred replica %d is not an unfenced member of the ISR %v", ErrPreferredLeaderNotAvailable, name, preferred, p.ISR)}
	}
	q := p.clone()
	q.Leader = preferred
	q.LeaderEpoch++
	q.PartitionEpoch++
	return true, storePartition(next, q)
}

// Imbalanced returns the partitions whose preferred replica could lead
// but does not, when auto leader rebalancing should act: for some broker,
// the share of the partitions it prefers to lead that it does not lead is
// above percent (Kafka's leader.imbalance.per.broker.percentage).
// Partitions being reassigned are left alone.
func (img *Image) Imbalanced(percent int) []Partition {
	preferred := map[int32]int{}
	notLed := map[int32][]Partition{}
	for _, t := range img.topics {
		for _, p := range t.Partitions {
			if p.Reassigning() {
				continue
			}
			r := p.Replicas[0]
			preferred[r]++
			if p.Leader == r {
				continue
			}
			if b, ok := img.brokers[r]; ok && !b.Fenced && slices.Contains(p.ISR, r) {
				notLed[r] = append(notLed[r], p.clone())
			}
		}
	}
	var out []Partition
	for _, r := range slices.Sorted(maps.Keys(notLed)) {
		if len(notLed[r])*100 > percent*preferred[r] {
			out = append(out, notLed[r]...)
		}
	}
	return out
}
