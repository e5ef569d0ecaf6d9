package group

import (
	"context"
	"fmt"
	"time"
)

// replayState accumulates the store's contents: the latest value per key
// wins and tombstones delete, as log compaction would keep them.
type replayState struct {
	coordinator *Coordinator
	offsets     map[string]map[topicPartition]offsetEntry
	metadata    map[string]groupMetadataValue
	consumers   map[string]*consumerReplay
	shares      map[string]*shareReplay
	// pending holds transactional offsets per partition and producer id
	// until the producer's marker on that partition.
	pending map[int32]map[int64][]pendingReplayOffset
}

type pendingReplayOffset struct {
	group string
	key   topicPartition
	entry offsetEntry
}

// load replays the store and builds the groups. Groups with members come
// back Stable with fresh session deadlines (their members keep
// heartbeating, or expire); groups without come back Empty.
func (c *Coordinator) load(ctx context.Context) error {
	state := &replayState{
		coordinator: c,
		offsets:     make(map[string]map[topicPartition]offsetEntry),
		metadata:    make(map[string]groupMetadataValue),
		consumers:   make(map[string]*consumerReplay),
		shares:      make(map[string]*shareReplay),
		pending:     make(map[int32]map[int64][]pendingReplayOffset),
	}
	if err := c.store.Replay(ctx, state.apply); err != nil {
		return err
	}
	now := c.cfg.Now()
	for id, value := range state.metadata {
		c.groups[id] = restoreGroup(c, id, value, now)
	}
	for id, replay := range state.consumers {
		session, _ := c.consumerTimeouts(id)
		if cg := replay.build(session, now); cg != nil {
			g := newGroup(c, id, now)
			g.consumer = cg
			c.groups[id] = g // the consumer records are newer than a classic one's (it is deleted on conversion)
		}
	}
	for id, replay := range state.shares {
		g := c.groupForLoad(id, now)
		g.share = newShareGroup()
		g.share.epoch = replay.epoch
		g.share.states = replay.states
	}
	for id, offsets := range state.offsets {
		g := c.groupForLoad(id, now)
		g.offsets = offsets
	}
	for _, producers := range state.pending {
		for producerID, offsets := range producers {
			for _, offset := range offsets {
				g := c.groupForLoad(offset.group, now)
				g.stagePendingTxn(producerID, offset.key, offset.entry)
			}
		}
	}
	return nil
}

func (c *Coordinator) groupForLoad(id string, now time.Time) *group {
	g, ok := c.groups[id]
	if !ok {
		g = newGroup(c, id, now)
		c.groups[id] = g
	}
	return g
}

func restoreGroup(c *Coordinator, id string, value groupMetadataValue, now time.Time) *group {
	g := newGroup(c, id, now)
	g.protocolType = value.ProtocolType
	g.generation = value.Generation
	if value.Protocol != nil {
		g.protocol = *value.Protocol
	}
	g.stateSince = time.UnixMilli(value.CurrentStateMillis)
	for _, stored := range value.Members {
		m := &member{
			id:               stored.MemberID,
			instanceID:       stored.InstanceID,
			clientID:         stored.ClientID,
			clientHost:       stored.ClientHost,
			sessionTimeout:   time.Duration(stored.SessionTimeout) * time.Millisecond,
			rebalanceTimeout: time.Duration(stored.RebalanceTimeout) * time.Millisecond,
			protocolType:     value.ProtocolType,
			protocols:        []Protocol{{Name: g.protocol, Metadata: stored.Subscription}},
			assignment:       stored.Assignment,
			lastHeartbeat:    now,
			joinedGeneration: value.Generation,
		}
		g.addMember(m)
	}
	if value.Leader != nil {
		if _, ok := g.members[*value.Leader]; ok {
			g.leader = *value.Leader
		}
	}
	if len(g.members) > 0 {
		g.state = stateStable
	}
	return g
}

// apply replays one batch.
func (s *replayState) apply(partition int32, batch StoreBatch) error {
	order := s.coordinator.appendOrder.Add(1)
	switch {
	case batch.Marker != nil:
		producers := s.pending[partition]
		if batch.Marker.Commit {
			for _, offset := range producers[batch.ProducerID] {
				s.applyCommitted(offset)
			}
		}
		delete(producers, batch.ProducerID)
		return nil
	case batch.Transactional:
		for _, record := range batch.Records {
			if err := s.stageTransactional(partition, batch.ProducerID, record, order); err != nil {
				return err
			}
		}
		return nil
	}
	for _, record := range batch.Records {
		if err := s.applyRecord(record, order); err != nil {
			return err
		}
	}
	return nil
}

func (s *replayState) applyRecord(record StoreRecord, order int64) error {
	key, err := decodeKey(record.Key)
	if err != nil {
		return err
	}
	if key.Share != 0 {
		return s.applyShareRecord(key, record.Value)
	}
	if key.Consumer != 0 {
		replay := s.consumers[key.Group]
		if replay == nil {
			replay = newConsumerReplay()
			s.consumers[key.Group] = replay
		}
		if err := replay.apply(key.Consumer, key.Member, record.Value); err != nil {
			return fmt.Errorf("group %q: %w", key.Group, err)
		}
		return nil
	}
	if key.Offset == nil {
		if record.Value == nil {
			delete(s.metadata, key.Group)
			return nil
		}
		value, err := decodeGroupValue(record.Value)
		if err != nil {
			return fmt.Errorf("group %q: %w", key.Group, err)
		}
		s.metadata[key.Group] = value
		return nil
	}
	groupOffsets := s.offsets[key.Offset.Group]
	tp := topicPartition{Topic: key.Offset.Topic, Partition: key.Offset.Partition}
	if record.Value == nil {
		delete(groupOffsets, tp)
		if len(groupOffsets) == 0 {
			delete(s.offsets, key.Offset.Group)
		}
		return nil
	}
	value, err := decodeOffsetValue(record.Value)
	if err != nil {
		return fmt.Errorf("offset of group %q %s-%d: %w", key.Offset.Group, tp.Topic, tp.Partition, err)
	}
	if groupOffsets == nil {
		groupOffsets = make(map[topicPartition]offsetEntry)
		s.offsets[key.Offset.Group] = groupOffsets
	}
	groupOffsets[tp] = offsetEntry{value: value, appendOrder: order}
	return nil
}

func (s *replayState) stageTransactional(partition int32, producerID int64, record StoreRecord, order int64) error {
	key, err := decodeKey(record.Key)
	if err != nil {
		return err
	}
	if key.Offset == nil || record.Value == nil {
		return fmt.Errorf("%w: transactional batch holds a non-offset record", errCorruptRecord)
	}
	value, err := decodeOffsetValue(record.Value)
	if err != nil {
		return err
	}
	producers, ok := s.pending[partition]
	if !ok {
		producers = make(map[int64][]pendingReplayOffset)
		s.pending[partition] = producers
	}
	producers[producerID] = append(producers[producerID], pendingReplayOffset{
		group: key.Offset.Group,
		key:   topicPartition{Topic: key.Offset.Topic, Partition: key.Offset.Partition},
		entry: offsetEntry{value: value, appendOrder: order},
	})
	return nil
}

func (s *replayState) applyCommitted(offset pendingReplayOffset) {
	groupOffsets := s.offsets[offset.group]
	if groupOffsets == nil {
		groupOffsets = make(map[topicPartition]offsetEntry)
		s.offsets[offset.group] = groupOffsets
	}
	if current, ok := groupOffsets[offset.key]; !ok || current.appendOrder < offset.entry.appendOrder {
		groupOffsets[offset.key] = offset.entry
	}
}
