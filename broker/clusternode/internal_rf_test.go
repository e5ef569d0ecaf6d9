package clusternode

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/quorum"
)

// TestInternalTopicsWaitForTheirReplicas: with one of three brokers down,
// FindCoordinator answers COORDINATOR_NOT_AVAILABLE rather than creating
// __consumer_offsets with two replicas for good; once the third broker is
// back the topic is created with three.
func TestInternalTopicsWaitForTheirReplicas(t *testing.T) {
	c := newTestCluster(t, 3, coordinatorProps())
	c.waitMetadata(3, "", 0)
	c.stop(3)
	c.waitImage("broker 3 fenced", func(img *quorum.Image) bool {
		b, ok := img.Broker(3)
		return ok && b.Fenced
	})

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.listen[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 0, "g", []string{"g"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32))
	cancel()
	if err != nil || len(resp.Coordinators) != 1 {
		t.Fatalf("FindCoordinator with a broker down: %v %+v", err, resp)
	}
	answer := resp.Coordinators[0]
	if answer.ErrorCode != kerr.CoordinatorNotAvailable.Code || answer.ErrorMessage == nil || !strings.Contains(*answer.ErrorMessage, "3 live brokers") {
		t.Fatalf("FindCoordinator with a broker down: %v %v, want COORDINATOR_NOT_AVAILABLE waiting for 3 live brokers",
			kerr.ErrorForCode(answer.ErrorCode), answer.ErrorMessage)
	}
	if topic, ok := c.anyMember().node.Image().Topic("__consumer_offsets"); ok {
		t.Fatalf("__consumer_offsets created with a broker down: %+v", topic.Partitions[0])
	}

	c.start(3)
	findCoordinator(t, c.listen[1], 0, "g")
	// Member 1 answered from roles that hold the topic: its image has it.
	topic, ok := c.members[1].node.Image().Topic("__consumer_offsets")
	if !ok {
		t.Fatal("__consumer_offsets missing after FindCoordinator succeeded")
	}
	for _, p := range topic.Partitions {
		if len(p.Replicas) != 3 {
			t.Fatalf("__consumer_offsets-%d has replicas %v, want 3", p.Partition, p.Replicas)
		}
	}
}
