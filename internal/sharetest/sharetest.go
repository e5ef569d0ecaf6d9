// Package sharetest holds what the share group (KIP-932) tests of the
// broker and of the cluster share: raw ShareFetch and ShareAcknowledge
// requests for one partition, and the check that after a broker's crash
// or a leader's move exactly the records acquired and not accepted come
// back, with their delivery count one higher. It is imported by tests
// only.
package sharetest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FetchRequest is a ShareFetch v2 of partition 0 of topicID for member,
// at session epoch epoch, acquiring up to 1000 records within 2 s.
func FetchRequest(group, member string, epoch int32, topicID [16]byte) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
	req.MaxWaitMillis, req.MaxRecords, req.MaxBytes = 2000, 1000, 1<<20
	topic := kmsg.NewShareFetchRequestTopic()
	topic.TopicID = topicID
	topic.Partitions = append(topic.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	req.Topics = append(req.Topics, topic)
	return req
}

// AcceptRequest is a ShareAcknowledge v2 accepting offsets [first, last]
// of partition 0 of topicID for member at session epoch epoch.
func AcceptRequest(group, member string, epoch int32, topicID [16]byte, first, last int64) *kmsg.ShareAcknowledgeRequest {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version = 2
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
	topic := kmsg.NewShareAcknowledgeRequestTopic()
	topic.TopicID = topicID
	partition := kmsg.NewShareAcknowledgeRequestTopicPartition()
	batch := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	batch.FirstOffset, batch.LastOffset, batch.AcknowledgeTypes = first, last, []int8{1}
	partition.AcknowledgementBatches = append(partition.AcknowledgementBatches, batch)
	topic.Partitions = append(topic.Partitions, partition)
	req.Topics = append(req.Topics, topic)
	return req
}

// AcquiredCounts lists the delivery count of every offset a ShareFetch
// acquired, in offset order; an error code in the answer fails the test.
func AcquiredCounts(t testing.TB, resp *kmsg.ShareFetchResponse) []int16 {
	t.Helper()
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("share fetch: %v", err)
	}
	var counts []int16
	for _, topic := range resp.Topics {
		for _, p := range topic.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("share fetch partition %d: %v", p.Partition, err)
			}
			for _, a := range p.AcquiredRecords {
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					counts = append(counts, a.DeliveryCount)
				}
			}
		}
	}
	return counts
}

// CheckAcknowledged fails the test unless a ShareAcknowledge answer is
// free of errors.
func CheckAcknowledged(t testing.TB, resp *kmsg.ShareAcknowledgeResponse) {
	t.Helper()
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("acknowledge: %v", err)
	}
	for _, topic := range resp.Topics {
		for _, p := range topic.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("acknowledge partition %d: %v", p.Partition, err)
			}
		}
	}
}

// CheckRedelivered polls consumer (a share group member), accepting
// everything, until total-accepted records came or ctx ends, and fails
// the test unless exactly the offsets from accepted on came, each once,
// with delivery count 2: records 0..accepted-1 were accepted before the
// crash or move, the rest acquired once and not accepted.
func CheckRedelivered(ctx context.Context, t testing.TB, consumer *kgo.Client, total, accepted int64, what string) {
	t.Helper()
	counts := map[int64]int32{}
	for int64(len(counts)) < total-accepted && ctx.Err() == nil {
		pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fetches := consumer.PollFetches(pollCtx)
		cancel()
		for r := range fetches.RecordsAll() {
			if _, dup := counts[r.Offset]; dup {
				t.Errorf("offset %d delivered twice after the %s", r.Offset, what)
			}
			counts[r.Offset] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		}
	}
	if int64(len(counts)) != total-accepted {
		t.Fatalf("after the %s %d records came back, want the %d acquired and not accepted", what, len(counts), total-accepted)
	}
	for offset, count := range counts {
		if offset < accepted {
			t.Errorf("offset %d was accepted before the %s and came back", offset, what)
		}
		if count != 2 {
			t.Errorf("offset %d came back with delivery count %d, want 2", offset, count)
		}
	}
}
