package broker

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// existingTopics is a TopicController whose topics all exist already.
type existingTopics struct{}

func (existingTopics) CreateTopic(context.Context, string, int32, int32, map[string]string) error {
	return fmt.Errorf("fake controller: %w", kerr.TopicAlreadyExists)
}
func (existingTopics) CreatePartitions(context.Context, string, int32) error { return nil }
func (existingTopics) DeleteTopic(context.Context, string) error             { return nil }
func (existingTopics) TopicConfigs(string) (map[string]string, bool)         { return nil, true }
func (existingTopics) SetTopicConfigs(context.Context, string, map[string]string) error {
	return nil
}

// A broker restarted over its data directory that has not had the
// controller's roles yet answers a Produce for a topic it holds on disk
// NOT_LEADER_OR_FOLLOWER, which clients retry after a metadata refresh,
// not UNKNOWN_TOPIC_OR_PARTITION, which kgo counts (it fails a partition's
// buffered records after 4, breaking an idempotent producer's sequence);
// once the roles arrive it takes the batch.
func TestReplicationRestartedBrokerWithoutRolesSaysNotLeader(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	c.createTopic("restarted", 1)
	leader := c.role("restarted", 0).Leader
	mustProduce(t, "before the restart", dialRaw(t, c.broker(leader)).produceAcks("restarted", 0, plainBatch(t, "a", 3), -1), 0)
	c.waitCaughtUp("restarted", 0)

	c.mu.Lock()
	old := c.brokers[leader]
	delete(c.brokers, leader)
	c.mu.Unlock()
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	// Restarted as a cluster member is (topic administration through the
	// controller, auto-creation on), before the controller published to it.
	restarted, err := Start(context.Background(), Config{NodeID: leader, Listen: "127.0.0.1:0", DataDir: c.dirs[leader],
		Properties: map[string]string{"auto.create.topics.enable": "true", "replica.lag.time.max.ms": "3000"},
		Logger:     slog.New(slog.DiscardHandler), Replication: &ReplicationConfig{ISR: c, Topics: existingTopics{}}})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.brokers[leader] = restarted
	c.mu.Unlock()
	got := dialRaw(t, restarted).produceAcks("restarted", 0, plainBatch(t, "b", 2), -1)
	if got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to the restarted broker before its roles: error code %d, want NOT_LEADER_OR_FOLLOWER (%d)",
			got.ErrorCode, kerr.NotLeaderForPartition.Code)
	}
	// A view that lags the controller (the restarted broker's quorum
	// replica has not caught up: the topic is not in it yet) is not
	// UNKNOWN_TOPIC_OR_PARTITION either.
	if err := restarted.ApplyPartitionRoles(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	got = dialRaw(t, restarted).produceAcks("restarted", 0, plainBatch(t, "b", 2), -1)
	if got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to the restarted broker with a lagging view: error code %d, want NOT_LEADER_OR_FOLLOWER (%d)",
			got.ErrorCode, kerr.NotLeaderForPartition.Code)
	}
	c.publish()
	mustProduce(t, "after the roles", dialRaw(t, restarted).produceAcks("restarted", 0, plainBatch(t, "b", 2), -1), 3)
}
