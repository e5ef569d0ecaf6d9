package loadgen

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// openTransactionsError says that some transactions in a topic were still
// open when a read_committed read-back had to begin: the last stable offset
// of each partition in partitions stayed below the high watermark it had
// when the wait began. Records written at or after an open transaction's
// first offset are held back from read_committed readers until it ends,
// whatever their own transaction's outcome.
type openTransactionsError struct {
	topic      string
	waited     time.Duration
	partitions []unsettledPartition
}

// unsettledPartition is one partition whose last stable offset lags its
// high watermark, with the open transactions its leader describes.
type unsettledPartition struct {
	partition     int32
	lastStable    int64
	highWatermark int64
	open          []string // "producer 7 epoch 3 from offset 120, last write 12:00:01.250"
}

func (e *openTransactionsError) Error() string {
	var parts []string
	for _, partition := range e.partitions {
		text := fmt.Sprintf("%s[%d] last stable offset %d, high watermark %d", e.topic, partition.partition, partition.lastStable, partition.highWatermark)
		if len(partition.open) > 0 {
			text += " (open: " + strings.Join(partition.open, "; ") + ")"
		}
		parts = append(parts, text)
	}
	return fmt.Sprintf("transactions still open after waiting %s, so read_committed readers cannot see past them: %s",
		e.waited.Round(time.Second), strings.Join(parts, ", "))
}

// settledEnds returns the read_committed end offsets of topic (its last
// stable offsets) once every transaction open in it when the call began
// has ended: each partition's last stable offset has reached the high
// watermark it had then. Every producer of a run has ended its
// transactions before the read-back, but a transaction whose end was lost
// with its coordinator (or whose producer died) stays open until the new
// coordinator aborts it on its timeout; until then it holds back every
// later record, committed ones included, and a read stopping at the last
// stable offset would count those as lost.
//
// It waits until settleBy. If some partition has not settled by then it
// returns the last stable offsets it has and an *openTransactionsError
// naming them.
func settledEnds(ctx context.Context, client *kgo.Client, topic string, partitions int, settleBy time.Time) ([]int64, error) {
	started := time.Now()
	highWatermarks, err := endOffsets(ctx, client, topic, partitions, false)
	if err != nil {
		return nil, err
	}
	for {
		lastStable, err := endOffsets(ctx, client, topic, partitions, true)
		if err != nil {
			return nil, err
		}
		var behind []unsettledPartition
		for partition, offset := range lastStable {
			if offset < highWatermarks[partition] {
				behind = append(behind, unsettledPartition{partition: int32(partition), lastStable: offset, highWatermark: highWatermarks[partition]})
			}
		}
		if len(behind) == 0 {
			return lastStable, nil
		}
		if !time.Now().Before(settleBy) {
			describeOpenTransactions(ctx, client, topic, behind)
			return lastStable, &openTransactionsError{topic: topic, waited: time.Since(started), partitions: behind}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(250*time.Millisecond, time.Until(settleBy)+time.Millisecond)):
		}
	}
}

// describeOpenTransactions fills in the open transactions of each
// partition in behind from DescribeProducers, best effort: a cluster that
// does not answer it (or answers an error) leaves them unnamed.
func describeOpenTransactions(ctx context.Context, client *kgo.Client, topic string, behind []unsettledPartition) {
	request := kmsg.NewPtrDescribeProducersRequest()
	requestTopic := kmsg.NewDescribeProducersRequestTopic()
	requestTopic.Topic = topic
	for _, partition := range behind {
		requestTopic.Partitions = append(requestTopic.Partitions, partition.partition)
	}
	request.Topics = append(request.Topics, requestTopic)
	describeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	response, err := request.RequestWith(describeCtx, client)
	if err != nil {
		return
	}
	for _, responseTopic := range response.Topics {
		for _, responsePartition := range responseTopic.Partitions {
			if kerr.ErrorForCode(responsePartition.ErrorCode) != nil {
				continue
			}
			for i := range behind {
				if behind[i].partition != responsePartition.Partition {
					continue
				}
				for _, producer := range responsePartition.ActiveProducers {
					if producer.CurrentTxnStartOffset < 0 {
						continue
					}
					behind[i].open = append(behind[i].open, fmt.Sprintf("producer %d epoch %d from offset %d, last write %s",
						producer.ProducerID, producer.ProducerEpoch, producer.CurrentTxnStartOffset,
						time.UnixMilli(producer.LastTimestamp).UTC().Format("15:04:05.000")))
				}
			}
		}
	}
}
