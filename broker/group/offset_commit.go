package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit (key 8), versions 0–10. Members commit with their
// generation and member id, checked against the group; a commit with
// generation -1 and no member id (v0 always) is a "simple" commit, allowed
// only while the group has no members, and creates the group if needed.
// v2–v4's retention time is ignored (offsets expire as Kafka 2.1+ does,
// offsets.retention after the group empties); v7+ carry the instance id;
// v10 names topics by id, resolved with Config.Topics.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	topics := make([]commitTopic, len(req.Topics))
	for i, topic := range req.Topics {
		topics[i].name = topic.Topic
		if req.Version >= 10 {
			topics[i].name, _ = c.topicName(topic.TopicID)
		}
		for _, partition := range topic.Partitions {
			leaderEpoch := partition.LeaderEpoch
			if req.Version < 6 {
				leaderEpoch = -1
			}
			topics[i].partitions = append(topics[i].partitions, commitPartition{
				partition: partition.Partition, offset: partition.Offset, leaderEpoch: leaderEpoch, metadata: partition.Metadata,
			})
		}
	}
	generation, memberID, instanceID := req.Generation, req.MemberID, req.InstanceID
	if req.Version < 1 {
		generation, memberID = -1, ""
	}
	if req.Version < 7 {
		instanceID = nil
	}
	c.commit(ctx, req.Group, generation, memberID, instanceID, topics, req.Version >= 10)
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = req.Version
	for i, topic := range req.Topics {
		responseTopic := kmsg.OffsetCommitResponseTopic{Topic: topic.Topic, TopicID: topic.TopicID}
		for _, partition := range topics[i].partitions {
			responseTopic.Partitions = append(responseTopic.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: partition.partition, ErrorCode: partition.errorCode})
		}
		resp.Topics = append(resp.Topics, responseTopic)
	}
	return resp
}

// commit validates and writes a plain offset commit, setting each
// partition's error code in topics.
func (c *Coordinator) commit(ctx context.Context, groupID string, generation int32, memberID string, instanceID *string, topics []commitTopic, byTopicID bool) {
	g := c.lockGroup(groupID, generation < 0)
	if g == nil {
		code := kerr.IllegalGeneration.Code // Kafka's answer for a member of an unknown group
		if c.isClosed() {
			code = kerr.NotCoordinator.Code
		}
		setCommitErrors(topics, code)
		return
	}
	defer g.mu.Unlock()
	now := c.cfg.Now()
	if code := g.validateCommit(generation, memberID, instanceID, now); code != 0 {
		setCommitErrors(topics, code)
		return
	}
	staged := c.stageCommits(g.id, topics, byTopicID, now)
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
// error code.
type commitPartition struct {
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    *string
	errorCode   int16
}

func setCommitErrors(topics []commitTopic, code int16) {
	for i := range topics {
		for j := range topics[i].partitions {
			topics[i].partitions[j].errorCode = code
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
			if code := c.checkCommittedPartition(byTopicID, topics[i].name, partition.metadata); code != 0 {
				partition.errorCode = code
				continue
			}
			value := offsetValue{Offset: partition.offset, LeaderEpoch: partition.leaderEpoch, CommitTimestamp: now.UnixMilli()}
			if partition.metadata != nil {
				value.Metadata = *partition.metadata
			}
			key := offsetKey{Group: groupID, Topic: topics[i].name, Partition: partition.partition}
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
// staged partitions answer COORDINATOR_NOT_AVAILABLE (retriable).
func (c *Coordinator) appendCommits(ctx context.Context, g *group, topics []commitTopic, staged []stagedOffset, batch StoreBatch) (int64, bool) {
	if len(staged) == 0 {
		return 0, false
	}
	for _, offset := range staged {
		batch.Records = append(batch.Records, offset.record)
	}
	if err := c.store.Append(ctx, g.partition, batch); err != nil {
		for _, offset := range staged {
			topics[offset.where[0]].partitions[offset.where[1]].errorCode = kerr.CoordinatorNotAvailable.Code
		}
		return 0, false
	}
	return c.appendOrder.Add(1), true
}

// checkCommittedPartition returns the per-partition error for a commit.
// byTopicID is set when the request named topics by id (an unresolved id
// leaves the name empty).
func (c *Coordinator) checkCommittedPartition(byTopicID bool, topic string, metadata *string) int16 {
	switch {
	case byTopicID && topic == "":
		return kerr.UnknownTopicID.Code
	case metadata != nil && len(*metadata) > c.cfg.OffsetMetadataMaxBytes:
		return kerr.OffsetMetadataTooLarge.Code
	}
	return 0
}

// validateCommit checks a commit against the group (Kafka's order). A
// member's commit also counts as a heartbeat.
func (g *group) validateCommit(generation int32, memberID string, instanceID *string, now time.Time) int16 {
	if generation < 0 && g.state == stateEmpty {
		return 0 // simple (admin) commit to a group without members
	}
	if generation < 0 && memberID == "" && instanceID == nil {
		return kerr.UnknownMemberID.Code // simple commit while members are active
	}
	m, ok := g.members[memberID]
	switch {
	case g.isFencedInstance(instanceID, memberID):
		return kerr.FencedInstanceID.Code
	case !ok:
		return kerr.UnknownMemberID.Code
	case generation != g.generation:
		return kerr.IllegalGeneration.Code
	case g.state == stateCompletingRebalance:
		return kerr.RebalanceInProgress.Code
	}
	m.lastHeartbeat = now
	return 0
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
