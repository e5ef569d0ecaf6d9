package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/exactly-eos/exactly/broker/quorum"
)

// quorumTopics is the broker's TopicController on its quorum: each call
// is a quorum request, then a wait until the member's apply loop has
// applied the resulting image, so the broker answers from roles that hold
// the change.
type quorumTopics struct{ m *member }

func (c quorumTopics) CreateTopic(ctx context.Context, name string, partitions, replicationFactor int32, configs map[string]string) error {
	if err := c.m.waitCaughtUpApplied(ctx); err != nil {
		return quorumKafkaError(err)
	}
	if replicationFactor == -1 {
		replicationFactor = c.m.replicationFactor
	}
	_, err := c.m.node.CreateTopic(ctx, quorum.CreateTopicRequest{Name: name, Partitions: partitions, ReplicationFactor: replicationFactor, Configs: configs})
	if errors.Is(err, quorum.ErrTopicAlreadyExists) {
		// Created by someone else, maybe a moment ago: once applied
		// here, the caller finds the topic it was told exists.
		if waitErr := c.m.waitApplied(ctx); waitErr != nil {
			err = errors.Join(err, waitErr)
		}
	}
	if err != nil {
		return quorumKafkaError(err)
	}
	return c.m.waitApplied(ctx)
}

func (c quorumTopics) CreatePartitions(ctx context.Context, name string, count int32) error {
	if err := c.m.waitCaughtUpApplied(ctx); err != nil {
		return quorumKafkaError(err)
	}
	if _, err := c.m.node.CreatePartitions(ctx, name, count); err != nil {
		return quorumKafkaError(err)
	}
	return c.m.waitApplied(ctx)
}

func (c quorumTopics) DeleteTopic(ctx context.Context, name string) error {
	if err := c.m.waitCaughtUpApplied(ctx); err != nil {
		return quorumKafkaError(err)
	}
	if err := c.m.node.DeleteTopic(ctx, name); err != nil {
		return quorumKafkaError(err)
	}
	return c.m.waitApplied(ctx)
}

func (c quorumTopics) TopicConfigs(name string) (map[string]string, bool) {
	topic, ok := c.m.node.Image().Topic(name)
	if !ok {
		return nil, false
	}
	return maps.Clone(topic.Configs), true
}

func (c quorumTopics) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	if err := c.m.waitCaughtUpApplied(ctx); err != nil {
		return quorumKafkaError(err)
	}
	if _, err := c.m.node.SetTopicConfigs(ctx, name, configs); err != nil {
		return quorumKafkaError(err)
	}
	return c.m.waitApplied(ctx)
}

// AlterReassignment starts or (target nil) cancels a partition's
// reassignment (PartitionMover).
func (c quorumTopics) AlterReassignment(ctx context.Context, topic string, partition int32, target []int32) error {
	if err := c.m.waitCaughtUpApplied(ctx); err != nil {
		return quorumKafkaError(err)
	}
	if _, err := c.m.node.AlterReassignment(ctx, topic, partition, target); err != nil {
		return quorumKafkaError(err)
	}
	return c.m.waitApplied(ctx)
}

// ElectLeader elects a partition's preferred (or, unclean, any live)
// replica (PartitionMover).
func (c quorumTopics) ElectLeader(ctx context.Context, topic string, partition int32, unclean bool) error {
	if err := c.m.waitCaughtUpApplied(ctx); err != nil {
		return quorumKafkaError(err)
	}
	if _, err := c.m.node.ElectLeader(ctx, topic, partition, unclean); err != nil {
		return quorumKafkaError(err)
	}
	return c.m.waitApplied(ctx)
}

// quorumCodes maps the quorum's sentinels to the Kafka errors clients get.
var quorumCodes = []struct {
	err  error
	code *kerr.Error
}{
	{quorum.ErrTopicAlreadyExists, kerr.TopicAlreadyExists},
	{quorum.ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
	{quorum.ErrInvalidTopic, kerr.InvalidTopicException},
	{quorum.ErrInvalidPartitions, kerr.InvalidPartitions},
	{quorum.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{quorum.ErrInvalidRequest, kerr.InvalidRequest},
	{quorum.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{quorum.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
	{quorum.ErrElectionNotNeeded, kerr.ElectionNotNeeded},
	{quorum.ErrPreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable},
	{quorum.ErrEligibleLeadersNotAvailable, kerr.EligibleLeadersNotAvailable},
	{quorum.ErrNotController, kerr.NotController},
	{quorum.ErrClosed, kerr.NotController},
}

// quorumKafkaError wraps a quorum error with the Kafka error it stands for
// (REQUEST_TIMED_OUT for a deadline, NOT_CONTROLLER for anything else, a
// retriable code).
func quorumKafkaError(err error) error {
	for _, m := range quorumCodes {
		if errors.Is(err, m.err) {
			return fmt.Errorf("%w: %w", m.code, err)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", kerr.RequestTimedOut, err)
	}
	return fmt.Errorf("%w: %w", kerr.NotController, err)
}
