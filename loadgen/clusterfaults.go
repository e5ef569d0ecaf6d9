package loadgen

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/faults"
)

// selectBroker is the cluster's faults.Selector: the index among the
// cluster's processes (node id - 1) of the broker that leads the most
// partitions of the run's topic (leader-kill, broker-partition), or that coordinates the
// run's first load producer's transactions (coordinator-kill), asked of
// the cluster when the action fires.
func (e *faultEnv) selectBroker(ctx context.Context, action faults.ProcessActionKind) (int, error) {
	client, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.bootstrap...), kgo.ClientID("exactly-loadgen-fault-select"))
	if err != nil {
		return -1, err
	}
	defer client.Close()
	var node int32
	switch action {
	case faults.ProcessLeaderKill, faults.ProcessBrokerPartition:
		node, err = topLeader(ctx, client, e.topic)
	case faults.ProcessCoordinatorKill:
		node, err = transactionCoordinator(ctx, client, e.firstTransactionalID)
	default:
		return -1, fmt.Errorf("%s does not pick a broker", action)
	}
	if err != nil {
		return -1, err
	}
	return int(node) - 1, nil // node ids are 1..n in process order
}

// topLeader is the node that leads the most partitions of topic (the
// lowest id on a tie).
func topLeader(ctx context.Context, client *kgo.Client, topic string) (int32, error) {
	request := kmsg.NewPtrMetadataRequest()
	requestTopic := kmsg.NewMetadataRequestTopic()
	requestTopic.Topic = kmsg.StringPtr(topic)
	request.Topics = append(request.Topics, requestTopic)
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return -1, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	led := map[int32]int{}
	for _, t := range response.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return -1, fmt.Errorf("metadata of %s: %w", topic, err)
		}
		for _, partition := range t.Partitions {
			if partition.Leader >= 0 {
				led[partition.Leader]++
			}
		}
	}
	best, count := int32(-1), 0
	for node, n := range led {
		if n > count || (n == count && node < best) {
			best, count = node, n
		}
	}
	if best < 0 {
		return -1, fmt.Errorf("no partition of %s has a leader", topic)
	}
	return best, nil
}

// transactionCoordinator is the node FindCoordinator names for
// transactionalID.
func transactionCoordinator(ctx context.Context, client *kgo.Client, transactionalID string) (int32, error) {
	request := kmsg.NewPtrFindCoordinatorRequest()
	request.CoordinatorType = 1
	request.CoordinatorKey = transactionalID
	request.CoordinatorKeys = []string{transactionalID}
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return -1, fmt.Errorf("find the coordinator of %s: %w", transactionalID, err)
	}
	if len(response.Coordinators) > 0 {
		coordinator := response.Coordinators[0]
		if err := kerr.ErrorForCode(coordinator.ErrorCode); err != nil {
			return -1, fmt.Errorf("find the coordinator of %s: %w", transactionalID, err)
		}
		return coordinator.NodeID, nil
	}
	if err := kerr.ErrorForCode(response.ErrorCode); err != nil {
		return -1, fmt.Errorf("find the coordinator of %s: %w", transactionalID, err)
	}
	if response.NodeID < 0 {
		return -1, errors.New("find the coordinator of " + transactionalID + ": no coordinator")
	}
	return response.NodeID, nil
}
