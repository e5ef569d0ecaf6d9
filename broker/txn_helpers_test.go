package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// Helpers of the transaction tests (txn_*_test.go).

// transactionVersions are the two protocols clients speak: classic
// (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn v4) and KIP-890 part 2.
var transactionVersions = []struct {
	name    string
	version string
}{{"classic", "0"}, {"kip890", "2"}}

// txnTestProperties are broker settings for fast transaction tests.
func txnTestProperties(transactionVersion string) map[string]string {
	properties := groupTestProperties()
	properties["transaction.state.log.num.partitions"] = "5"
	properties["transaction.version"] = transactionVersion
	properties["transaction.abort.timed.out.transaction.cleanup.interval.ms"] = "100"
	return properties
}

// newTxnProducer returns a transactional franz-go producer of addr that
// places records on the partition they name; closed at the end of the
// test unless the test closes it.
func newTxnProducer(t *testing.T, addr, transactionalID string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	options := []kgo.Opt{
		kgo.SeedBrokers(addr), kgo.TransactionalID(transactionalID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	}
	client, err := kgo.NewClient(append(options, extra...)...)
	if err != nil {
		t.Fatalf("new transactional producer %s: %v", transactionalID, err)
	}
	t.Cleanup(client.Close)
	return client
}

// runTransaction produces records in one transaction and commits or
// aborts it; every record is acknowledged before the end.
func runTransaction(ctx context.Context, client *kgo.Client, records []*kgo.Record, commit bool) error {
	if err := client.BeginTransaction(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := client.ProduceSync(ctx, records...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	if err := client.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		return fmt.Errorf("end (commit %v): %w", commit, err)
	}
	return nil
}

// sentinelKey marks the last record a test writes to a partition; a
// consumer that has seen it on every partition has seen everything before.
const sentinelKey = "sentinel"

// writeSentinels commits one sentinel record to every partition of topics.
func writeSentinels(t *testing.T, addr string, topics []string, partitions int32) {
	t.Helper()
	client := newTxnProducer(t, addr, "sentinels-"+t.Name())
	var records []*kgo.Record
	for _, topic := range topics {
		for p := range partitions {
			records = append(records, &kgo.Record{Topic: topic, Partition: p, Key: []byte(sentinelKey)})
		}
	}
	if err := runTransaction(testContext(t, 20*time.Second), client, records, true); err != nil {
		t.Fatalf("sentinels: %v", err)
	}
	client.Close()
}

// consumeToSentinels reads every partition of topics from the start at
// the isolation level until each has delivered its sentinel, and returns
// the values of the other records by topic.
func consumeToSentinels(t *testing.T, addr string, topics []string, partitions int32, level kgo.IsolationLevel) map[string][]string {
	t.Helper()
	assignment := map[string]map[int32]kgo.Offset{}
	for _, topic := range topics {
		assignment[topic] = map[int32]kgo.Offset{}
		for p := range partitions {
			assignment[topic][p] = kgo.NewOffset().AtStart()
		}
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(assignment),
		kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := testContext(t, 30*time.Second)
	values := map[string][]string{}
	missing := len(topics) * int(partitions)
	for missing > 0 {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d partitions never delivered their sentinel", missing)
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			t.Fatalf("fetch %s-%d: %v", topic, partition, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if string(r.Key) == sentinelKey {
				missing--
				return
			}
			values[r.Topic] = append(values[r.Topic], string(r.Value))
		})
	}
	return values
}

// describeTransaction returns the coordinator's view of a transactional id.
func describeTransaction(t *testing.T, client *kgo.Client, transactionalID string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{transactionalID}
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("describe transaction %s: %v", transactionalID, err)
	}
	if len(resp.TransactionStates) != 1 {
		t.Fatalf("describe transaction %s: %d states", transactionalID, len(resp.TransactionStates))
	}
	state := resp.TransactionStates[0]
	if err := kerr.ErrorForCode(state.ErrorCode); err != nil {
		t.Fatalf("describe transaction %s: %v", transactionalID, err)
	}
	return state
}

// listOffsets returns the latest offset of topic-partition at the isolation
// level (0 read_uncommitted, 1 read_committed).
func listOffsets(t *testing.T, client *kgo.Client, topic string, partition int32, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	got := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(got.ErrorCode); err != nil {
		t.Fatalf("list offsets %s-%d: %v", topic, partition, err)
	}
	return got.Offset
}

// produceTransactional sends one transactional batch (sequence 0) of the
// producer to topic-partition in a Produce v9 carrying the transactional
// id, and returns the partition's response.
func (r *rawConnection) produceTransactional(transactionalID, topic string, partition int32, producerID int64, epoch int16) kmsg.ProduceResponseTopicPartition {
	r.t.Helper()
	options := wire.PlainBatchOptions()
	options.ProducerID, options.ProducerEpoch, options.BaseSequence, options.Transactional = producerID, epoch, 0, true
	batch, err := wire.BuildBatch(options, []wire.BuilderRecord{{Value: []byte("raw")}})
	if err != nil {
		r.t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = kmsg.StringPtr(transactionalID)
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r.request(req, 9)
	resp := kmsg.NewPtrProduceResponse()
	r.response(resp, 9)
	return resp.Topics[0].Partitions[0]
}
