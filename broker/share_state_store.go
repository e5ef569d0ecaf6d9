package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
)

// Share-partition state at the group's coordinator: a call on this
// broker's coordinator when it coordinates the group, else
// ReadShareGroupState / WriteShareGroupState (Kafka's share coordinator
// APIs, served here by the group coordinator) to the broker that does.

// shareCoordinatorNode is the broker coordinating groupID: the leader of
// its __consumer_offsets partition (-1: none known).
func (b *Broker) shareCoordinatorNode(groupID string) int32 {
	roles := b.topicRoles(group.OffsetsTopic)
	index := b.offsetsPartition(groupID)
	if int(index) >= len(roles) {
		return -1
	}
	return roles[index].Leader
}

// readyShareCoordinator makes sure the group's coordinator can be asked:
// __consumer_offsets exists (a share fetch may come before any
// FindCoordinator created it), and when this broker coordinates the
// group, its coordinator has loaded (waiting up to coordinatorLoadWait,
// as FindCoordinator does).
func (b *Broker) readyShareCoordinator(ctx context.Context, groupID string) error {
	if err := b.ensureInternalTopic(ctx, group.OffsetsTopic, b.config.settings.OffsetsTopicPartitions); err != nil {
		return fmt.Errorf("share state of group %q: %w", groupID, err)
	}
	if b.shareCoordinatorNode(groupID) == b.nodeID {
		wait, cancel := context.WithTimeout(ctx, coordinatorLoadWait)
		b.replication.groups.awaitLoaded(wait, b.offsetsPartition(groupID))
		cancel()
	}
	return nil
}

// readShareState reads one share-partition's state; found is false when
// none is stored.
func (b *Broker) readShareState(ctx context.Context, groupID string, key group.ShareKey) (group.ShareState, bool, error) {
	if err := b.readyShareCoordinator(ctx, groupID); err != nil {
		return group.ShareState{}, false, err
	}
	state, found, err := b.groupsFor(groupID).ReadShareState(groupID, key)
	if !errors.Is(err, group.ErrNotCoordinator) && !errors.Is(err, group.ErrCoordinatorLoadInProgress) {
		return state, found, err
	}
	node := b.shareCoordinatorNode(groupID)
	if node < 0 || node == b.nodeID {
		return state, found, err
	}
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = groupID
	topic := kmsg.NewReadShareGroupStateRequestTopic()
	topic.TopicID = key.TopicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = key.Partition, -1
	topic.Partitions = append(topic.Partitions, rp)
	req.Topics = append(req.Topics, topic)
	answer, err := b.peerRequest(ctx, node, req)
	if err != nil {
		return group.ShareState{}, false, fmt.Errorf("%w: read share state at coordinator %d: %w", group.ErrNotCoordinator, node, err)
	}
	resp := answer.(*kmsg.ReadShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return group.ShareState{}, false, fmt.Errorf("%w: coordinator %d answered %d topics", group.ErrNotCoordinator, node, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return group.ShareState{}, false, remoteShareError(p.ErrorCode, node)
	}
	if p.StartOffset < 0 {
		return group.ShareState{StateEpoch: p.StateEpoch, StartOffset: -1}, false, nil
	}
	state = group.ShareState{StateEpoch: p.StateEpoch, LeaderEpoch: -1, StartOffset: p.StartOffset}
	for _, batch := range p.StateBatches {
		state.Batches = append(state.Batches, group.ShareStateBatch{First: batch.FirstOffset, Last: batch.LastOffset, DeliveryCount: batch.DeliveryCount, State: batch.DeliveryState})
	}
	return state, true, nil
}

// writeShareState writes one share-partition's state; initialize is its
// first write (InitializeShareGroupState when remote).
func (b *Broker) writeShareState(ctx context.Context, groupID string, key group.ShareKey, state group.ShareState, initialize bool) error {
	err := b.groupsFor(groupID).WriteShareState(ctx, groupID, key, state, initialize)
	if !errors.Is(err, group.ErrNotCoordinator) && !errors.Is(err, group.ErrCoordinatorLoadInProgress) {
		return err
	}
	node := b.shareCoordinatorNode(groupID)
	if node < 0 || node == b.nodeID {
		return err
	}
	if initialize {
		return b.remoteInitializeShareState(ctx, node, groupID, key, state)
	}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = groupID
	topic := kmsg.NewWriteShareGroupStateRequestTopic()
	topic.TopicID = key.TopicID
	wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wp.Partition, wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset = key.Partition, state.StateEpoch, state.LeaderEpoch, state.StartOffset
	for _, batch := range state.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = batch.First, batch.Last, batch.State, batch.DeliveryCount
		wp.StateBatches = append(wp.StateBatches, sb)
	}
	topic.Partitions = append(topic.Partitions, wp)
	req.Topics = append(req.Topics, topic)
	answer, err := b.peerRequest(ctx, node, req)
	if err != nil {
		return fmt.Errorf("%w: write share state at coordinator %d: %w", group.ErrNotCoordinator, node, err)
	}
	resp := answer.(*kmsg.WriteShareGroupStateResponse)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return remoteShareError(p.ErrorCode, node)
			}
		}
	}
	return nil
}

// remoteInitializeShareState initializes a share-partition's state at the
// group's coordinator on another broker.
func (b *Broker) remoteInitializeShareState(ctx context.Context, node int32, groupID string, key group.ShareKey, state group.ShareState) error {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = groupID
	topic := kmsg.NewInitializeShareGroupStateRequestTopic()
	topic.TopicID = key.TopicID
	ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	ip.Partition, ip.StateEpoch, ip.StartOffset = key.Partition, state.StateEpoch, state.StartOffset
	topic.Partitions = append(topic.Partitions, ip)
	req.Topics = append(req.Topics, topic)
	answer, err := b.peerRequest(ctx, node, req)
	if err != nil {
		return fmt.Errorf("%w: initialize share state at coordinator %d: %w", group.ErrNotCoordinator, node, err)
	}
	for _, t := range answer.(*kmsg.InitializeShareGroupStateResponse).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return remoteShareError(p.ErrorCode, node)
			}
		}
	}
	return nil
}

// remoteShareError is the local sentinel of a coordinator's error code.
func remoteShareError(code int16, node int32) error {
	switch code {
	case kerr.FencedLeaderEpoch.Code:
		return fmt.Errorf("coordinator %d: %w", node, group.ErrFencedLeaderEpoch)
	case kerr.FencedStateEpoch.Code:
		return fmt.Errorf("coordinator %d: %w", node, group.ErrFencedStateEpoch)
	case kerr.GroupIDNotFound.Code:
		return fmt.Errorf("coordinator %d: %w", node, group.ErrGroupNotFound)
	case kerr.CoordinatorLoadInProgress.Code:
		return fmt.Errorf("coordinator %d: %w", node, group.ErrCoordinatorLoadInProgress)
	}
	return fmt.Errorf("coordinator %d: %w: %v", node, group.ErrNotCoordinator, kerr.ErrorForCode(code))
}

// shareStateErrorCode is the code a ReadShareGroupState or
// WriteShareGroupState answer carries for err.
func shareStateErrorCode(err error) int16 { return errcode.Of(err) }
