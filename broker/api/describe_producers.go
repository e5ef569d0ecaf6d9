package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DescribeProducers v0 (API 61) lists, for each requested partition, the
// idempotent producers whose state the partition keeps: id, epoch, last
// sequence and timestamp, coordinator epoch and the start offset of an open
// transaction (-1 for none), as kafka-transactions.sh describe-producers
// shows them ([Transactions.Producers]). An unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION for that partition.
func init() {
	register(wire.APIDescribeProducers, 0, 0, InReader, describeProducers)
}

func describeProducers(_ context.Context, r *Request, req *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, requested := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = requested.Topic
		authorized := r.AuthorizedTopic(kmsg.ACLOperationRead, requested.Topic)
		for _, index := range requested.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = index
			err := error(errcode.ErrTopicAuthorization)
			if authorized {
				err = describePartitionProducers(r, requested.Topic, index, &rp)
			}
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// describePartitionProducers fills rp with the producers of partition
// index of topic.
func describePartitionProducers(r *Request, topic string, index int32, rp *kmsg.DescribeProducersResponseTopicPartition) error {
	infos, err := r.Transactions.Producers(topic, index)
	if err != nil {
		return err
	}
	for _, info := range infos {
		producer := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		producer.ProducerID = info.ProducerID
		producer.ProducerEpoch = int32(info.ProducerEpoch)
		producer.LastSequence = info.LastSequence
		producer.LastTimestamp = info.LastTimestamp
		producer.CoordinatorEpoch = info.CoordinatorEpoch
		producer.CurrentTxnStartOffset = info.CurrentTxnStartOffset
		rp.ActiveProducers = append(rp.ActiveProducers, producer)
	}
	return nil
}
