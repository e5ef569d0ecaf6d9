package api

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionedCluster is fakeCluster with topic "a" of 3 partitions and
// "b" of 2; any other name is unknown.
type partitionedCluster struct{ fakeCluster }

func (c partitionedCluster) AllTopics() []kmsg.MetadataResponseTopic {
	return []kmsg.MetadataResponseTopic{c.Topic("a", false), c.Topic("b", false)}
}

func (partitionedCluster) Topic(name string, _ bool) kmsg.MetadataResponseTopic {
	topic := kmsg.NewMetadataResponseTopic()
	topic.Topic = kmsg.StringPtr(name)
	count := map[string]int32{"a": 3, "b": 2}[name]
	if count == 0 {
		topic.ErrorCode = kerr.UnknownTopicOrPartition.Code
	}
	for i := range count {
		partition := kmsg.NewMetadataResponseTopicPartition()
		partition.Partition, partition.Leader, partition.LeaderEpoch = i, 1, 4
		partition.Replicas, partition.ISR = []int32{1, 2}, []int32{1}
		topic.Partitions = append(topic.Partitions, partition)
	}
	return topic
}

// pages follows DescribeTopicPartitions' cursor with a limit of 2
// partitions per answer and returns each page as "topic-partition" lists.
func pages(t *testing.T, r *Request, names ...string) [][]string {
	t.Helper()
	var out [][]string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for range 10 {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit, req.Cursor = 2, cursor
		for _, name := range names {
			topic := kmsg.NewDescribeTopicPartitionsRequestTopic()
			topic.Topic = name
			req.Topics = append(req.Topics, topic)
		}
		resp := serve(t, r, req).(*kmsg.DescribeTopicPartitionsResponse)
		var page []string
		for _, topic := range resp.Topics {
			if topic.ErrorCode != 0 {
				page = append(page, fmt.Sprintf("%s:%s", *topic.Topic, kerr.ErrorForCode(topic.ErrorCode).(*kerr.Error).Message))
				continue
			}
			for _, p := range topic.Partitions {
				page = append(page, fmt.Sprintf("%s-%d", *topic.Topic, p.Partition))
				if p.LeaderEpoch != 4 || len(p.Replicas) != 2 || len(p.ISR) != 1 || p.EligibleLeaderReplicas == nil {
					t.Errorf("%s-%d described as %+v", *topic.Topic, p.Partition, p)
				}
			}
		}
		out = append(out, page)
		if resp.NextCursor == nil {
			return out
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	t.Fatal("the cursor never ended")
	return nil
}

// DescribeTopicPartitions pages through the topics in name order, at most
// the limit's partitions an answer, with a cursor that resumes mid-topic;
// named topics the principal may not describe, or that do not exist, are
// their errors; listing every topic leaves out the undescribable ones.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	t.Parallel()
	onlyA := func(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
		return rt == kmsg.ACLResourceTypeTopic && name == "a"
	}
	open := &Request{Auth: fakeAuth{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Services: &Services{Cluster: partitionedCluster{}}}
	restricted := &Request{Auth: fakeAuth{enabled: true, allowed: onlyA}, Logger: open.Logger, Services: open.Services}
	for _, c := range []struct {
		name  string
		r     *Request
		names []string
		want  string
	}{
		{"every topic", open, nil, "[[a-0 a-1] [a-2 b-0] [b-1]]"},
		{"named, one unknown", open, []string{"b", "missing", "a"}, "[[a-0 a-1] [a-2 b-0] [b-1 missing:UNKNOWN_TOPIC_OR_PARTITION]]"},
		{"every topic, b not describable", restricted, nil, "[[a-0 a-1] [a-2]]"},
		{"named b, not describable", restricted, []string{"b"}, "[[b:TOPIC_AUTHORIZATION_FAILED]]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := fmt.Sprint(pages(t, c.r, c.names...))
			if got != c.want {
				t.Errorf("pages %s, want %s", got, c.want)
			}
		})
	}
}
