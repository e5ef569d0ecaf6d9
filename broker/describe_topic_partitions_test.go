package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTopicPartitions against the broker: a topic's partitions with
// their leader, epoch, replicas and ISR, in pages of the limit asked.
func TestDescribeTopicPartitionsServed(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	c.createTopic("described", 3)
	client := c.client()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	topic := kmsg.NewDescribeTopicPartitionsRequestTopic()
	topic.Topic = "described"
	req.Topics, req.ResponsePartitionLimit = append(req.Topics, topic), 2
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || resp.NextCursor == nil || resp.NextCursor.Partition != 2 {
		t.Fatalf("first page %+v", resp)
	}
	for _, p := range resp.Topics[0].Partitions {
		role := c.role("described", p.Partition)
		if p.LeaderID != role.Leader || p.LeaderEpoch != role.LeaderEpoch || len(p.Replicas) != 3 || len(p.ISR) != len(role.ISR) {
			t.Errorf("partition %d: %+v, role %+v", p.Partition, p, role)
		}
	}
}
