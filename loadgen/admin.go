package loadgen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopic creates topic with the given partitions and replication
// factor (an existing topic is an error: every run uses fresh topics), then
// waits until metadata shows a leader for every partition.
func createTopic(ctx context.Context, client *kgo.Client, topic string, partitions, replicationFactor int) error {
	request := kmsg.NewPtrCreateTopicsRequest()
	request.TimeoutMillis = 30_000
	requestTopic := kmsg.NewCreateTopicsRequestTopic()
	requestTopic.Topic = topic
	requestTopic.NumPartitions = int32(partitions)
	requestTopic.ReplicationFactor = int16(replicationFactor)
	request.Topics = append(request.Topics, requestTopic)
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for _, created := range response.Topics {
		if err := kerr.ErrorForCode(created.ErrorCode); err != nil {
			message := ""
			if created.ErrorMessage != nil {
				message = ": " + *created.ErrorMessage
			}
			return fmt.Errorf("create topic %s: %w%s", topic, err, message)
		}
	}
	return waitForLeaders(ctx, client, topic, partitions)
}

// waitForLeaders polls metadata every 50 ms until every partition of topic
// has a leader, or ctx ends.
func waitForLeaders(ctx context.Context, client *kgo.Client, topic string, partitions int) error {
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	var lastProblem error
	for {
		request := kmsg.NewPtrMetadataRequest()
		requestTopic := kmsg.NewMetadataRequestTopic()
		requestTopic.Topic = kmsg.StringPtr(topic)
		request.Topics = append(request.Topics, requestTopic)
		response, err := request.RequestWith(ctx, client)
		lastProblem = err
		if err == nil {
			lastProblem = leadersProblem(response, topic, partitions)
			if lastProblem == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for leaders of %s: %w (last: %v)", topic, ctx.Err(), lastProblem)
		case <-ticker.C:
		}
	}
}

// leadersProblem says why metadata does not yet show every partition led.
func leadersProblem(response *kmsg.MetadataResponse, topic string, partitions int) error {
	for _, metadata := range response.Topics {
		if metadata.Topic == nil || *metadata.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(metadata.ErrorCode); err != nil {
			return err
		}
		if len(metadata.Partitions) != partitions {
			return fmt.Errorf("%d of %d partitions in metadata", len(metadata.Partitions), partitions)
		}
		for _, partition := range metadata.Partitions {
			if err := kerr.ErrorForCode(partition.ErrorCode); err != nil || partition.Leader < 0 {
				return fmt.Errorf("partition %d has no leader (%v)", partition.Partition, err)
			}
		}
		return nil
	}
	return fmt.Errorf("topic %s not in metadata", topic)
}

// endOffsets returns, per partition of topic, the offset after the last
// record a reader with the given isolation may read (the high watermark, or
// the last stable offset for read_committed), from ListOffsets with
// timestamp -1.
func endOffsets(ctx context.Context, client *kgo.Client, topic string, partitions int, readCommitted bool) ([]int64, error) {
	// A cluster answers retriable errors while leadership moves (a broker
	// that just restarted may not know the topic yet, a partition has no
	// leader for a moment), and a broker just killed and restarted by a
	// fault refuses connections until it listens again while the metadata
	// still names it leader: ask again, for up to endOffsetsRetryFor.
	var err error
	giveUp := time.Now().Add(endOffsetsRetryFor)
	for {
		var offsets []int64
		offsets, err = endOffsetsOnce(ctx, client, topic, partitions, readCommitted)
		if err == nil || !retriableEndOffsets(err) || !time.Now().Before(giveUp) {
			return offsets, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// endOffsetsRetryFor bounds how long endOffsets asks again.
const endOffsetsRetryFor = 30 * time.Second

// retriableEndOffsets: a Kafka error the protocol calls retriable, or a
// failure to reach the broker (no Kafka error at all); not the caller's
// context ending.
func retriableEndOffsets(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var kafkaErr *kerr.Error
	if errors.As(err, &kafkaErr) {
		return kafkaErr.Retriable
	}
	return true
}

// endOffsetsOnce is one ListOffsets round of endOffsets.
func endOffsetsOnce(ctx context.Context, client *kgo.Client, topic string, partitions int, readCommitted bool) ([]int64, error) {
	request := kmsg.NewPtrListOffsetsRequest()
	request.ReplicaID = -1
	if readCommitted {
		request.IsolationLevel = 1
	}
	requestTopic := kmsg.NewListOffsetsRequestTopic()
	requestTopic.Topic = topic
	for partition := range int32(partitions) {
		requestPartition := kmsg.NewListOffsetsRequestTopicPartition()
		requestPartition.Partition = partition
		requestPartition.Timestamp = -1 // latest
		requestPartition.CurrentLeaderEpoch = -1
		requestTopic.Partitions = append(requestTopic.Partitions, requestPartition)
	}
	request.Topics = append(request.Topics, requestTopic)
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	offsets := make([]int64, partitions)
	found := make([]bool, partitions)
	for _, responseTopic := range response.Topics {
		for _, partition := range responseTopic.Partitions {
			if partition.Partition < 0 || int(partition.Partition) >= partitions {
				continue
			}
			if err := kerr.ErrorForCode(partition.ErrorCode); err != nil {
				return nil, fmt.Errorf("list end offset of %s[%d]: %w", topic, partition.Partition, err)
			}
			offsets[partition.Partition] = partition.Offset
			found[partition.Partition] = true
		}
	}
	for partition, ok := range found {
		if !ok {
			return nil, fmt.Errorf("list end offsets of %s: no answer for partition %d", topic, partition)
		}
	}
	return offsets, nil
}

// deleteTopics deletes a run's topics once verified, so an in-memory target
// (kfake) frees them and an existing cluster is left as it was found. It is
// best effort: the error is returned for the caller to note.
func deleteTopics(ctx context.Context, client *kgo.Client, topics ...string) error {
	request := kmsg.NewPtrDeleteTopicsRequest()
	request.TimeoutMillis = 30_000
	for _, topic := range topics {
		if topic == "" {
			continue
		}
		requestTopic := kmsg.NewDeleteTopicsRequestTopic()
		requestTopic.Topic = kmsg.StringPtr(topic)
		request.Topics = append(request.Topics, requestTopic)
		request.TopicNames = append(request.TopicNames, topic)
	}
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return fmt.Errorf("delete topics %v: %w", topics, err)
	}
	for _, deleted := range response.Topics {
		if err := kerr.ErrorForCode(deleted.ErrorCode); err != nil {
			return fmt.Errorf("delete topic %v: %w", deleted.Topic, err)
		}
	}
	return nil
}

// clusterWholeWait bounds how long the next cell waits for the brokers a
// cell's process faults killed or paused to serve again.
const clusterWholeWait = time.Minute

// waitClusterWhole waits, after a cell whose faults killed, restarted or
// paused brokers, until Metadata lists at least brokers brokers again and
// each of them answers: the next cell measures its own mode on a whole
// cluster, not the last one's recovery (a restarted broker reloads its
// partitions and catches up with the metadata before it serves, seconds
// on a loaded machine; until then an RF-3 topic cannot be created). It
// gives up after clusterWholeWait and returns why, for the log; the cell
// then runs and says what failed.
func waitClusterWhole(ctx context.Context, client *kgo.Client, brokers int) error {
	ctx, cancel := context.WithTimeout(ctx, clusterWholeWait)
	defer cancel()
	var last error
	for {
		last = clusterAnswers(ctx, client, brokers)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster was not whole again within %s: %w", clusterWholeWait, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// clusterAnswers is one look of waitClusterWhole: Metadata lists brokers
// brokers and each answers ApiVersions.
func clusterAnswers(ctx context.Context, client *kgo.Client, brokers int) error {
	request := kmsg.NewPtrMetadataRequest()
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if len(response.Brokers) < brokers {
		return fmt.Errorf("metadata lists %d of %d brokers", len(response.Brokers), brokers)
	}
	for _, broker := range response.Brokers {
		if _, err := client.Broker(int(broker.NodeID)).Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
			return fmt.Errorf("broker %d: %w", broker.NodeID, err)
		}
	}
	return nil
}
