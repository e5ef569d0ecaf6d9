package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// internalCompactionProperties: one partition per internal topic, tiny
// segments and a fast cleaner, the classic transaction protocol (explicit
// AddOffsetsToTxn).
func internalCompactionProperties() map[string]string {
	properties := txnTestProperties("0")
	properties["offsets.topic.num.partitions"] = "1"
	properties["transaction.state.log.num.partitions"] = "1"
	properties["offsets.topic.segment.bytes"] = "2048"
	properties["transaction.state.log.segment.bytes"] = "2048"
	properties["log.cleaner.backoff.ms"] = "20"
	// Markers and tombstones go at the second clean after their data, and
	// any dirt is worth a clean.
	properties["log.cleaner.delete.retention.ms"] = "0"
	properties["log.cleaner.min.cleanable.ratio"] = "0.01"
	return properties
}

// internalPartitionsOf lists b's replicas of the internal topics'
// partitions by name (a topic not used yet does not exist); it fails the
// test when there is none.
func internalPartitionsOf(t *testing.T, b *Broker) map[string]*topicPartition {
	t.Helper()
	out := map[string]*topicPartition{}
	for _, name := range []string{group.OffsetsTopic, txn.TransactionStateTopic} {
		topic := b.topicByName(name)
		if topic == nil {
			continue
		}
		for _, p := range b.partitionsOf(topic) {
			out[p.Name()] = p
		}
	}
	if len(out) == 0 {
		t.Fatal("no internal topic here")
	}
	return out
}

// internalLogsOf lists the logs of b's internal partitions by name.
func internalLogsOf(t *testing.T, b *Broker) map[string]*storage.Log {
	t.Helper()
	out := map[string]*storage.Log{}
	for name, p := range internalPartitionsOf(t, b) {
		out[name] = p.Log()
	}
	return out
}

// internalSizes sums the bytes of each internal topic's logs.
func internalSizes(t *testing.T, b *Broker) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, p := range internalPartitionsOf(t, b) {
		out[p.topic.name] += p.Log().Size()
	}
	return out
}

// cleanInternalLogs seals every internal log and waits until the cleaner
// has cleaned each one up to its upper bound.
func cleanInternalLogs(t *testing.T, b *Broker) {
	t.Helper()
	for _, p := range internalPartitionsOf(t, b) {
		sealAndWaitCleaned(t, b, p.Log(), func() int64 {
			bound, _, err := p.CleanBounds()
			if err != nil {
				t.Fatal(err)
			}
			return bound
		})
	}
}

// txnOffsetCommit adds group to the producer's open transaction and
// commits offset for topic-0 in it (raw requests on the producer's client).
func txnOffsetCommit(ctx context.Context, producer *kgo.Client, transactionalID, group, topic string, topicID [16]byte, offset int64) error {
	id, epoch, err := producer.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = transactionalID, id, epoch, group
	added, err := add.RequestWith(ctx, producer)
	if err == nil {
		err = kerr.ErrorForCode(added.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("add offsets: %w", err)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.ProducerID, commit.ProducerEpoch, commit.Group, commit.Generation = transactionalID, id, epoch, group, -1
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, TopicID: topicID, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
	committed, err := commit.RequestWith(ctx, producer)
	if err == nil {
		err = kerr.ErrorForCode(committed.Topics[0].Partitions[0].ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("txn offset commit: %w", err)
	}
	return nil
}

// initProducerIDFor sends InitProducerId for a transactional id.
func initProducerIDFor(t *testing.T, client *kgo.Client, transactionalID string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(transactionalID), 60000
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId %s: %v %+v", transactionalID, err, resp)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// TestInternalTopicsCompactedAndReloaded: __consumer_offsets and
// __transaction_state are compacted. Offsets committed many times for one
// group and partition (plainly and in transactions, some aborted), a
// deleted group, and many transactions on two transactional ids, cleaned:
// the logs shrink to a bound, and after a restart, which loads the
// compacted logs, OffsetFetch answers what it answered before (nothing for
// the deleted group) and InitProducerId continues each id's producer id
// and epoch.
func TestInternalTopicsCompactedAndReloaded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startTestBroker(t, dir, internalCompactionProperties())
	createTopic(t, newTestClient(t, b), "data", 1, nil)
	ctx := testContext(t, 60*time.Second)
	member := newRawMember(t, b, "plain-group", "data")
	for offset := range int64(300) {
		if err := member.commit(ctx, "", -1, offset); err != nil {
			t.Fatalf("commit %d: %v", offset, err)
		}
	}
	// A group whose offsets and metadata are deleted: its tombstones, and
	// after them nothing, must keep it deleted across cleans and restarts.
	gone := newRawMember(t, b, "deleted-group", "data")
	for offset := range int64(20) {
		if err := gone.commit(ctx, "", -1, offset); err != nil {
			t.Fatalf("commit %d: %v", offset, err)
		}
	}
	remove := kmsg.NewPtrDeleteGroupsRequest()
	remove.Groups = []string{"deleted-group"}
	if resp, err := remove.RequestWith(ctx, gone.client); err != nil || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete group: %v %+v", err, resp)
	}
	ids := []string{"compacted-id-0", "compacted-id-1"}
	producers := map[string]*kgo.Client{}
	for _, id := range ids {
		producers[id] = newTxnProducer(t, b.Addr(), id)
	}
	var wantTxnOffset int64
	for i := range 60 {
		id := ids[i%2]
		producer := producers[id]
		commit := i%5 != 4
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "data", Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("transaction %d: produce: %v", i, err)
		}
		if err := txnOffsetCommit(ctx, producer, id, "txn-group", "data", b.topicByName("data").id, int64(i)); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		if err := producer.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("transaction %d: end: %v", i, err)
		}
		if commit {
			wantTxnOffset = int64(i)
		}
	}
	admin := newTestClient(t, b)
	testutil.Until(t, 10*time.Second, "the last transaction's offsets to be committed", func() bool {
		return committedOffsets(t, admin, "txn-group", "data")[0] == wantTxnOffset
	})
	before := internalSizes(t, b)
	cleanInternalLogs(t, b)
	// A second clean, after more commits, drops the markers whose
	// transactions the first one emptied.
	for offset := int64(300); offset < 350; offset++ {
		if err := member.commit(ctx, "", -1, offset); err != nil {
			t.Fatalf("commit %d: %v", offset, err)
		}
	}
	cleanInternalLogs(t, b)
	after := internalSizes(t, b)
	t.Logf("internal topics' bytes before cleaning %v, after %v", before, after)
	for name, size := range after {
		// Each partition: the cleaned segments (one record per live key,
		// the producers' kept batches and markers) and an empty active one.
		if size > 1024 || size*10 > before[name] {
			t.Errorf("%s holds %d bytes after cleaning (%d before): not compacted", name, size, before[name])
		}
	}
	plain, txnOffsets := committedOffsets(t, admin, "plain-group", "data"), committedOffsets(t, admin, "txn-group", "data")
	if plain[0] != 349 || txnOffsets[0] != wantTxnOffset {
		t.Fatalf("after cleaning: plain-group %v, txn-group %v; want 349 and %d", plain, txnOffsets, wantTxnOffset)
	}
	states := map[string]kmsg.DescribeTransactionsResponseTransactionState{}
	for _, id := range ids {
		states[id] = describeTransaction(t, admin, id)
	}
	for _, producer := range producers {
		producer.Close()
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = startTestBroker(t, dir, internalCompactionProperties())
	admin = newTestClient(t, b)
	if got := committedOffsets(t, admin, "plain-group", "data"); got[0] != 349 {
		t.Fatalf("plain-group after restart: %v, want 349", got)
	}
	if got := committedOffsets(t, admin, "deleted-group", "data"); len(got) != 0 {
		t.Fatalf("deleted-group after cleaning and a restart: %v, want no offsets", got)
	}
	if got := committedOffsets(t, admin, "txn-group", "data"); got[0] != wantTxnOffset {
		t.Fatalf("txn-group after restart: %v, want %d", got, wantTxnOffset)
	}
	for _, id := range ids {
		producerID, epoch := initProducerIDFor(t, admin, id)
		if producerID != states[id].ProducerID || epoch != states[id].ProducerEpoch+1 {
			t.Fatalf("%s after restart: producer %d epoch %d, want %d epoch %d", id, producerID, epoch, states[id].ProducerID, states[id].ProducerEpoch+1)
		}
	}
}

// TestExpiredTransactionalIDCompactedAway: an idle transactional id
// expires (the coordinator writes its tombstone); cleaning removes its
// records and the tombstone, and after a restart the id is unknown:
// InitProducerId starts it afresh at epoch 0 with a new producer id.
func TestExpiredTransactionalIDCompactedAway(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	properties := internalCompactionProperties()
	properties["transactional.id.expiration.ms"] = "300"
	b := startTestBroker(t, dir, properties)
	admin := newTestClient(t, b)
	first, _ := initProducerIDFor(t, admin, "expiring")
	initProducerIDFor(t, admin, "expiring") // a second record of the id, epoch 1
	testutil.Until(t, 10*time.Second, "the id to expire", func() bool {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{"expiring"}
		resp, err := req.RequestWith(testContext(t, 5*time.Second), admin)
		return err == nil && resp.TransactionStates[0].ErrorCode == kerr.TransactionalIDNotFound.Code
	})
	// With delete.retention.ms=0 the first clean removes the id's older
	// records and stamps its tombstone with a delete horizon of that
	// instant; the clean the cleaner schedules for the horizon removes
	// the tombstone (KIP-534). cleanInternalLogs waits for both.
	cleanInternalLogs(t, b)
	for name, log := range internalLogsOf(t, b) {
		records, _ := logRecords(t, log)
		for _, r := range records {
			if strings.Contains(r.key, "expiring") {
				t.Fatalf("%s: a record of the expired id (tombstone %v) at %d survived a clean with delete.retention.ms=0", name, r.value == nil, r.offset)
			}
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, properties)
	producerID, epoch := initProducerIDFor(t, newTestClient(t, b), "expiring")
	if epoch != 0 || producerID == first {
		t.Fatalf("expired id after cleaning and a restart: producer %d epoch %d, want a new producer id (not %d) at epoch 0", producerID, epoch, first)
	}
}
