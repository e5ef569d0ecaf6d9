package partition

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// The leader side of replication, per partition:
//
//   - Roles: [Partition.BecomeLeader] and [Partition.BecomeFollower] apply a controller decision
//     under appendMu (so no append straddles a role change) and replicaMu.
//     A role older than the current one (lower leader epoch, or the same
//     leader epoch and a lower partition epoch) is ignored. A new leader
//     records its epoch at the log end in the leader-epoch checkpoint
//     before anything is appended in it.
//   - Follower positions: a Fetch with a replica id is a follower's fetch;
//     its fetch offset is the follower's log end ([Partition.RecordFollowerFetch]),
//     and it is caught up when it fetched from at least the leader's log
//     end as of that fetch (or of its previous fetch: Kafka's rule).
//   - High watermark: the minimum log end over the leader and the ISR
//     (plus an ISR expansion awaiting the controller), published in
//     Partition.hw, never decreasing while the broker leads; an ISR member
//     whose log end is unknown yet (no fetch since this broker became
//     leader) holds it where it is. Consumers read below it; the last
//     stable offset never exceeds it ([Partition.LastStableOffset]).
//   - ISR: the broker's maintenance loop ([Partition.MaintainISR]) removes a follower not
//     caught up for replica.lag.time.max.ms and adds back one that reached
//     the high watermark within the current leader epoch, through the
//     controller's AlterPartition; the answer is applied at once.
//   - acks=all ([Partition.WaitReplicated]): answered when the high watermark passes
//     the batch; NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is then
//     smaller than min.insync.replicas; NOT_LEADER_OR_FOLLOWER if the
//     broker lost the leadership meanwhile.

// Role is a partition's role as the controller decided it: who leads,
// at which leader and partition epochs, with which replicas and ISR.
// Immutable once applied ([Partition.BecomeLeader],
// [Partition.BecomeFollower]); replaced whole (Partition.role) under
// appendMu and replicaMu.
type Role struct {
	// Leader is the leading broker's id; -1: none.
	Leader int32
	// LeaderEpoch is bumped at every leader change (Kafka's leader epoch).
	LeaderEpoch int32
	// PartitionEpoch is bumped at every change of ISR or leader (KIP-497).
	PartitionEpoch int32
	// Replicas is the replica set, in assignment order.
	Replicas []int32
	// ISR is the in-sync replicas.
	ISR []int32
}

// ISRChanger is how a partition leader asks the controller to change the
// ISR (Kafka's AlterPartition). The controller rejects a request whose
// leader epoch or partition epoch is stale (an error); on success it
// returns the new role.
type ISRChanger interface {
	AlterPartition(ctx context.Context, topic string, partition, leaderEpoch, partitionEpoch int32, isr []int32) (Role, error)
}

// followerState is the leader's view of one follower (replicaMu).
type followerState struct {
	// logEnd is the follower's last fetch offset; -1 until it fetches
	// after this broker became leader.
	logEnd int64
	// lastFetch and lastFetchLeaderEnd are the time of its previous fetch
	// and the leader's log end then.
	lastFetch          time.Time
	lastFetchLeaderEnd int64
	// lastCaughtUp is the last time it was known to have the leader's log end.
	lastCaughtUp time.Time
	// logStart is the follower's log start offset from its last fetch; -1
	// until it fetches (DeleteRecords' low watermark).
	logStart int64
}

// olderRole reports whether next is older than current (then ignored).
func olderRole(next, current *Role) bool {
	if current == nil {
		return false
	}
	if next.LeaderEpoch != current.LeaderEpoch {
		return next.LeaderEpoch < current.LeaderEpoch
	}
	return next.PartitionEpoch < current.PartitionEpoch
}

// BecomeLeader applies a role that makes this broker the leader.
func (p *Partition) BecomeLeader(next *Role) error {
	p.appendMu.Lock()
	current := p.role.Load()
	if olderRole(next, current) || p.closed.Load() {
		p.appendMu.Unlock()
		return nil
	}
	if current != nil && current.Leader == p.nodeID && current.LeaderEpoch == next.LeaderEpoch {
		// Same leadership, new ISR, partition epoch or (a reassignment)
		// replica set: a new replica gets a follower entry that is not
		// caught up, a removed one loses its entry.
		p.replicaMu.Lock()
		if !slices.Equal(current.Replicas, next.Replicas) {
			for _, id := range next.Replicas {
				if id != p.nodeID && p.followers[id] == nil {
					p.followers[id] = &followerState{logEnd: -1, lastFetchLeaderEnd: -1, logStart: -1}
				}
			}
			for id := range p.followers {
				if !slices.Contains(next.Replicas, id) {
					delete(p.followers, id)
				}
			}
		}
		p.role.Store(next)
		advanced := p.updateHighWatermarkLocked(next)
		p.replicaMu.Unlock()
		p.appendMu.Unlock()
		if p.replication != nil && p.replication.ISRChanged != nil && !slices.Equal(current.ISR, next.ISR) {
			p.replication.ISRChanged(current.ISR, next.ISR)
		}
		if advanced {
			p.wakeWaiters()
		}
		return nil
	}
	logEnd := p.log.LogEndOffset()
	if err := p.epochs.assign(next.LeaderEpoch, logEnd); err != nil {
		p.appendMu.Unlock()
		return fmt.Errorf("%s: become leader at epoch %d: %w", p.Name(), next.LeaderEpoch, err)
	}
	now := time.Now()
	p.replicaMu.Lock()
	p.followers = map[int32]*followerState{}
	for _, id := range next.Replicas {
		if id == p.nodeID {
			continue
		}
		follower := &followerState{logEnd: -1, lastFetchLeaderEnd: -1, logStart: -1}
		if slices.Contains(next.ISR, id) {
			follower.lastCaughtUp = now // given a full lag period to show up
		}
		p.followers[id] = follower
	}
	p.pendingISR, p.isrInFlight = nil, false
	p.leaderEpochStart = logEnd
	p.role.Store(next)
	p.updateHighWatermarkLocked(next)
	p.replicaMu.Unlock()
	p.appendMu.Unlock()
	p.logger.Info("partition leader", "partition", p.Name(), "leader_epoch", next.LeaderEpoch,
		"epoch_start_offset", logEnd, "isr", next.ISR, "high_watermark", p.hw.Load())
	p.wakeWaiters()
	return nil
}

// BecomeFollower applies a role in which another broker (or none) leads.
// It reports whether the leader or leader epoch changed, so the fetcher
// must (re)start from truncation.
func (p *Partition) BecomeFollower(next *Role) (bool, error) {
	p.appendMu.Lock()
	current := p.role.Load()
	if olderRole(next, current) || p.closed.Load() {
		p.appendMu.Unlock()
		return false, nil
	}
	changed := current == nil || current.Leader != next.Leader || current.LeaderEpoch != next.LeaderEpoch
	p.replicaMu.Lock()
	p.role.Store(next)
	p.followers, p.pendingISR, p.isrInFlight = nil, nil, false
	p.replicaMu.Unlock()
	p.appendMu.Unlock()
	if changed {
		p.logger.Info("partition follower", "partition", p.Name(), "leader", next.Leader, "leader_epoch", next.LeaderEpoch)
		p.wakeWaiters() // acks=all waiters answer NOT_LEADER_OR_FOLLOWER
	}
	return changed, nil
}

// CurrentLeaderEpoch is the epoch of the partition's leader as known here.
func (p *Partition) CurrentLeaderEpoch() int32 {
	if role := p.role.Load(); role != nil {
		return role.LeaderEpoch
	}
	return UnreplicatedLeaderEpoch
}

// CheckLeader applies Kafka's checks to a request naming the partition
// with the client's current leader epoch (-1: none): an older epoch is
// FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH, and then a broker
// that does not lead the partition answers NOT_LEADER_OR_FOLLOWER.
func (p *Partition) CheckLeader(clientEpoch int32) error {
	role := p.role.Load()
	epoch := p.CurrentLeaderEpoch()
	switch {
	case clientEpoch >= 0 && clientEpoch < epoch:
		return fmt.Errorf("%w: %s: %d, current %d", ErrFencedLeaderEpoch, p.Name(), clientEpoch, epoch)
	case clientEpoch > epoch:
		return fmt.Errorf("%w: %s: %d, current %d", ErrUnknownLeaderEpoch, p.Name(), clientEpoch, epoch)
	case role != nil && role.Leader != p.nodeID:
		return fmt.Errorf("%w: %s is led by broker %d", ErrNotLeader, p.Name(), role.Leader)
	}
	return nil
}

// appendEpochLocked is the leader epoch to stamp into a batch appended
// now, or ErrNotLeader (caller holds appendMu, so the role cannot change
// before the append).
func (p *Partition) appendEpochLocked() (int32, error) {
	role := p.role.Load()
	if role == nil {
		return UnreplicatedLeaderEpoch, nil
	}
	if role.Leader != p.nodeID {
		return 0, fmt.Errorf("%w: %s is led by broker %d", ErrNotLeader, p.Name(), role.Leader)
	}
	return role.LeaderEpoch, nil
}

// updateHighWatermarkLocked recomputes the high watermark of a leader and
// reports whether it advanced (caller holds replicaMu).
func (p *Partition) updateHighWatermarkLocked(role *Role) bool {
	if role.Leader != p.nodeID {
		return false
	}
	hw := p.log.LogEndOffset()
	for _, members := range [][]int32{role.ISR, p.pendingISR} {
		for _, id := range members {
			if id == p.nodeID {
				continue
			}
			follower := p.followers[id]
			if follower == nil || follower.logEnd < 0 {
				return false
			}
			hw = min(hw, follower.logEnd)
		}
	}
	if hw <= p.hw.Load() {
		return false
	}
	p.hw.Store(hw)
	return true
}

// leaderAppended advances the high watermark after a local append, when
// the partition has a role (called without locks).
func (p *Partition) leaderAppended() {
	role := p.role.Load()
	if role == nil {
		return
	}
	p.replicaMu.Lock()
	advanced := p.updateHighWatermarkLocked(role)
	p.replicaMu.Unlock()
	if advanced {
		p.wakeWaiters()
	}
}

// RecordFollowerFetch notes that follower id fetched from fetchOffset:
// its log end, whether it is caught up, and the high watermark. It asks
// the ISR loop to look ([Replication.FollowerCaughtUp]) when the follower
// may rejoin the ISR.
func (p *Partition) RecordFollowerFetch(id int32, fetchOffset, logStart int64) {
	role := p.role.Load()
	if role == nil || role.Leader != p.nodeID {
		return
	}
	leaderEnd := p.log.LogEndOffset()
	now := time.Now()
	p.replicaMu.Lock()
	follower := p.followers[id]
	if follower == nil {
		p.replicaMu.Unlock()
		return
	}
	if fetchOffset >= leaderEnd {
		follower.lastCaughtUp = now
	} else if follower.lastFetchLeaderEnd >= 0 && fetchOffset >= follower.lastFetchLeaderEnd {
		follower.lastCaughtUp = follower.lastFetch
	}
	follower.lastFetch, follower.lastFetchLeaderEnd = now, leaderEnd
	follower.logEnd = fetchOffset
	startMoved := logStart > follower.logStart
	follower.logStart = max(follower.logStart, logStart)
	advanced := p.updateHighWatermarkLocked(role) || startMoved
	rejoin := !slices.Contains(role.ISR, id) && fetchOffset >= p.hw.Load() && fetchOffset >= p.leaderEpochStart
	p.replicaMu.Unlock()
	if advanced {
		p.wakeWaiters()
	}
	if rejoin && p.replication != nil && p.replication.FollowerCaughtUp != nil {
		p.replication.FollowerCaughtUp()
	}
}

// WaitReplicated waits, for acks=all, until the high watermark passes
// lastOffset, then checks the ISR against minInsync.
// It ends early when ctx (the connection's) or stop (the broker's) ends.
func (p *Partition) WaitReplicated(ctx context.Context, stop <-chan struct{}, lastOffset int64, minInsync int64, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		wake := p.WaitChannel()
		role := p.role.Load()
		if role != nil && role.Leader != p.nodeID {
			return fmt.Errorf("%w: %s: leadership moved to broker %d before the batch was replicated", ErrNotLeader, p.Name(), role.Leader)
		}
		if p.closed.Load() {
			return fmt.Errorf("%w: %s: closed", ErrShuttingDown, p.Name())
		}
		if p.HighWatermark() > lastOffset {
			if role != nil && int64(len(role.ISR)) < minInsync {
				return fmt.Errorf("%w: %s: ISR %v, min.insync.replicas %d", ErrNotEnoughReplicasAfterAppend, p.Name(), role.ISR, minInsync)
			}
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %w", ErrShuttingDown, p.Name(), ctx.Err())
		case <-stop:
			return fmt.Errorf("%w: %s", ErrShuttingDown, p.Name())
		case <-timer.C:
			return fmt.Errorf("%w: %s: offset %d not replicated to the ISR %v within %v", ErrRequestTimedOut, p.Name(), lastOffset, role.ISR, timeout)
		}
	}
}

// MaintainISR proposes the ISR the followers' positions call for (a
// follower not caught up for lag leaves, one at the high watermark within
// the current leader epoch joins), if it differs from the current one,
// through [Replication.ISR], and applies the controller's answer. The
// broker's ISR maintenance goroutine calls it for every partition; it
// holds no lock while it waits for the answer.
func (p *Partition) MaintainISR(ctx context.Context, lag time.Duration) {
	role := p.role.Load()
	if role == nil || role.Leader != p.nodeID || p.closed.Load() {
		return
	}
	now := time.Now()
	p.replicaMu.Lock()
	if p.isrInFlight || p.role.Load() != role {
		p.replicaMu.Unlock()
		return
	}
	var isr []int32
	for _, id := range role.ISR {
		follower := p.followers[id]
		if id == p.nodeID || follower != nil && now.Sub(follower.lastCaughtUp) <= lag {
			isr = append(isr, id)
		}
	}
	hw := p.hw.Load()
	for _, id := range role.Replicas {
		follower := p.followers[id]
		// Kafka's rule for joining: at the high watermark, within the
		// current leader epoch; and fetching now (a replica that went
		// down at the high watermark must not be proposed).
		if id != p.nodeID && !slices.Contains(role.ISR, id) && follower != nil &&
			follower.logEnd >= hw && follower.logEnd >= p.leaderEpochStart && now.Sub(follower.lastFetch) <= lag {
			isr = append(isr, id)
		}
	}
	if slices.Equal(isr, role.ISR) {
		p.replicaMu.Unlock()
		return
	}
	p.pendingISR, p.isrInFlight = isr, true
	p.replicaMu.Unlock()
	next, err := p.replication.ISR.AlterPartition(ctx, p.topic, p.index, role.LeaderEpoch, role.PartitionEpoch, isr)
	if err != nil {
		p.clearPendingISR()
		p.logger.Warn("ISR change refused", "partition", p.Name(), "from", role.ISR, "to", isr, "error", err)
		return
	}
	p.logger.Info("ISR changed", "partition", p.Name(), "from", role.ISR, "to", next.ISR, "partition_epoch", next.PartitionEpoch)
	if next.Leader != p.nodeID || next.LeaderEpoch != role.LeaderEpoch {
		// The change also moved the leadership (a reassignment that
		// removed this leader completed): until the new role arrives and
		// makes this broker a follower (which clears it), the high
		// watermark keeps counting the proposed ISR, whose members
		// include the new leader. Dropping it now would let this broker
		// acknowledge records the new leader does not have.
		return
	}
	// Apply the new role before dropping the proposal, so the high
	// watermark never counts an ISR smaller than both.
	err = p.BecomeLeader(&Role{Leader: next.Leader, LeaderEpoch: next.LeaderEpoch, PartitionEpoch: next.PartitionEpoch,
		Replicas: slices.Clone(next.Replicas), ISR: slices.Clone(next.ISR)})
	p.clearPendingISR()
	if err != nil {
		p.logger.Error("apply ISR change", "partition", p.Name(), "error", err)
	}
}

// clearPendingISR ends an ISR proposal: the high watermark counts the
// role's ISR alone again.
func (p *Partition) clearPendingISR() {
	p.replicaMu.Lock()
	p.pendingISR, p.isrInFlight = nil, false
	p.replicaMu.Unlock()
}

// CheckMinInsync refuses an acks=all produce before its append when the
// ISR is smaller than min.insync.replicas (without a role the ISR is this
// broker alone).
func (p *Partition) CheckMinInsync(minInsync int64) error {
	role := p.role.Load()
	if role == nil {
		if minInsync > 1 {
			return fmt.Errorf("%w: min.insync.replicas is %d, this broker has 1 replica", ErrNotEnoughReplicas, minInsync)
		}
		return nil
	}
	if int64(len(role.ISR)) < minInsync {
		return fmt.Errorf("%w: %s: min.insync.replicas is %d, the ISR is %v", ErrNotEnoughReplicas, p.Name(), minInsync, role.ISR)
	}
	return nil
}

// Role is the partition's role as last applied: nil when replication is
// off; with it, leader -1 at epoch -1 until the controller's first role
// arrives. The role is immutable; do not modify it.
func (p *Partition) Role() *Role { return p.role.Load() }
