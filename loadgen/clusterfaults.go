package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/faults"
)

// selectBroker is the launched cluster's faults.Selector: the index
// among the cluster's processes (node id - 1) of the broker pickBroker
// finds.
func (e *faultEnv) selectBroker(ctx context.Context, action faults.ProcessActionKind) (int, error) {
	broker, err := e.pickBroker(ctx, faults.ProcessAction{Action: action}, 0)
	if err != nil {
		return -1, err
	}
	return int(broker.NodeID) - 1, nil // node ids are 1..n in process order
}

// pickBroker finds, when action fires, the broker it acts on, as the
// cluster's Metadata names it: the one that leads the most partitions of
// the run's topic (leader-kill, leader-pause, broker-partition), the one
// holding a replica of it that leads the fewest, a follower of most of
// them (slow-follower), the transaction coordinator of the run's first
// load producer
// (coordinator-kill), the coordinator of its consume group
// (group-coordinator-kill), or for an action that does not select, the broker
// at its index in node id order or else one drawn with the plan's seed
// (the same brokers on every run of the plan).
func (e *faultEnv) pickBroker(ctx context.Context, action faults.ProcessAction, fired int) (faults.Broker, error) {
	client, err := kgo.NewClient(append(e.metadataOptions(), kgo.ClientID("exactly-loadgen-fault-select"))...)
	if err != nil {
		return faults.Broker{}, err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	metadata, err := settledTopicMetadata(ctx, client, e.topic)
	if err != nil {
		return faults.Broker{}, err
	}
	brokers := metadataBrokers(metadata)
	var node int32
	switch action.Action {
	case faults.ProcessLeaderKill, faults.ProcessLeaderPause, faults.ProcessBrokerPartition:
		node, err = topLeader(metadata, e.topic)
	case faults.ProcessSlowFollower:
		node, err = leastLeader(metadata, e.topic)
	case faults.ProcessCoordinatorKill:
		node, err = findCoordinator(ctx, client, coordinatorTransaction, e.firstTransactionalID)
	case faults.ProcessGroupCoordinatorKill:
		node, err = findCoordinator(ctx, client, coordinatorGroup, e.groupID)
	default:
		if len(brokers) == 0 {
			return faults.Broker{}, errors.New("metadata lists no broker")
		}
		index := rand.New(rand.NewPCG(uint64(e.plan.Seed), uint64(fired))).IntN(len(brokers))
		if action.Broker != nil {
			if *action.Broker >= len(brokers) {
				return faults.Broker{}, fmt.Errorf("broker %d, but metadata lists %d brokers", *action.Broker, len(brokers))
			}
			index = *action.Broker
		}
		return brokers[index], nil
	}
	if err != nil {
		return faults.Broker{}, err
	}
	for _, broker := range brokers {
		if broker.NodeID == node {
			return broker, nil
		}
	}
	return faults.Broker{}, fmt.Errorf("node %d is not among the brokers of metadata", node)
}

// metadataOptions are the options of the fault machinery's own clients:
// the target's address and security, never the fault proxy.
func (e *faultEnv) metadataOptions() []kgo.Opt {
	if e.cluster != nil {
		return []kgo.Opt{kgo.SeedBrokers(e.cluster.bootstrap...)}
	}
	return e.targetOptions
}

// topicMetadata asks for the brokers and topics' partitions.
func topicMetadata(ctx context.Context, client *kgo.Client, topics ...string) (*kmsg.MetadataResponse, error) {
	request := kmsg.NewPtrMetadataRequest()
	for _, topic := range topics {
		requestTopic := kmsg.NewMetadataRequestTopic()
		requestTopic.Topic = kmsg.StringPtr(topic)
		request.Topics = append(request.Topics, requestTopic)
	}
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("metadata of %v: %w", topics, err)
	}
	for _, t := range response.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("metadata of %s: %w", *t.Topic, err)
		}
	}
	return response, nil
}

// settledTopicMetadata is topicMetadata once the topic is known and each
// of its partitions has a leader: a fault that fires as the run starts
// can ask a broker that has not yet applied the topic's creation, or
// before its first leaders are elected. It asks again every 100 ms until
// ctx ends, and then returns what was still wrong.
func settledTopicMetadata(ctx context.Context, client *kgo.Client, topic string) (*kmsg.MetadataResponse, error) {
	return pollMetadata(ctx, client, []string{topic}, 100*time.Millisecond, func(response *kmsg.MetadataResponse) error {
		return leaderless(response, topic)
	})
}

// pollMetadata asks for topics' Metadata every interval until settled
// accepts the answer (nil), or ctx ends; then it returns the last error.
// One attempt may hit a broker that is stopped: each is bounded to 5 s.
func pollMetadata(ctx context.Context, client *kgo.Client, topics []string, interval time.Duration,
	settled func(*kmsg.MetadataResponse) error) (*kmsg.MetadataResponse, error) {
	retry := time.NewTicker(interval)
	defer retry.Stop()
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		response, err := topicMetadata(attempt, client, topics...)
		cancel()
		if err == nil {
			err = settled(response)
		}
		if err == nil {
			return response, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-retry.C:
		}
	}
}

// leaderless says which partition of topic has no leader in a Metadata
// response, or that it lists none; nil when every one has a leader.
func leaderless(response *kmsg.MetadataResponse, topic string) error {
	for _, t := range response.Topics {
		if len(t.Partitions) == 0 {
			return fmt.Errorf("metadata of %s lists no partition", topic)
		}
		for _, partition := range t.Partitions {
			if partition.Leader < 0 {
				return fmt.Errorf("%s/%d has no leader", topic, partition.Partition)
			}
		}
	}
	return nil
}

// metadataBrokers are the brokers of a Metadata response in node id order.
func metadataBrokers(response *kmsg.MetadataResponse) []faults.Broker {
	brokers := make([]faults.Broker, 0, len(response.Brokers))
	for _, b := range response.Brokers {
		brokers = append(brokers, faults.Broker{NodeID: b.NodeID, Host: b.Host, Port: b.Port})
	}
	slices.SortFunc(brokers, func(a, b faults.Broker) int { return int(a.NodeID) - int(b.NodeID) })
	return brokers
}

// topLeader is the node that leads the most partitions of topic in a
// Metadata response (the lowest id on a tie).
func topLeader(response *kmsg.MetadataResponse, topic string) (int32, error) {
	led := map[int32]int{}
	for _, t := range response.Topics {
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

// leastLeader is the node that leads the fewest partitions of topic in a
// Metadata response among the nodes holding a replica of it (the lowest
// id on a tie): the follower of the most partitions.
func leastLeader(response *kmsg.MetadataResponse, topic string) (int32, error) {
	led := map[int32]int{} // every replica holder, with the partitions it leads
	for _, t := range response.Topics {
		for _, partition := range t.Partitions {
			for _, replica := range partition.Replicas {
				led[replica] += 0
			}
			if partition.Leader >= 0 {
				led[partition.Leader]++
			}
		}
	}
	best, count := int32(-1), 0
	for node, n := range led {
		if best < 0 || n < count || (n == count && node < best) {
			best, count = node, n
		}
	}
	if best < 0 {
		return -1, fmt.Errorf("no partition of %s lists a replica", topic)
	}
	return best, nil
}

// FindCoordinator's coordinator types.
const (
	coordinatorGroup       int8 = 0
	coordinatorTransaction int8 = 1
)

// findCoordinator is the node FindCoordinator names for key (a group id or
// a transactional id, by kind).
func findCoordinator(ctx context.Context, client *kgo.Client, kind int8, key string) (int32, error) {
	request := kmsg.NewPtrFindCoordinatorRequest()
	request.CoordinatorType = kind
	request.CoordinatorKey = key
	request.CoordinatorKeys = []string{key}
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return -1, fmt.Errorf("find the coordinator of %s: %w", key, err)
	}
	if len(response.Coordinators) > 0 {
		coordinator := response.Coordinators[0]
		if err := kerr.ErrorForCode(coordinator.ErrorCode); err != nil {
			return -1, fmt.Errorf("find the coordinator of %s: %w", key, err)
		}
		return coordinator.NodeID, nil
	}
	if err := kerr.ErrorForCode(response.ErrorCode); err != nil {
		return -1, fmt.Errorf("find the coordinator of %s: %w", key, err)
	}
	if response.NodeID < 0 {
		return -1, errors.New("find the coordinator of " + key + ": no coordinator")
	}
	return response.NodeID, nil
}

// brokerRecovered is an external cluster's faults.External.Recovered: it
// polls Metadata until broker is listed again and every partition of the
// run's topics has a leader and all its replicas in sync, or ctx ends
// (then it says what was still short).
func (e *faultEnv) brokerRecovered(ctx context.Context, broker faults.Broker) error {
	client, err := kgo.NewClient(append(e.metadataOptions(), kgo.ClientID("exactly-loadgen-fault-recovery"))...)
	if err != nil {
		return err
	}
	defer client.Close()
	_, err = pollMetadata(ctx, client, e.topics, 200*time.Millisecond, func(response *kmsg.MetadataResponse) error {
		return shortOf(response, broker)
	})
	return err
}

// shortOf says what a Metadata response lacks for the cluster to count as
// recovered from a fault on broker, or nil.
func shortOf(response *kmsg.MetadataResponse, broker faults.Broker) error {
	if !slices.ContainsFunc(response.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == broker.NodeID }) {
		return fmt.Errorf("node %d is not in metadata", broker.NodeID)
	}
	for _, topic := range response.Topics {
		for _, partition := range topic.Partitions {
			switch {
			case partition.Leader < 0:
				return fmt.Errorf("%s/%d has no leader", *topic.Topic, partition.Partition)
			case len(partition.ISR) < len(partition.Replicas):
				return fmt.Errorf("%s/%d has ISR %v of replicas %v", *topic.Topic, partition.Partition, partition.ISR, partition.Replicas)
			}
		}
	}
	return nil
}
