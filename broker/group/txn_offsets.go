package group

import (
	"context"
	"fmt"
)

// CommitTxnOffsets stages offsets committed inside a transaction
// (TxnOffsetCommit). They are appended to the group's __consumer_offsets
// partition as a transactional batch of the producer and held per
// producer id; CompleteTxn makes them visible (commit) or drops them
// (abort). The member is checked like CommitOffsets when the request names
// one (a generation, member id or instance id). It returns one error per
// requested partition, indexed like req.Topics.
//
// The caller (the broker's handler) must already have checked with the
// transaction coordinator that the producer id and epoch are current and
// that the group was added to the transaction (AddOffsetsToTxn).
func (c *Coordinator) CommitTxnOffsets(ctx context.Context, req TxnCommitRequest) [][]error {
	topics := c.commitTopics(req.CommitRequest)
	c.txnCommit(ctx, req, topics)
	return commitErrors(topics)
}

// txnCommit validates the member (when the request names one) and stages
// the offsets under the producer id, setting each partition's error.
func (c *Coordinator) txnCommit(ctx context.Context, req TxnCommitRequest, topics []commitTopic) {
	g := c.lockGroup(req.Group, true)
	if g == nil {
		setCommitErrors(topics, groupError(req.Group, c.refusal()))
		return
	}
	defer g.mu.Unlock()
	now := c.cfg.Now()
	if g.consumer != nil {
		if err := g.validateConsumerCommit(req.Generation, req.MemberID, false); err != nil {
			setCommitErrors(topics, err)
			return
		}
	} else if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		m, ok := g.members[req.MemberID]
		switch {
		case g.isFencedInstance(req.InstanceID, req.MemberID):
			setCommitErrors(topics, memberError(g.id, req.MemberID, ErrFencedInstance))
			return
		case !ok:
			setCommitErrors(topics, memberError(g.id, req.MemberID, ErrUnknownMember))
			return
		case req.Generation != g.generation:
			setCommitErrors(topics, memberError(g.id, req.MemberID, ErrIllegalGeneration))
			return
		}
		m.lastHeartbeat = now
	}
	staged := c.stageCommits(g.id, topics, req.ByTopicID, now)
	batch := StoreBatch{ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Transactional: true, TimestampMillis: now.UnixMilli()}
	if order, ok := c.appendCommits(ctx, g, topics, staged, batch); ok {
		for _, offset := range staged {
			g.stagePendingTxn(req.ProducerID, offset.key, offsetEntry{value: offset.value, appendOrder: order})
		}
	}
}

// stagePendingTxn records a pending transactional offset and indexes the
// group under the producer id. Called with g.mu held (then takes c.mu).
func (g *group) stagePendingTxn(producerID int64, key topicPartition, entry offsetEntry) {
	offsets, ok := g.pendingTxn[producerID]
	if !ok {
		offsets = make(map[topicPartition]offsetEntry)
		g.pendingTxn[producerID] = offsets
	}
	offsets[key] = entry
	c := g.coordinator
	c.mu.Lock()
	groups, ok := c.txnGroups[producerID]
	if !ok {
		groups = make(map[string]struct{})
		c.txnGroups[producerID] = groups
	}
	groups[g.id] = struct{}{}
	c.mu.Unlock()
}

// CompleteTxn ends producerID's transaction in every group holding its
// pending offsets: it appends a commit or abort marker to each group's
// partition, then applies (commit) or drops (abort) the offsets. A
// committed offset replaces the current one only if it was appended after
// it. Safe to call again after an error, and for producers with nothing
// pending (a no-op).
func (c *Coordinator) CompleteTxn(ctx context.Context, producerID int64, producerEpoch int16, commit bool) error {
	c.mu.Lock()
	groupIDs := make([]string, 0, len(c.txnGroups[producerID]))
	for id := range c.txnGroups[producerID] {
		groupIDs = append(groupIDs, id)
	}
	c.mu.Unlock()
	for _, id := range groupIDs {
		if err := c.completeTxnInGroup(ctx, id, producerID, producerEpoch, commit); err != nil {
			return err
		}
	}
	return nil
}

func (c *Coordinator) completeTxnInGroup(ctx context.Context, groupID string, producerID int64, producerEpoch int16, commit bool) error {
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return fmt.Errorf("complete transaction of producer %d: %w", producerID, ErrStoreClosed)
		}
		c.forgetTxnGroup(producerID, groupID) // the group was deleted
		return nil
	}
	defer g.mu.Unlock()
	offsets, ok := g.pendingTxn[producerID]
	if ok {
		marker := StoreBatch{
			ProducerID:      producerID,
			ProducerEpoch:   producerEpoch,
			Transactional:   true,
			Marker:          &TxnMarker{Commit: commit},
			TimestampMillis: c.cfg.Now().UnixMilli(),
		}
		if err := c.store.Append(ctx, g.partition, marker); err != nil {
			return fmt.Errorf("complete transaction of producer %d in group %q: %w", producerID, groupID, err)
		}
		if commit {
			g.applyCommittedTxn(offsets)
		}
		delete(g.pendingTxn, producerID)
	}
	c.forgetTxnGroup(producerID, groupID)
	return nil
}

func (c *Coordinator) forgetTxnGroup(producerID int64, groupID string) {
	c.mu.Lock()
	delete(c.txnGroups[producerID], groupID)
	if len(c.txnGroups[producerID]) == 0 {
		delete(c.txnGroups, producerID)
	}
	c.mu.Unlock()
}

func (g *group) applyCommittedTxn(offsets map[topicPartition]offsetEntry) {
	for key, entry := range offsets {
		if current, ok := g.offsets[key]; !ok || current.appendOrder < entry.appendOrder {
			g.offsets[key] = entry
		}
	}
}
