package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/exactly-eos/exactly/broker/txn"
)

// A partition leader that does not know the topic yet (its view of the
// metadata lags the coordinator's: it has just restarted, or has not
// applied the topic's creation) answers a marker UNKNOWN_TOPIC_OR_PARTITION.
// The coordinator retries that partition, as Kafka does, rather than
// counting the marker done: a marker skipped on a live partition leaves
// the transaction open there, holding the last stable offset, and the
// producer's next transaction would commit the aborted records with its
// own. A topic the coordinator's own view no longer has counts as
// deleted.
func TestMarkerToLeaderWithoutTheTopicIsRetried(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	c.mu.Lock()
	c.exclude[3] = true // broker 3 hears of no new topic
	c.mu.Unlock()
	c.createTopic("unheard", 3) // partition 2 led by broker 3
	if leader := c.role("unheard", 2).Leader; leader != 3 {
		t.Fatalf("unheard-2 led by %d, want 3", leader)
	}
	coordinator := c.broker(1)
	marker := markerWrite{producerID: 7, producerEpoch: 1, commit: false,
		partitions: []txn.TopicPartition{{Topic: "unheard", Partition: 2}}}
	err := coordinator.writeMarkersToLeaders(context.Background(), marker)
	var failed *txn.MarkerError
	if !errors.As(err, &failed) || len(failed.Failed) != 1 || failed.Failed[0] != marker.partitions[0] {
		t.Fatalf("marker to a leader that does not know the topic: %v, want a MarkerError naming unheard-2", err)
	}

	// Once broker 3 hears of the topic, the retried marker is written.
	c.mu.Lock()
	delete(c.exclude, 3)
	c.mu.Unlock()
	c.publish()
	if err := coordinator.writeMarkersToLeaders(context.Background(), marker); err != nil {
		t.Fatalf("marker once the leader knows the topic: %v", err)
	}

	// A deleted topic: the coordinator's view has no roles for it.
	if err := c.DeleteTopic(context.Background(), "unheard"); err != nil {
		t.Fatal(err)
	}
	if err := coordinator.writeMarkersToLeaders(context.Background(), marker); err != nil {
		t.Fatalf("marker for a deleted topic: %v, want done", err)
	}
}

// /readyz (Broker.Ready) waits for the coordinator shards of the
// partitions led here: while one is loading, its clients are told
// COORDINATOR_LOAD_IN_PROGRESS, and a load balancer should not send them.
func TestReadyWaitsForCoordinatorShards(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 1, nil)
	b := c.broker(1)
	if !b.Ready() {
		t.Fatal("a started broker with no coordinator shard is not ready")
	}
	loading := &coordinatorShard[*txn.Coordinator]{index: 7}
	shards := &b.replication.txns
	shards.mu.Lock()
	if shards.shards == nil {
		shards.shards = map[int32]*coordinatorShard[*txn.Coordinator]{}
	}
	shards.shards[loading.index] = loading
	shards.mu.Unlock()
	if b.Ready() {
		t.Error("ready while a transaction coordinator shard is loading")
	}
	shards.mu.Lock()
	loading.loaded = true
	shards.mu.Unlock()
	if !b.Ready() {
		t.Error("not ready once every shard is loaded")
	}
	shards.mu.Lock()
	delete(shards.shards, loading.index)
	shards.mu.Unlock()
}
