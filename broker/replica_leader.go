package broker

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// The leader side of replication, per partition:
//
//   - Roles: becomeLeader and becomeFollower apply a controller decision
//     under appendMu (so no append straddles a role change) and replicaMu.
//     A role older than the current one (lower leader epoch, or the same
//     leader epoch and a lower partition epoch) is ignored. A new leader
//     records its epoch at the log end in the leader-epoch checkpoint
//     before anything is appended in it.
//   - Follower positions: a Fetch with a replica id is a follower's fetch;
//     its fetch offset is the follower's log end (recordFollowerFetch),
//     and it is caught up when it fetched from at least the leader's log
//     end as of that fetch (or of its previous fetch: Kafka's rule).
//   - High watermark: the minimum log end over the leader and the ISR
//     (plus an ISR expansion awaiting the controller), published in
//     partition.hw, never decreasing while the broker leads; an ISR member
//     whose log end is unknown yet (no fetch since this broker became
//     leader) holds it where it is. Consumers read below it; the last
//     stable offset never exceeds it (lastStableOffset).
//   - ISR: the maintenance loop (maintainISRs) removes a follower not
//     caught up for replica.lag.time.max.ms and adds back one that reached
//     the high watermark within the current leader epoch, through the
//     controller's AlterPartition; the answer is applied at once.
//   - acks=all (waitReplicated): answered when the high watermark passes
//     the batch; NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is then
//     smaller than min.insync.replicas; NOT_LEADER_OR_FOLLOWER if the
//     broker lost the leadership meanwhile.

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
}

// olderRole reports whether next is older than current (then ignored).
func olderRole(next, current *replicaRole) bool {
	if current == nil {
		return false
	}
	if next.leaderEpoch != current.leaderEpoch {
		return next.leaderEpoch < current.leaderEpoch
	}
	return next.partitionEpoch < current.partitionEpoch
}

// becomeLeader applies a role that makes this broker the leader.
func (p *partition) becomeLeader(next *replicaRole) error {
	p.appendMu.Lock()
	current := p.role.Load()
	if olderRole(next, current) || p.closed.Load() {
		p.appendMu.Unlock()
		return nil
	}
	if current != nil && current.leader == p.nodeID && current.leaderEpoch == next.leaderEpoch {
		// Same leadership, new ISR or partition epoch.
		p.replicaMu.Lock()
		p.role.Store(next)
		advanced := p.updateHighWatermarkLocked(next)
		p.replicaMu.Unlock()
		p.appendMu.Unlock()
		if advanced {
			p.wakeWaiters()
		}
		return nil
	}
	logEnd := p.log.LogEndOffset()
	if err := p.epochs.assign(next.leaderEpoch, logEnd); err != nil {
		p.appendMu.Unlock()
		return fmt.Errorf("%s: become leader at epoch %d: %w", p.name(), next.leaderEpoch, err)
	}
	now := time.Now()
	p.replicaMu.Lock()
	p.followers = map[int32]*followerState{}
	for _, id := range next.replicas {
		if id == p.nodeID {
			continue
		}
		follower := &followerState{logEnd: -1, lastFetchLeaderEnd: -1}
		if slices.Contains(next.isr, id) {
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
	p.logger.Info("partition leader", "partition", p.name(), "leader_epoch", next.leaderEpoch,
		"epoch_start_offset", logEnd, "isr", next.isr, "high_watermark", p.hw.Load())
	p.wakeWaiters()
	return nil
}

// becomeFollower applies a role in which another broker (or none) leads.
// It reports whether the leader or leader epoch changed, so the fetcher
// must (re)start from truncation.
func (p *partition) becomeFollower(next *replicaRole) (bool, error) {
	p.appendMu.Lock()
	current := p.role.Load()
	if olderRole(next, current) || p.closed.Load() {
		p.appendMu.Unlock()
		return false, nil
	}
	changed := current == nil || current.leader != next.leader || current.leaderEpoch != next.leaderEpoch
	p.replicaMu.Lock()
	p.role.Store(next)
	p.followers, p.pendingISR, p.isrInFlight = nil, nil, false
	p.replicaMu.Unlock()
	p.appendMu.Unlock()
	if changed {
		p.logger.Info("partition follower", "partition", p.name(), "leader", next.leader, "leader_epoch", next.leaderEpoch)
		p.wakeWaiters() // acks=all waiters answer NOT_LEADER_OR_FOLLOWER
	}
	return changed, nil
}

// currentLeaderEpoch is the epoch of the partition's leader as known here.
func (p *partition) currentLeaderEpoch() int32 {
	if role := p.role.Load(); role != nil {
		return role.leaderEpoch
	}
	return leaderEpoch
}

// checkLeader applies Kafka's checks to a request naming the partition
// with the client's current leader epoch (-1: none): an older epoch is
// FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH, and then a broker
// that does not lead the partition answers NOT_LEADER_OR_FOLLOWER.
func (p *partition) checkLeader(clientEpoch int32) error {
	role := p.role.Load()
	epoch := p.currentLeaderEpoch()
	switch {
	case clientEpoch >= 0 && clientEpoch < epoch:
		return fmt.Errorf("%w: %s: %d, current %d", errFencedLeaderEpoch, p.name(), clientEpoch, epoch)
	case clientEpoch > epoch:
		return fmt.Errorf("%w: %s: %d, current %d", errUnknownLeaderEpoch, p.name(), clientEpoch, epoch)
	case role != nil && role.leader != p.nodeID:
		return fmt.Errorf("%w: %s is led by broker %d", errNotLeader, p.name(), role.leader)
	}
	return nil
}

// appendEpochLocked is the leader epoch to stamp into a batch appended
// now, or errNotLeader (caller holds appendMu, so the role cannot change
// before the append).
func (p *partition) appendEpochLocked() (int32, error) {
	role := p.role.Load()
	if role == nil {
		return leaderEpoch, nil
	}
	if role.leader != p.nodeID {
		return 0, fmt.Errorf("%w: %s is led by broker %d", errNotLeader, p.name(), role.leader)
	}
	return role.leaderEpoch, nil
}

// updateHighWatermarkLocked recomputes the high watermark of a leader and
// reports whether it advanced (caller holds replicaMu).
func (p *partition) updateHighWatermarkLocked(role *replicaRole) bool {
	if role.leader != p.nodeID {
		return false
	}
	hw := p.log.LogEndOffset()
	for _, members := range [][]int32{role.isr, p.pendingISR} {
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
func (p *partition) leaderAppended() {
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

// recordFollowerFetch notes that follower id fetched from fetchOffset:
// its log end, whether it is caught up, and the high watermark. It asks
// the ISR loop to look when the follower may rejoin the ISR.
func (p *partition) recordFollowerFetch(b *Broker, id int32, fetchOffset int64) {
	role := p.role.Load()
	if role == nil || role.leader != p.nodeID {
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
	advanced := p.updateHighWatermarkLocked(role)
	rejoin := !slices.Contains(role.isr, id) && fetchOffset >= p.hw.Load() && fetchOffset >= p.leaderEpochStart
	p.replicaMu.Unlock()
	if advanced {
		p.wakeWaiters()
	}
	if rejoin && b.replication != nil {
		select {
		case b.replication.isrWake <- struct{}{}:
		default:
		}
	}
}

// waitReplicated waits, for acks=all, until the high watermark passes
// lastOffset, then checks the ISR against minInsync.
// It ends early when ctx (the connection's) or stop (the broker's) ends.
func (p *partition) waitReplicated(ctx context.Context, stop <-chan struct{}, lastOffset int64, minInsync int64, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		wake := p.waitChannel()
		role := p.role.Load()
		if role != nil && role.leader != p.nodeID {
			return fmt.Errorf("%w: %s: leadership moved to broker %d before the batch was replicated", errNotLeader, p.name(), role.leader)
		}
		if p.closed.Load() {
			return fmt.Errorf("%w: %s: closed", errShuttingDown, p.name())
		}
		if p.highWatermark() > lastOffset {
			if role != nil && int64(len(role.isr)) < minInsync {
				return fmt.Errorf("%w: %s: ISR %v, min.insync.replicas %d", errNotEnoughReplicasAfterAppend, p.name(), role.isr, minInsync)
			}
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %w", errShuttingDown, p.name(), ctx.Err())
		case <-stop:
			return fmt.Errorf("%w: %s", errShuttingDown, p.name())
		case <-timer.C:
			return fmt.Errorf("%w: %s: offset %d not replicated to the ISR %v within %v", errRequestTimedOut, p.name(), lastOffset, role.isr, timeout)
		}
	}
}

// maintainISRs runs while the broker runs (replication on): every half
// replica.lag.time.max.ms, and when a follower may rejoin, it checks the
// ISR of every partition led here.
func (b *Broker) maintainISRs() {
	defer b.background.Done()
	lag := b.config.settings.ReplicaLagTimeMax
	ticker := time.NewTicker(max(lag/2, 5*time.Millisecond))
	defer ticker.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-ticker.C:
		case <-b.replication.isrWake:
		}
		for _, p := range b.allPartitions() {
			p.maintainISR(b.ctx, b.replication.config.ISR, lag)
		}
	}
}

// maintainISR proposes the ISR the followers' positions call for, if it
// differs from the current one, and applies the controller's answer.
func (p *partition) maintainISR(ctx context.Context, changer ISRChanger, lag time.Duration) {
	role := p.role.Load()
	if role == nil || role.leader != p.nodeID || p.closed.Load() {
		return
	}
	now := time.Now()
	p.replicaMu.Lock()
	if p.isrInFlight || p.role.Load() != role {
		p.replicaMu.Unlock()
		return
	}
	var isr []int32
	for _, id := range role.isr {
		follower := p.followers[id]
		if id == p.nodeID || follower != nil && now.Sub(follower.lastCaughtUp) <= lag {
			isr = append(isr, id)
		}
	}
	hw := p.hw.Load()
	for _, id := range role.replicas {
		follower := p.followers[id]
		// Kafka's rule for joining: at the high watermark, within the
		// current leader epoch; and fetching now (a replica that went
		// down at the high watermark must not be proposed).
		if id != p.nodeID && !slices.Contains(role.isr, id) && follower != nil &&
			follower.logEnd >= hw && follower.logEnd >= p.leaderEpochStart && now.Sub(follower.lastFetch) <= lag {
			isr = append(isr, id)
		}
	}
	if slices.Equal(isr, role.isr) {
		p.replicaMu.Unlock()
		return
	}
	p.pendingISR, p.isrInFlight = isr, true
	p.replicaMu.Unlock()
	next, err := changer.AlterPartition(ctx, p.topic.name, p.index, role.leaderEpoch, role.partitionEpoch, isr)
	p.replicaMu.Lock()
	p.pendingISR, p.isrInFlight = nil, false
	p.replicaMu.Unlock()
	if err != nil {
		p.logger.Warn("ISR change refused", "partition", p.name(), "from", role.isr, "to", isr, "error", err)
		return
	}
	p.logger.Info("ISR changed", "partition", p.name(), "from", role.isr, "to", next.ISR, "partition_epoch", next.PartitionEpoch)
	if next.Leader == p.nodeID {
		err = p.becomeLeader(&replicaRole{leader: next.Leader, leaderEpoch: next.LeaderEpoch, partitionEpoch: next.PartitionEpoch,
			replicas: slices.Clone(next.Replicas), isr: slices.Clone(next.ISR)})
		if err != nil {
			p.logger.Error("apply ISR change", "partition", p.name(), "error", err)
		}
	}
}

// checkMinInsync refuses an acks=all produce before its append when the
// ISR is smaller than min.insync.replicas (without a role the ISR is this
// broker alone).
func (p *partition) checkMinInsync(minInsync int64) error {
	role := p.role.Load()
	if role == nil {
		if minInsync > 1 {
			return fmt.Errorf("%w: min.insync.replicas is %d, this broker has 1 replica", errNotEnoughReplicas, minInsync)
		}
		return nil
	}
	if int64(len(role.isr)) < minInsync {
		return fmt.Errorf("%w: %s: min.insync.replicas is %d, the ISR is %v", errNotEnoughReplicas, p.name(), minInsync, role.isr)
	}
	return nil
}
