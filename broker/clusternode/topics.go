package clusternode

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/exactly-eos/exactly/broker/quorum"
)

// topicController is the broker's TopicController on the quorum: each
// call is a quorum request, then a wait until the member's apply loop has
// applied the resulting image, so the broker answers from roles that hold
// the change.
type topicController struct{ m *Member }

func (c topicController) CreateTopic(ctx context.Context, name string, partitions, replicationFactor int32, configs map[string]string) error {
	if replicationFactor == -1 {
		replicationFactor = c.m.replicationFactor
	}
	_, err := c.m.node.CreateTopic(ctx, quorum.CreateTopicRequest{Name: name, Partitions: partitions, ReplicationFactor: replicationFactor, Configs: configs})
	if err != nil {
		return kafkaError(err)
	}
	return c.m.waitApplied(ctx)
}

func (c topicController) CreatePartitions(ctx context.Context, name string, count int32) error {
	if _, err := c.m.node.CreatePartitions(ctx, name, count); err != nil {
		return kafkaError(err)
	}
	return c.m.waitApplied(ctx)
}

func (c topicController) DeleteTopic(ctx context.Context, name string) error {
	if err := c.m.node.DeleteTopic(ctx, name); err != nil {
		return kafkaError(err)
	}
	return c.m.waitApplied(ctx)
}

func (c topicController) TopicConfigs(name string) (map[string]string, bool) {
	topic, ok := c.m.node.Image().Topic(name)
	if !ok {
		return nil, false
	}
	return maps.Clone(topic.Configs), true
}

func (c topicController) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	if _, err := c.m.node.SetTopicConfigs(ctx, name, configs); err != nil {
		return kafkaError(err)
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
	{quorum.ErrNotController, kerr.NotController},
	{quorum.ErrClosed, kerr.NotController},
}

// kafkaError wraps a quorum error with the Kafka error it stands for
// (REQUEST_TIMED_OUT for a deadline, NOT_CONTROLLER for anything else, a
// retriable code).
func kafkaError(err error) error {
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
