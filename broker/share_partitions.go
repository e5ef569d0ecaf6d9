package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/share"
)

// Share groups (KIP-932) on the partition leader: the share-partitions
// this broker leads, their share sessions, and the durable state they
// keep at the group's coordinator.
//
// Ownership: shareManager.mu guards the partitions and sessions maps
// only. Each sharePartition has its own mutex that serializes everything
// done to it — acquisitions, acknowledgements, lock expiry, loading — and
// the durable write that follows each change, so the coordinator sees the
// states in the order they happened. Lock order: a sharePartition's mu,
// then shareManager.mu; never two sharePartitions at once.
//
// Durability: every change (records acquired, acknowledged, released,
// expired) is written to the group's coordinator (WriteShareState, here or
// on another broker) before the request that caused it is answered. An
// acquisition is written as the record's delivery count (acquisitions
// themselves are not durable): a leader that crashes forgets who held
// what, and its successor makes those records available again with their
// counts. A write that fails drops the in-memory state, which is read back
// from the coordinator on next use.

// sharePartitionKey names one share-partition.
type sharePartitionKey struct {
	group     string
	topicID   [16]byte
	partition int32
}

func (k sharePartitionKey) String() string {
	return fmt.Sprintf("share group %q partition %x-%d", k.group, k.topicID[:4], k.partition)
}

// sharePartition is one share-partition led here.
type sharePartition struct {
	key sharePartitionKey
	mu  sync.Mutex
	// state is nil until loaded, and again after a failed write or a
	// change of leader epoch.
	state *share.Partition
	// leaderEpoch is the partition's leader epoch the state was loaded
	// under; stateEpoch the coordinator's state epoch of it.
	leaderEpoch, stateEpoch int32
	// lockDuration is the group's share.record.lock.duration.ms when
	// loaded.
	lockDuration time.Duration
	// lastUsed is when a request last touched it (evictIdle).
	lastUsed time.Time
}

// shareManager is the broker's share-group state as a partition leader.
type shareManager struct {
	b  *Broker
	mu sync.Mutex
	// partitions are the loaded share-partitions.
	partitions map[sharePartitionKey]*sharePartition
	// sessions are the share sessions, by group and member.
	sessions map[shareSessionKey]*shareSession
	// released is closed (and replaced) whenever records become available
	// again (a release, a lock timeout, a closed session), to wake waiting
	// ShareFetches.
	released chan struct{}
}

func newShareManager(b *Broker) *shareManager {
	return &shareManager{
		b:          b,
		partitions: make(map[sharePartitionKey]*sharePartition),
		sessions:   make(map[shareSessionKey]*shareSession),
		released:   make(chan struct{}),
	}
}

// partition returns the share-partition of key, creating its entry.
func (m *shareManager) partition(key sharePartitionKey) *sharePartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	sp := m.partitions[key]
	if sp == nil {
		sp = &sharePartition{key: key}
		m.partitions[key] = sp
	}
	sp.lastUsed = time.Now()
	return sp
}

// shareIdleEviction is how long a share-partition with nothing acquired
// stays loaded without a request: its state is at the coordinator, and a
// later request loads it again.
const shareIdleEviction = 5 * time.Minute

// evictIdle forgets the share-partitions no request touched for
// shareIdleEviction that hold no acquired record, so the groups a broker
// ever served do not stay in memory.
func (m *shareManager) evictIdle(now time.Time) {
	m.mu.Lock()
	var idle []*sharePartition
	for _, sp := range m.partitions {
		if now.Sub(sp.lastUsed) > shareIdleEviction {
			idle = append(idle, sp)
		}
	}
	m.mu.Unlock()
	for _, sp := range idle {
		sp.mu.Lock()
		if sp.state == nil || sp.state.Counts().Acquired == 0 {
			m.mu.Lock()
			if now.Sub(sp.lastUsed) > shareIdleEviction {
				delete(m.partitions, sp.key)
			}
			m.mu.Unlock()
		}
		sp.mu.Unlock()
	}
}

// releasedChannel is the channel closed at the next release.
func (m *shareManager) releasedChannel() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.released
}

// signalReleased wakes every ShareFetch waiting for records.
func (m *shareManager) signalReleased() {
	m.mu.Lock()
	close(m.released)
	m.released = make(chan struct{})
	m.mu.Unlock()
}

// shareConfig is the share.Config of a group.
func (b *Broker) shareConfig(groupID string) share.Config {
	settings := b.groupSettings(groupID)
	return share.Config{
		LockDuration:   settings.ShareRecordLockDuration,
		MaxRecordLocks: int(b.config.settings.GroupConfigs.SharePartitionMaxRecordLocks),
		DeliveryLimit:  settings.ShareDeliveryCountLimit,
	}.WithDefaults()
}

// load makes sp's state current for tp's leadership (caller holds sp.mu):
// it reads the state from the group's coordinator, or initializes the
// start offset from share.auto.offset.reset and writes it.
func (m *shareManager) load(ctx context.Context, sp *sharePartition, tp *topicPartition) error {
	if err := tp.CheckLeader(-1); err != nil {
		sp.state = nil
		return err
	}
	epoch := tp.Role().LeaderEpoch
	if sp.state != nil && sp.leaderEpoch == epoch {
		logStart := tp.Log().LogStartOffset()
		sp.state.AdvanceStart(logStart)
		return nil
	}
	sp.state = nil
	cfg := m.b.shareConfig(sp.key.group)
	stored, found, err := m.b.readShareState(ctx, sp.key.group, group.ShareKey{TopicID: sp.key.topicID, Partition: sp.key.partition})
	if err != nil {
		return fmt.Errorf("load %s: %w", sp.key, err)
	}
	var state *share.Partition
	if found && stored.StartOffset >= 0 {
		state, err = share.Restore(cfg, snapshotFromShareState(stored))
		if err != nil {
			return fmt.Errorf("load %s: %w", sp.key, err)
		}
	} else {
		state = share.New(cfg, m.initialStartOffset(sp.key.group, tp))
	}
	state.AdvanceStart(tp.Log().LogStartOffset())
	sp.leaderEpoch, sp.stateEpoch, sp.lockDuration = epoch, stored.StateEpoch, cfg.LockDuration
	sp.state = state
	if !found {
		// Initialize the state, then claim it at this leader epoch.
		if err := m.persistState(ctx, sp, true); err != nil {
			return err
		}
	}
	if !found || stored.LeaderEpoch != epoch {
		// Claim the state at this leader epoch, so an older leader's
		// later write is fenced.
		if err := m.persist(ctx, sp); err != nil {
			return err
		}
	}
	return nil
}

// initialStartOffset is where a share-partition without durable state
// starts: share.auto.offset.reset — latest (the high watermark), earliest
// (the log start) or by_duration (the first record at or after now minus
// the duration, else the high watermark).
func (m *shareManager) initialStartOffset(groupID string, tp *topicPartition) int64 {
	settings := m.b.groupSettings(groupID)
	switch settings.ShareAutoOffsetReset {
	case "earliest":
		return tp.Log().LogStartOffset()
	case "by_duration":
		at := time.Now().Add(-settings.ShareAutoOffsetResetDuration).UnixMilli()
		if offset, _, found := tp.Log().OffsetForTimestamp(at); found {
			return offset
		}
	}
	return tp.HighWatermark()
}

// persist writes sp's state to the group's coordinator (caller holds
// sp.mu). On failure the in-memory state is dropped: the next use reads
// the coordinator's.
func (m *shareManager) persist(ctx context.Context, sp *sharePartition) error {
	return m.persistState(ctx, sp, false)
}

// persistState is persist, or with initialize the first write of a
// share-partition the coordinator has no state of.
func (m *shareManager) persistState(ctx context.Context, sp *sharePartition, initialize bool) error {
	state := shareStateFromSnapshot(sp.state.Snapshot(), sp.leaderEpoch, sp.stateEpoch)
	err := m.b.writeShareState(ctx, sp.key.group, group.ShareKey{TopicID: sp.key.topicID, Partition: sp.key.partition}, state, initialize)
	if err != nil {
		sp.state = nil
		return fmt.Errorf("write %s: %w", sp.key, err)
	}
	return nil
}

// snapshotFromShareState and shareStateFromSnapshot convert between the
// coordinator's record of a share-partition and package share's.
func snapshotFromShareState(s group.ShareState) share.Snapshot {
	snapshot := share.Snapshot{StartOffset: s.StartOffset, LeaderEpoch: s.LeaderEpoch, StateEpoch: s.StateEpoch, EndOffset: s.StartOffset}
	for _, b := range s.Batches {
		snapshot.Batches = append(snapshot.Batches, share.SnapshotBatch{First: b.First, Last: b.Last, DeliveryCount: b.DeliveryCount, State: share.RecordState(b.State)})
		snapshot.EndOffset = max(snapshot.EndOffset, b.Last+1)
	}
	return snapshot
}

func shareStateFromSnapshot(s share.Snapshot, leaderEpoch, stateEpoch int32) group.ShareState {
	state := group.ShareState{StateEpoch: stateEpoch, LeaderEpoch: leaderEpoch, StartOffset: s.StartOffset}
	for _, b := range s.Batches {
		state.Batches = append(state.Batches, group.ShareStateBatch{First: b.First, Last: b.Last, DeliveryCount: b.DeliveryCount, State: int8(b.State)})
	}
	return state
}

// expireLocks releases every share-partition's timed-out acquisitions and
// persists what changed. The share ticker calls it.
func (m *shareManager) expireLocks(ctx context.Context, now time.Time) {
	m.mu.Lock()
	list := make([]*sharePartition, 0, len(m.partitions))
	for _, sp := range m.partitions {
		list = append(list, sp)
	}
	m.mu.Unlock()
	released := false
	for _, sp := range list {
		sp.mu.Lock()
		if sp.state != nil {
			if expired, _ := sp.state.ExpireLocks(now); expired > 0 {
				m.b.countShare(shareLockTimeouts, expired)
				released = true
				_ = m.persist(ctx, sp) // a failed write drops the state; it reloads on next use
			}
		}
		sp.mu.Unlock()
	}
	if released {
		m.signalReleased()
	}
}

// runShareTicker expires acquisition locks every interval until the
// broker closes.
func (m *shareManager) runShareTicker(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			m.expireLocks(ctx, now)
			m.evictIdle(now)
		}
	}
}

// errShareStateFenced reports whether err means the coordinator holds a
// newer state than the leader's (another leader, or an altered start).
func errShareStateFenced(err error) bool {
	return errors.Is(err, group.ErrFencedLeaderEpoch) || errors.Is(err, group.ErrFencedStateEpoch)
}

// shareTickInterval is how often acquisition locks are checked for expiry.
const shareTickInterval = 100 * time.Millisecond
