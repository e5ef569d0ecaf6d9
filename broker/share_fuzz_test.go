package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/sharetest"
)

// FuzzShareRequests sends ShareFetch and ShareAcknowledge requests built
// from fuzzed bodies (any session epoch, offsets, acknowledge types,
// topic ids, limits) to one broker holding a topic with records: every
// request is answered — no panic, no closed connection.
func FuzzShareRequests(f *testing.F) {
	b := startTestBroker(f, f.TempDir(), nil)
	admin := newTestClient(f, b, kgo.DefaultProduceTopic("fuzz-share"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	f.Cleanup(cancel)
	created := createTopic(f, admin, "fuzz-share", 1, nil)
	for range 20 {
		admin.Produce(ctx, kgo.StringRecord("v"), nil)
	}
	if err := admin.Flush(ctx); err != nil {
		f.Fatal(err)
	}
	valid := sharetest.FetchRequest("fuzz-group", "fuzz-member", 0, created.TopicID)
	valid.MaxWaitMillis = 0
	seed := valid.AppendTo(nil)
	f.Add(byte(0), seed)
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 2
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr("fuzz-group"), kmsg.StringPtr("fuzz-member"), 1
	topic := kmsg.NewShareAcknowledgeRequestTopic()
	topic.TopicID = created.TopicID
	partition := kmsg.NewShareAcknowledgeRequestTopicPartition()
	batch := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	batch.FirstOffset, batch.LastOffset, batch.AcknowledgeTypes = 0, 9, []int8{1, 2, 3, 0, 4, 1, 1, 1, 1, 9}
	partition.AcknowledgementBatches = append(partition.AcknowledgementBatches, batch)
	topic.Partitions = append(topic.Partitions, partition)
	ack.Topics = append(ack.Topics, topic)
	f.Add(byte(1), ack.AppendTo(nil))
	f.Fuzz(func(t *testing.T, kind byte, body []byte) {
		var req kmsg.Request
		if kind%2 == 0 {
			fetch := kmsg.NewPtrShareFetchRequest()
			fetch.Version = 2
			if fetch.ReadFrom(body) != nil {
				return
			}
			fetch.MaxWaitMillis = min(max(fetch.MaxWaitMillis, 0), 50) // bounded long polls
			req = fetch
		} else {
			acknowledge := kmsg.NewPtrShareAcknowledgeRequest()
			acknowledge.Version = 2
			if acknowledge.ReadFrom(body) != nil {
				return
			}
			req = acknowledge
		}
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := admin.Broker(1).Request(callCtx, req); err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
	})
}
