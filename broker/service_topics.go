package broker

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/exactly-eos/exactly/broker/api"
	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicService is the broker as api.Topics, the service package api's handlers see.
type topicService struct{ b *Broker }

// NameByID returns the name of the topic with the given id: a topic with a
// partition here, or any topic of the controller's view.
func (s topicService) NameByID(id [16]byte) (string, bool) {
	if t := s.b.topicByID(id); t != nil {
		return t.name, true
	}
	return s.b.clusterTopicByID(id)
}

// ListOffset is [Broker.listOffset] on the topic named topic, with the
// partition's current leader epoch ([Broker.currentLeaderEpochOf]) when it
// answers.
func (s topicService) ListOffset(topic string, rp kmsg.ListOffsetsRequestTopicPartition, version int16, readCommitted bool) (offset, timestamp int64, leaderEpoch int32, err error) {
	b := s.b
	t := b.topicByName(topic)
	offset, timestamp, err = b.listOffset(t, topic, rp, version, readCommitted)
	if err != nil {
		return 0, 0, 0, err
	}
	return offset, timestamp, b.currentLeaderEpochOf(t, rp.Partition), nil
}

// EndOffsetOfEpoch answers from the partition's leader-epoch checkpoint
// ([partition.Partition.EndOffsetOfEpoch]) once
// [partition.Partition.CheckLeader] accepts currentLeaderEpoch.
func (s topicService) EndOffsetOfEpoch(topic string, partition, currentLeaderEpoch, epoch int32) (leaderEpoch int32, endOffset int64, err error) {
	b := s.b
	t := b.topicByName(topic)
	if t == nil {
		if elsewhere := b.topicElsewhere([16]byte{}, topic, false); elsewhere != nil {
			return -1, -1, elsewhere
		}
		return -1, -1, fmt.Errorf("%w: %s", errUnknownTopic, topic)
	}
	p, err := b.partitionOf(t, partition)
	if err != nil {
		return -1, -1, err
	}
	if err := p.CheckLeader(currentLeaderEpoch); err != nil {
		return -1, -1, err
	}
	leaderEpoch, endOffset = p.EndOffsetOfEpoch(epoch)
	return leaderEpoch, endOffset, nil
}

// Special timestamps of ListOffsets.
const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
)

// listOffset answers one partition of a ListOffsets request for the topic
// t named name (nil when there is none here): the offset and timestamp rp
// asks for, from the partition's leader. Offsets are batch-granular:
// batches are never decompressed.
func (b *Broker) listOffset(t *topic, name string, rp kmsg.ListOffsetsRequestTopicPartition, version int16, readCommitted bool) (offset, timestamp int64, err error) {
	if t == nil {
		if elsewhere := b.topicElsewhere([16]byte{}, name, false); elsewhere != nil {
			return 0, 0, elsewhere
		}
		return 0, 0, fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	p, err := b.partitionOf(t, rp.Partition)
	if err != nil {
		return 0, 0, err
	}
	if err := p.CheckLeader(rp.CurrentLeaderEpoch); err != nil {
		return 0, 0, err
	}
	if p.Closed() {
		return 0, 0, fmt.Errorf("%w: %s", errUnknownTopic, p.Name())
	}
	switch {
	case rp.Timestamp == listLatest && readCommitted:
		return p.LastStableOffset(), -1, nil
	case rp.Timestamp == listLatest:
		return p.HighWatermark(), -1, nil
	case rp.Timestamp == listEarliest, rp.Timestamp == listEarliestLocal && version >= 8:
		return p.Log().LogStartOffset(), -1, nil
	case rp.Timestamp == listMaxTimestamp && version >= 7:
		return p.MaxTimestampOffset()
	case rp.Timestamp >= 0:
		offset, timestamp, found := p.Log().OffsetForTimestamp(rp.Timestamp)
		if !found {
			return -1, -1, nil
		}
		return offset, timestamp, nil
	}
	return 0, 0, fmt.Errorf("%w: timestamp %d at ListOffsets v%d", errInvalidRequest, rp.Timestamp, version)
}

// currentLeaderEpochOf is the leader epoch of partition index of t (0
// when unknown).
func (b *Broker) currentLeaderEpochOf(t *topic, index int32) int32 {
	if t == nil {
		return leaderEpoch
	}
	p, err := b.partitionOf(t, index)
	if err != nil {
		return leaderEpoch
	}
	return p.CurrentLeaderEpoch()
}

// LogDir describes the broker's data directory: every local partition's
// size on disk and how far its log end lags its high watermark, and the
// file system's size and free space.
func (s topicService) LogDir() api.LogDir {
	b := s.b
	dir := api.LogDir{Path: b.dataDir, TotalBytes: -1, UsableBytes: -1}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(b.dataDir, &fs); err == nil {
		dir.TotalBytes = int64(fs.Blocks) * fs.Bsize
		dir.UsableBytes = int64(fs.Bavail) * fs.Bsize
	}
	for _, t := range b.sortedTopics() {
		for index, p := range b.partitionsOf(t) {
			if p == nil {
				continue
			}
			log := p.Log()
			dir.Partitions = append(dir.Partitions, api.LogDirPartition{Topic: t.name, Partition: int32(index),
				Size: log.Size(), OffsetLag: max(0, p.HighWatermark()-log.LogEndOffset())})
		}
	}
	return dir
}

// DeleteRecords is [partition.Partition.DeleteRecordsBefore] on a
// partition led here, then [partition.Partition.WaitLowWatermark], refused (POLICY_VIOLATION) on a topic whose
// cleanup.policy does not include delete, as in Kafka: a compacted
// topic's records go by key, not by offset.
func (s topicService) DeleteRecords(ctx context.Context, topic string, index int32, offset int64, timeout time.Duration) (int64, error) {
	b := s.b
	t := b.topicByName(topic)
	if t == nil {
		if int(index) < len(b.topicRoles(topic)) {
			return -1, fmt.Errorf("%w: no replica of %s-%d here", errNotLeader, topic, index)
		}
		return -1, fmt.Errorf("%w: %s", errUnknownTopic, topic)
	}
	p, err := b.partitionOf(t, index)
	if err != nil {
		return -1, err
	}
	if !t.config.Load().deleteRetained {
		return -1, fmt.Errorf("%w: records of %s cannot be deleted by offset: its cleanup.policy is compact", errcode.ErrPolicyViolation, topic)
	}
	logStart, err := p.DeleteRecordsBefore(offset)
	if err != nil {
		return -1, err
	}
	return p.WaitLowWatermark(ctx, b.ctx.Done(), logStart, timeout)
}
