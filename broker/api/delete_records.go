package api

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DeleteRecords v0-v2 (API 21) moves partitions' log start offsets
// forward ([Topics.DeleteRecords]): the records below are gone for every
// reader (a fetch below the new start is OFFSET_OUT_OF_RANGE, as in
// Kafka) and the segments wholly below it are deleted. Offset -1 is the
// high watermark. Each partition answers its new log start offset as the
// low watermark once every ISR member's log start has followed the
// leader's (the followers move theirs from their next fetches; the wait
// is bounded by the request's timeout, then REQUEST_TIMED_OUT), as Kafka
// does. It runs on its own goroutine (it waits). It needs
// Delete on the topic (else TOPIC_AUTHORIZATION_FAILED). Kafka Streams
// purges its repartition topics with it.
func init() {
	register(wire.APIDeleteRecords, 0, 2, Parks, deleteRecords)
}

func deleteRecords(ctx context.Context, r *Request, req *kmsg.DeleteRecordsRequest) kmsg.Response {
	// One deadline for the request's partitions, as Kafka's one delayed
	// operation has.
	deadline := time.Now().Add(time.Duration(req.TimeoutMillis) * time.Millisecond)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, topic := range req.Topics {
		answered := kmsg.NewDeleteRecordsResponseTopic()
		answered.Topic = topic.Topic
		authorized := r.AuthorizedTopic(kmsg.ACLOperationDelete, topic.Topic)
		for _, partition := range topic.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = partition.Partition, -1
			err := error(errcode.ErrTopicAuthorization)
			if authorized {
				rp.LowWatermark, err = r.Topics.DeleteRecords(ctx, topic.Topic, partition.Partition, partition.Offset, max(0, time.Until(deadline)))
			}
			if err != nil {
				rp.LowWatermark, rp.ErrorCode = -1, errcode.Of(err)
				r.Logger.Debug("delete records", "topic", topic.Topic, "partition", partition.Partition, "offset", partition.Offset, "error", err)
			}
			answered.Partitions = append(answered.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, answered)
	}
	return resp
}
