package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteRecordsOf sends DeleteRecords of one partition to broker and
// returns its answer.
func deleteRecordsOf(t *testing.T, client *kgo.Client, broker int32, topic string, partition int32, offset int64) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version, req.TimeoutMillis = 2, 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	answer, err := client.Broker(int(broker)).Request(testContext(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("delete records: %v", err)
	}
	return answer.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
}

// DeleteRecords moves the log start offset: ListOffsets' earliest says
// it, a consumer from the start begins there, a fetch below it is
// OFFSET_OUT_OF_RANGE; -1 deletes up to the high watermark; past the
// high watermark is OFFSET_OUT_OF_RANGE; a compacted topic refuses it
// (POLICY_VIOLATION).
func TestDeleteRecords(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	client, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("purge"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	createTopic(t, client, "purge", 1, nil)
	createTopic(t, client, "kept-by-key", 1, map[string]string{"cleanup.policy": "compact"})
	ctx := testContext(t, 10*time.Second)
	for i := range 10 {
		if err := client.ProduceSync(ctx, &kgo.Record{Key: []byte{byte(i)}, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if got := deleteRecordsOf(t, client, 1, "purge", 0, 4); got.ErrorCode != 0 || got.LowWatermark != 4 {
		t.Fatalf("delete before 4: low watermark %d, %v", got.LowWatermark, kerr.ErrorForCode(got.ErrorCode))
	}
	if got := deleteRecordsOf(t, client, 1, "purge", 0, 11); got.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("delete before 11 of 10: %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(got.ErrorCode))
	}
	if got := deleteRecordsOf(t, client, 1, "purge", 0, 2); got.ErrorCode != 0 || got.LowWatermark != 4 {
		t.Errorf("delete before 2, below the start: low watermark %d, %v; want 4", got.LowWatermark, kerr.ErrorForCode(got.ErrorCode))
	}
	if got := deleteRecordsOf(t, client, 1, "kept-by-key", 0, -1); got.ErrorCode != kerr.PolicyViolation.Code {
		t.Errorf("delete records of a compacted topic: %v, want POLICY_VIOLATION", kerr.ErrorForCode(got.ErrorCode))
	}
	if earliest := listOffset(t, client, "purge", 0, -2); earliest.Offset != 4 {
		t.Errorf("earliest offset %d after deleting before 4", earliest.Offset)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"purge": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	fetches := consumer.PollRecords(ctx, 1)
	if records := fetches.Records(); len(records) != 1 || records[0].Offset != 4 {
		t.Errorf("a consumer from the start got %v, want offset 4 first (errors %v)", records, fetches.Errors())
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MaxBytes = 12, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "purge"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	raw := dialRaw(t, b) // Fetch v12 names the topic (kgo would send v13+, by id)
	raw.request(fetch, 12)
	answer := kmsg.NewPtrFetchResponse()
	raw.response(answer, 12)
	if code := answer.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch at 1, below the log start: %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(code))
	}

	if got := deleteRecordsOf(t, client, 1, "purge", 0, -1); got.ErrorCode != 0 || got.LowWatermark != 10 {
		t.Errorf("delete up to the high watermark: low watermark %d, %v", got.LowWatermark, kerr.ErrorForCode(got.ErrorCode))
	}
}

// On a replicated partition the followers follow the leader's log start
// offset, and the leader answers DeleteRecords once every ISR member's
// log starts there, so a new leader after the old one's death serves none
// of the deleted records.
func TestDeleteRecordsReplicated(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	c.createTopic("purged", 1)
	leader := c.role("purged", 0).Leader
	mustProduce(t, "before", dialRaw(t, c.broker(leader)).produceAcks("purged", 0, plainBatch(t, "a", 6), -1), 0)
	c.waitCaughtUp("purged", 0)
	client := c.client()
	if got := deleteRecordsOf(t, client, leader, "purged", 0, 5); got.ErrorCode != 0 || got.LowWatermark != 5 {
		t.Fatalf("delete records on the leader: low watermark %d, %v", got.LowWatermark, kerr.ErrorForCode(got.ErrorCode))
	}
	// Answered once the ISR followed: every replica starts at 5 already.
	for id := int32(1); id <= 3; id++ {
		if start := c.localPartition(id, "purged", 0).Log().LogStartOffset(); start != 5 {
			t.Errorf("broker %d: log start %d when DeleteRecords answered, want 5", id, start)
		}
	}
	if follower := c.role("purged", 0).Replicas[1]; follower != leader {
		if got := deleteRecordsOf(t, client, follower, "purged", 0, 6); got.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Errorf("delete records on a follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(got.ErrorCode))
		}
	}
}
