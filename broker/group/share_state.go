package group

import (
	"context"
	"fmt"
	"slices"
)

// ShareKey names one share-partition of a share group: a topic (by id)
// and partition.
type ShareKey struct {
	TopicID   [16]byte
	Partition int32
}

// ShareState is the durable state of one share-partition, as a partition
// leader last wrote it (Kafka's WriteShareGroupState fields).
type ShareState struct {
	// StateEpoch is bumped by AlterShareOffsets: a leader holding state of
	// an older state epoch is fenced (ErrFencedStateEpoch) and reloads.
	StateEpoch int32
	// LeaderEpoch is the partition leader's epoch when it wrote: a write
	// from an older leader is fenced (ErrFencedLeaderEpoch).
	LeaderEpoch int32
	// StartOffset is the share-partition start offset; -1 before the
	// leader initialized it (AlterShareOffsets of a fresh partition sets
	// it directly).
	StartOffset int64
	// Batches are the in-flight records' states from StartOffset on, in
	// order.
	Batches []ShareStateBatch
}

// ShareStateBatch is a run of records with one state and delivery count.
type ShareStateBatch struct {
	First, Last   int64
	DeliveryCount int16
	// State is Kafka's record state: 0 available, 2 acknowledged, 4
	// archived (acquisitions are not durable).
	State int8
}

// WriteShareState stores the state of one share-partition of groupID,
// creating the share group if there is none (a partition leader writes
// before any member joined here, e.g. after this coordinator moved). With
// initialize (Kafka's InitializeShareGroupState) nothing may be stored
// yet; without, something must be: a leader still holding the state of a
// group deleted since is fenced (ErrFencedStateEpoch) instead of bringing
// it back. A write of an older leader epoch than the stored one is
// ErrFencedLeaderEpoch, of another state epoch ErrFencedStateEpoch. A
// group id held by a classic or consumer group is ErrGroupNotFound.
func (c *Coordinator) WriteShareState(ctx context.Context, groupID string, key ShareKey, state ShareState, initialize bool) error {
	if err := validateShareState(state); err != nil {
		return fmt.Errorf("group %q share-partition %x-%d: %w", groupID, key.TopicID, key.Partition, err)
	}
	g := c.lockGroup(groupID, true)
	if g == nil {
		return groupError(groupID, c.refusal())
	}
	defer g.unlock()
	sg, err := g.shareGroupFor(ctx, true)
	if err != nil {
		return err
	}
	stored, ok := sg.states[key]
	switch {
	case initialize && ok:
		return fmt.Errorf("group %q share-partition %x-%d: already initialized: %w", groupID, key.TopicID, key.Partition, ErrFencedStateEpoch)
	case !initialize && !ok:
		return fmt.Errorf("group %q share-partition %x-%d: no state to update (deleted?): %w", groupID, key.TopicID, key.Partition, ErrFencedStateEpoch)
	}
	if ok {
		switch {
		case state.LeaderEpoch < stored.LeaderEpoch:
			return fmt.Errorf("group %q share-partition %x-%d: leader epoch %d < %d: %w", groupID, key.TopicID, key.Partition, state.LeaderEpoch, stored.LeaderEpoch, ErrFencedLeaderEpoch)
		case state.StateEpoch != stored.StateEpoch:
			return fmt.Errorf("group %q share-partition %x-%d: state epoch %d, stored %d: %w", groupID, key.TopicID, key.Partition, state.StateEpoch, stored.StateEpoch, ErrFencedStateEpoch)
		}
	}
	state.Batches = slices.Clone(state.Batches)
	if err := c.appendRecords(ctx, g.partition, c.cfg.Now(), []StoreRecord{shareStateRecord(groupID, key, state)}); err != nil {
		return storeError(groupID, err)
	}
	sg.states[key] = state
	return nil
}

// validateShareState refuses a state no leader could have written
// (ErrInvalidRequest): batches out of order or overlapping, before the
// start offset, with an unknown state or a negative delivery count. A
// state stored is one a leader can restore.
func validateShareState(state ShareState) error {
	next := state.StartOffset
	for i, b := range state.Batches {
		switch {
		case b.First < next || b.Last < b.First:
			return fmt.Errorf("%w: state batch %d [%d, %d] is out of order (from offset %d)", ErrInvalidRequest, i, b.First, b.Last, next)
		case b.State != 0 && b.State != 2 && b.State != 4:
			return fmt.Errorf("%w: state batch %d has record state %d (0, 2 or 4)", ErrInvalidRequest, i, b.State)
		case b.DeliveryCount < 0:
			return fmt.Errorf("%w: state batch %d has delivery count %d", ErrInvalidRequest, i, b.DeliveryCount)
		}
		next = b.Last + 1
	}
	return nil
}

// ReadShareState returns the stored state of one share-partition; found is
// false when none is stored (the leader initializes it from
// share.auto.offset.reset).
func (c *Coordinator) ReadShareState(groupID string, key ShareKey) (state ShareState, found bool, err error) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return ShareState{}, false, groupError(groupID, c.refusal())
		}
		return ShareState{}, false, nil
	}
	defer g.mu.Unlock()
	if g.share == nil {
		if g.consumer != nil || g.protocolType != "" || len(g.offsets) > 0 {
			return ShareState{}, false, fmt.Errorf("group %q is not a share group: %w", groupID, ErrGroupNotFound)
		}
		return ShareState{}, false, nil
	}
	state, found = g.share.states[key]
	state.Batches = slices.Clone(state.Batches)
	return state, found, nil
}

// ShareStates returns every stored share-partition state of a share group
// (DescribeShareGroupOffsets); an unknown group is ErrGroupNotFound.
func (c *Coordinator) ShareStates(groupID string) (map[ShareKey]ShareState, error) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return nil, groupError(groupID, c.refusal())
		}
		return nil, groupError(groupID, ErrGroupNotFound)
	}
	defer g.mu.Unlock()
	if g.share == nil {
		return nil, fmt.Errorf("group %q is not a share group: %w", groupID, ErrGroupNotFound)
	}
	out := make(map[ShareKey]ShareState, len(g.share.states))
	for key, state := range g.share.states {
		state.Batches = slices.Clone(state.Batches)
		out[key] = state
	}
	return out, nil
}

// ShareOffset is one AlterShareGroupOffsets entry.
type ShareOffset struct {
	Key         ShareKey
	StartOffset int64
}

// AlterShareOffsets sets share-partitions' start offsets, forgetting their
// in-flight records (AlterShareGroupOffsets). The group must have no
// members (ErrNonEmptyGroup); a group that does not exist yet is created
// as an empty share group. Each altered partition's state epoch is bumped,
// so a leader still holding the old state is fenced on its next write and
// reloads.
func (c *Coordinator) AlterShareOffsets(ctx context.Context, groupID string, offsets []ShareOffset) error {
	g := c.lockGroup(groupID, true)
	if g == nil {
		return groupError(groupID, c.refusal())
	}
	defer g.unlock()
	sg, err := g.shareGroupFor(ctx, true)
	if err != nil {
		return err
	}
	if len(sg.members) > 0 {
		return groupError(groupID, ErrNonEmptyGroup)
	}
	records := []StoreRecord{shareGroupRecord(groupID, sg.epoch)}
	updated := make(map[ShareKey]ShareState, len(offsets))
	for _, offset := range offsets {
		stored := sg.states[offset.Key]
		state := ShareState{StateEpoch: stored.StateEpoch + 1, LeaderEpoch: stored.LeaderEpoch, StartOffset: offset.StartOffset}
		updated[offset.Key] = state
		records = append(records, shareStateRecord(groupID, offset.Key, state))
	}
	if err := c.appendRecords(ctx, g.partition, c.cfg.Now(), records); err != nil {
		return storeError(groupID, err)
	}
	for key, state := range updated {
		sg.states[key] = state
	}
	return nil
}

// DeleteShareOffsets forgets the share-partition states of the given
// topics (DeleteShareGroupOffsets): the next member starts them afresh
// from share.auto.offset.reset. The group must exist and have no members.
func (c *Coordinator) DeleteShareOffsets(ctx context.Context, groupID string, topicIDs [][16]byte) error {
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return groupError(groupID, c.refusal())
		}
		return groupError(groupID, ErrGroupNotFound)
	}
	defer g.mu.Unlock()
	if g.share == nil {
		return fmt.Errorf("group %q is not a share group: %w", groupID, ErrGroupNotFound)
	}
	sg := g.share
	if len(sg.members) > 0 {
		return groupError(groupID, ErrNonEmptyGroup)
	}
	var records []StoreRecord
	var deleted []ShareKey
	for key := range sg.states {
		if slices.Contains(topicIDs, key.TopicID) {
			deleted = append(deleted, key)
			records = append(records, StoreRecord{Key: encodeShareStateKey(groupID, key)})
		}
	}
	if len(records) == 0 {
		return nil
	}
	if err := c.appendRecords(ctx, g.partition, c.cfg.Now(), records); err != nil {
		return storeError(groupID, err)
	}
	for _, key := range deleted {
		delete(sg.states, key)
	}
	return nil
}
