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
	t.Parallel()
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
	// Member 1 learns of the fencing a moment after the quorum's image
	// has it (its view follows the image): until then it may answer
	// COORDINATOR_NOT_AVAILABLE for another reason. It must never answer
	// with a coordinator while a broker is down.
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 0, "g", []string{"g"}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32))
		cancel()
		if err != nil || len(resp.Coordinators) != 1 {
			t.Fatalf("FindCoordinator with a broker down: %v %+v", err, resp)
		}
		answer := resp.Coordinators[0]
		message := ""
		if answer.ErrorMessage != nil {
			message = *answer.ErrorMessage
		}
		if answer.ErrorCode != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("FindCoordinator with a broker down: %v %q, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(answer.ErrorCode), message)
		}
		if strings.Contains(message, "3 live brokers") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("FindCoordinator with a broker down: %q, want COORDINATOR_NOT_AVAILABLE waiting for 3 live brokers", message)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if topic, ok := c.anyMember().Node().Image().Topic("__consumer_offsets"); ok {
		t.Fatalf("__consumer_offsets created with a broker down: %+v", topic.Partitions[0])
	}

	c.start(3)
	findCoordinator(t, c.listen[1], 0, "g")
	// Member 1 answered from roles that hold the topic: its image has it.
	topic, ok := c.members[1].Node().Image().Topic("__consumer_offsets")
	if !ok {
		t.Fatal("__consumer_offsets missing after FindCoordinator succeeded")
	}
	for _, p := range topic.Partitions {
		if len(p.Replicas) != 3 {
			t.Fatalf("__consumer_offsets-%d has replicas %v, want 3", p.Partition, p.Replicas)
		}
	}
}
