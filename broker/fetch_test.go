package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

func fetchRequest(topic string, offset int64, maxWait, minBytes, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, maxBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestFetchLongPollWokenByAppend: a fetch waiting up to 60 s for one byte
// is answered as soon as a record is appended (the read deadline is 10 s),
// and a fetch at the log end with MinBytes 0 returns at once, empty.
func TestFetchLongPollWokenByAppend(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	producer := newTestClient(t, b, kgo.DefaultProduceTopic("polled"))
	createTopic(t, producer, "polled", 1, nil)

	r := dialRaw(t, b)
	r.request(fetchRequest("polled", 0, 0, 0, 1<<20), 11)
	empty := kmsg.NewPtrFetchResponse()
	r.response(empty, 11)
	if p := empty.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 {
		t.Fatalf("fetch of an empty log: %+v", p)
	}

	r.request(fetchRequest("polled", 0, 60_000, 1, 1<<20), 11)
	if err := producer.ProduceSync(testContext(t, 10*time.Second), &kgo.Record{Value: []byte("wake up")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	r.response(resp, 11) // fails on the 10 s deadline if the append did not wake the fetch
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
		t.Fatalf("woken fetch: %+v", p)
	}
	batch, err := wire.ParseBatch(p.RecordBatches)
	if err != nil || batch.Validate() != nil || batch.BaseOffset() != 0 || batch.RecordCount() != 1 {
		t.Fatalf("woken fetch batch: %v", err)
	}
}

// TestFetchLimits: the first batch comes back whole even when larger than
// MaxBytes (KIP-74), offsets past the end are OFFSET_OUT_OF_RANGE, and an
// unknown topic is UNKNOWN_TOPIC_OR_PARTITION; at v13+ topics go by id.
func TestFetchLimits(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	producer := newTestClient(t, b, kgo.DefaultProduceTopic("limits"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	created := createTopic(t, producer, "limits", 1, nil)
	ctx := testContext(t, 10*time.Second)
	for _, value := range []string{"first batch, longer than ten bytes", "second"} {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	r := dialRaw(t, b)
	r.request(fetchRequest("limits", 0, 0, 1, 10), 12)
	resp := kmsg.NewPtrFetchResponse()
	r.response(resp, 12)
	p := resp.Topics[0].Partitions[0]
	batch, err := wire.ParseBatch(p.RecordBatches)
	if err != nil || batch.Size() != len(p.RecordBatches) || batch.BaseOffset() != 0 {
		t.Fatalf("KIP-74 fetch: %d bytes, %v", len(p.RecordBatches), err)
	}

	r.request(fetchRequest("limits", 5, 0, 1, 1<<20), 12)
	resp = kmsg.NewPtrFetchResponse()
	r.response(resp, 12)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch past the end: error %d, want OFFSET_OUT_OF_RANGE", code)
	}

	r.request(fetchRequest("missing", 0, 0, 1, 1<<20), 12)
	resp = kmsg.NewPtrFetchResponse()
	r.response(resp, 12)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("fetch of a missing topic: error %d", code)
	}

	byID := fetchRequest("", 1, 0, 1, 1<<20)
	byID.Topics[0].TopicID = created.TopicID
	r.request(byID, 16)
	resp = kmsg.NewPtrFetchResponse()
	r.response(resp, 16)
	p = resp.Topics[0].Partitions[0]
	if resp.Topics[0].TopicID != created.TopicID || p.ErrorCode != 0 || p.HighWatermark != 2 || p.LogStartOffset != 0 {
		t.Fatalf("fetch v16 by id: %+v", resp.Topics[0])
	}
	if batch, err := wire.ParseBatch(p.RecordBatches); err != nil || batch.BaseOffset() != 1 {
		t.Fatalf("fetch v16 by id from offset 1: %v", err)
	}
}
