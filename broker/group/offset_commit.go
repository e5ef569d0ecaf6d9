package group

import (
	"context"
	"fmt"
	"time"
)

// CommitOffsets validates and writes a plain offset commit (OffsetCommit).
// Members commit with their generation and member id, checked against the
// group; a simple commit (generation -1, no member id) is allowed only
// while the group has no members, and creates the group if needed. It
// returns one error per requested partition (nil: committed), indexed like
// req.Topics and their partitions; a commit refused as a whole has the
// same error for every partition.
func (c *Coordinator) CommitOffsets(ctx context.Context, req CommitRequest) [][]error {
	topics := c.commitTopics(req)
	c.commit(ctx, req, topics)
	return commitErrors(topics)
}

func (c *Coordinator) commit(ctx context.Context, req CommitRequest, topics []commitTopic) {
	g := c.lockGroup(req.Group, req.Generation < 0)
	if g == nil {
		err := memberError(req.Group, req.MemberID, ErrIllegalGeneration) // Kafka's answer for a member of an unknown group
		if c.isClosed() {
			err = groupError(req.Group, c.refusal())
		}
		setCommitErrors(topics, err)
		return
	}
	defer g.mu.Unlock()
	now := c.cfg.Now()
	validate := func() error { return g.validateCommit(req.Generation, req.MemberID, req.InstanceID, now) }
	if g.share != nil {
		validate = func() error { return fmt.Errorf("group %q is a share group: %w", g.id, ErrGroupNotFound) }
	}
	if g.consumer != nil {
		validate = func() error { return g.validateConsumerCommit(req.Generation, req.MemberID, req.LegacyVersion) }
	}
	if err := validate(); err != nil {
		setCommitErrors(topics, err)
		return
	}
	staged := c.stageCommits(g.id, topics, req.ByTopicID, now)
	batch := StoreBatch{ProducerID: -1, ProducerEpoch: -1, TimestampMillis: now.UnixMilli()}
	if order, ok := c.appendCommits(ctx, g, topics, staged, batch); ok {
		for _, offset := range staged {
			g.offsets[offset.key] = offsetEntry{value: offset.value, appendOrder: order}
		}
	}
}

// commitTopic is one topic of an OffsetCommit or TxnOffsetCommit request.
type commitTopic struct {
	name       string // "" when the request's topic id did not resolve
	partitions []commitPartition
}

// commitPartition is one partition to commit and, after the commit, its
// error.
type commitPartition struct {
	CommitPartition
	err error
}

// commitTopics copies the request's topics, resolving topic ids.
func (c *Coordinator) commitTopics(req CommitRequest) []commitTopic {
	topics := make([]commitTopic, len(req.Topics))
	for i, topic := range req.Topics {
		topics[i].name = topic.Name
		if req.ByTopicID {
			topics[i].name, _ = c.topicName(topic.ID)
		}
		for _, partition := range topic.Partitions {
			topics[i].partitions = append(topics[i].partitions, commitPartition{CommitPartition: partition})
		}
	}
	return topics
}

func commitErrors(topics []commitTopic) [][]error {
	errs := make([][]error, len(topics))
	for i, topic := range topics {
		errs[i] = make([]error, len(topic.partitions))
		for j, partition := range topic.partitions {
			errs[i][j] = partition.err
		}
	}
	return errs
}

func setCommitErrors(topics []commitTopic, err error) {
	for i := range topics {
		for j := range topics[i].partitions {
			topics[i].partitions[j].err = err
		}
	}
}

// stagedOffset is one offset validated for commit, not yet applied.
type stagedOffset struct {
	key    topicPartition
	value  offsetValue
	record StoreRecord
	where  [2]int // topic and partition index in the request
}

// stageCommits checks every partition (setting the error code of those
// refused) and returns the offsets to write.
func (c *Coordinator) stageCommits(groupID string, topics []commitTopic, byTopicID bool, now time.Time) []stagedOffset {
	var staged []stagedOffset
	for i := range topics {
		for j := range topics[i].partitions {
			partition := &topics[i].partitions[j]
			if err := c.checkCommittedPartition(byTopicID, topics[i].name, partition.Metadata); err != nil {
				partition.err = err
				continue
			}
			value := offsetValue{Offset: partition.Offset, LeaderEpoch: partition.LeaderEpoch, CommitTimestamp: now.UnixMilli()}
			if partition.Metadata != nil {
				value.Metadata = *partition.Metadata
			}
			key := offsetKey{Group: groupID, Topic: topics[i].name, Partition: partition.Partition}
			staged = append(staged, stagedOffset{
				key:    topicPartition{Topic: key.Topic, Partition: key.Partition},
				value:  value,
				record: StoreRecord{Key: encodeOffsetKey(key), Value: encodeOffsetValue(value)},
				where:  [2]int{i, j},
			})
		}
	}
	return staged
}

// appendCommits writes the staged offsets as one batch (batch gives its
// producer fields) and returns their append order. On a store failure the
// staged partitions answer ErrCoordinatorUnavailable (retriable).
func (c *Coordinator) appendCommits(ctx context.Context, g *group, topics []commitTopic, staged []stagedOffset, batch StoreBatch) (int64, bool) {
	if len(staged) == 0 {
		return 0, false
	}
	for _, offset := range staged {
		batch.Records = append(batch.Records, offset.record)
	}
	if err := c.store.Append(ctx, g.partition, batch); err != nil {
		err = storeError(g.id, err)
		for _, offset := range staged {
			topics[offset.where[0]].partitions[offset.where[1]].err = err
		}
		return 0, false
	}
	return c.appendOrder.Add(1), true
}

// checkCommittedPartition returns the per-partition error for a commit.
// byTopicID is set when the request named topics by id (an unresolved id
// leaves the name empty).
func (c *Coordinator) checkCommittedPartition(byTopicID bool, topic string, metadata *string) error {
	switch {
	case byTopicID && topic == "":
		return ErrUnknownTopicID
	case metadata != nil && len(*metadata) > c.cfg.OffsetMetadataMaxBytes:
		return fmt.Errorf("topic %q: %d bytes of metadata, at most %d: %w", topic, len(*metadata), c.cfg.OffsetMetadataMaxBytes, ErrMetadataTooLarge)
	}
	return nil
}

// validateCommit checks a commit against the group (Kafka's order). A
// member's commit also counts as a heartbeat.
func (g *group) validateCommit(generation int32, memberID string, instanceID *string, now time.Time) error {
	if generation < 0 && g.state == stateEmpty {
		return nil // simple (admin) commit to a group without members
	}
	if generation < 0 && memberID == "" && instanceID == nil {
		return memberError(g.id, memberID, ErrUnknownMember) // simple commit while members are active
	}
	m, ok := g.members[memberID]
	switch {
	case g.isFencedInstance(instanceID, memberID):
		return memberError(g.id, memberID, ErrFencedInstance)
	case !ok:
		return memberError(g.id, memberID, ErrUnknownMember)
	case generation != g.generation:
		return memberError(g.id, memberID, ErrIllegalGeneration)
	case g.state == stateCompletingRebalance:
		return groupError(g.id, ErrRebalanceInProgress)
	}
	m.lastHeartbeat = now
	return nil
}

func (c *Coordinator) topicName(id [16]byte) (string, bool) {
	if c.cfg.Topics == nil {
		return "", false
	}
	return c.cfg.Topics.TopicName(id)
}

func (c *Coordinator) topicID(name string) ([16]byte, bool) {
	if c.cfg.Topics == nil {
		return [16]byte{}, false
	}
	return c.cfg.Topics.TopicID(name)
}
