package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// End-to-end transactions with franz-go (issue 7), each under both
// protocols: classic (transaction.version=0) and KIP-890 part 2
// (transaction.version=2, which franz-go picks up from ApiVersions).

// TestTransactionsCommittedAndAborted: one transactional producer writes
// 3 topics × 4 partitions in 12 transactions, committing the even ones and
// aborting the odd ones. A read_committed consumer sees exactly the
// committed records; a read_uncommitted one sees both.
func TestTransactionsCommittedAndAborted(t *testing.T) {
	t.Parallel()
	for _, tv := range transactionVersions {
		t.Run(tv.name, func(t *testing.T) {
			const (
				partitions   = 4
				transactions = 12
				perTxn       = 24 // 2 per partition of the 3 topics
			)
			b := startTestBroker(t, t.TempDir(), txnTestProperties(tv.version))
			admin := newTestClient(t, b)
			topics := []string{"orders", "payments", "shipments"}
			for _, topic := range topics {
				createTopic(t, admin, topic, partitions, nil)
			}
			producer := newTxnProducer(t, b.Addr(), "mixed")
			ctx := testContext(t, 30*time.Second)
			committed, aborted := map[string][]string{}, map[string][]string{}
			var epochs []int16
			for txn := range transactions {
				commit := txn%2 == 0
				var records []*kgo.Record
				for i := range perTxn {
					topic := topics[i%len(topics)]
					value := fmt.Sprintf("txn-%d-record-%d", txn, i)
					records = append(records, &kgo.Record{Topic: topic, Partition: int32(i/len(topics)) % partitions, Value: []byte(value)})
					if commit {
						committed[topic] = append(committed[topic], value)
					} else {
						aborted[topic] = append(aborted[topic], value)
					}
				}
				if err := runTransaction(ctx, producer, records, commit); err != nil {
					t.Fatalf("transaction %d: %v", txn, err)
				}
				epochs = append(epochs, describeTransaction(t, admin, "mixed").ProducerEpoch)
			}
			checkEpochs(t, tv.version, epochs)
			writeSentinels(t, b.Addr(), topics, partitions)

			readCommitted := consumeToSentinels(t, b.Addr(), topics, partitions, kgo.ReadCommitted())
			readUncommitted := consumeToSentinels(t, b.Addr(), topics, partitions, kgo.ReadUncommitted())
			for _, topic := range topics {
				if !sameSet(readCommitted[topic], committed[topic]) {
					t.Errorf("%s read_committed: got %d records, want the %d committed", topic, len(readCommitted[topic]), len(committed[topic]))
				}
				all := append(slices.Clone(committed[topic]), aborted[topic]...)
				if !sameSet(readUncommitted[topic], all) {
					t.Errorf("%s read_uncommitted: got %d records, want all %d", topic, len(readUncommitted[topic]), len(all))
				}
			}
			state := describeTransaction(t, admin, "mixed")
			if state.State != "CompleteAbort" || len(state.Topics) != 0 {
				t.Errorf("after the last (aborted) transaction: state %s with %d topics", state.State, len(state.Topics))
			}
		})
	}
}

// checkEpochs: the classic protocol keeps the epoch; KIP-890 part 2 bumps
// it at every transaction end (proof franz-go took the part 2 path).
func checkEpochs(t *testing.T, transactionVersion string, epochs []int16) {
	t.Helper()
	// franz-go may re-initialise once after the first transaction, when it
	// learns the features; from then on the pattern must hold.
	for i := 2; i < len(epochs); i++ {
		bumped := epochs[i] == epochs[i-1]+1
		if transactionVersion == "2" && !bumped || transactionVersion != "2" && epochs[i] != epochs[1] {
			t.Fatalf("transaction.version %s: producer epochs after each transaction %v", transactionVersion, epochs)
		}
	}
}

// sameSet reports whether got and want hold the same values, duplicates
// counted.
func sameSet(got, want []string) bool {
	got, want = slices.Clone(got), slices.Clone(want)
	sort.Strings(got)
	sort.Strings(want)
	return slices.Equal(got, want)
}

// TestTransactionZombieFenced: a producer opens a transaction and writes;
// a new instance with the same transactional id initialises (fencing the
// old one and aborting its transaction) and commits. The old instance keeps
// producing and tries to commit: every request fails with a fencing error,
// and none of its writes becomes visible to read_committed.
func TestTransactionZombieFenced(t *testing.T) {
	t.Parallel()
	for _, tv := range transactionVersions {
		t.Run(tv.name, func(t *testing.T) {
			b := startTestBroker(t, t.TempDir(), txnTestProperties(tv.version))
			admin := newTestClient(t, b)
			createTopic(t, admin, "fenced", 2, nil)
			ctx := testContext(t, 30*time.Second)
			zombie := newTxnProducer(t, b.Addr(), "worker")
			if err := zombie.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			before := []*kgo.Record{{Topic: "fenced", Partition: 0, Value: []byte("zombie-before")}}
			if err := zombie.ProduceSync(ctx, before...).FirstErr(); err != nil {
				t.Fatalf("zombie's first write: %v", err)
			}

			successor := newTxnProducer(t, b.Addr(), "worker")
			fresh := []*kgo.Record{{Topic: "fenced", Partition: 0, Value: []byte("successor")}, {Topic: "fenced", Partition: 1, Value: []byte("successor")}}
			if err := runTransaction(ctx, successor, fresh, true); err != nil {
				t.Fatalf("successor: %v", err)
			}

			// The zombie goes on: to the partition it had, and to a new one.
			for _, partition := range []int32{0, 1} {
				late := &kgo.Record{Topic: "fenced", Partition: partition, Value: []byte("zombie-after")}
				err := zombie.ProduceSync(ctx, late).FirstErr()
				if !isFencingError(err) {
					t.Fatalf("zombie's write to partition %d after the fence: %v, want a fencing error", partition, err)
				}
			}
			if err := zombie.EndTransaction(ctx, kgo.TryCommit); err == nil {
				t.Fatal("zombie's commit succeeded")
			}
			writeSentinels(t, b.Addr(), []string{"fenced"}, 2)
			got := consumeToSentinels(t, b.Addr(), []string{"fenced"}, 2, kgo.ReadCommitted())["fenced"]
			if !sameSet(got, []string{"successor", "successor"}) {
				t.Fatalf("read_committed sees %q, want only the successor's two records", got)
			}
		})
	}
}

// isFencingError: the errors franz-go surfaces for a fenced producer.
func isFencingError(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidProducerIDMapping)
}

// TestTransactionFencedRequests sends each transactional request of an
// older instance by hand after a new instance initialised: each gets
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH for Produce and for request
// versions before PRODUCER_FENCED existed) — never success, never a
// generic state error.
func TestTransactionFencedRequests(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), txnTestProperties("0"))
	createTopic(t, newTestClient(t, b), "raw", 1, nil)
	readyCoordinator(t, b, coordinatorTransaction, "raw-id")
	r := dialRaw(t, b)
	roundTrip := func(req kmsg.Request, resp kmsg.Response, version int16) {
		r.request(req, version)
		r.response(resp, version)
	}
	initID := func() (int64, int16) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("raw-id"), 60000
		resp := kmsg.NewPtrInitProducerIDResponse()
		roundTrip(req, resp, 4)
		if resp.ErrorCode != 0 {
			t.Fatalf("init producer id: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp.ProducerID, resp.ProducerEpoch
	}
	producerID, oldEpoch := initID()
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "raw-id", producerID, oldEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "raw", Partitions: []int32{0}}}
	addCode := func(version int16) int16 {
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		roundTrip(add, resp, version)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := addCode(3); code != 0 {
		t.Fatalf("add partition: %v", kerr.ErrorForCode(code))
	}
	if _, newEpoch := initID(); newEpoch <= oldEpoch {
		t.Fatalf("second InitProducerId: epoch %d, first %d", newEpoch, oldEpoch)
	}
	addOffsetsCode := func(version int16) int16 {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = "raw-id", producerID, oldEpoch, "g"
		resp := kmsg.NewPtrAddOffsetsToTxnResponse()
		roundTrip(req, resp, version)
		return resp.ErrorCode
	}
	endCode := func(version int16) int16 {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "raw-id", producerID, oldEpoch, true
		resp := kmsg.NewPtrEndTxnResponse()
		roundTrip(req, resp, version)
		return resp.ErrorCode
	}
	offsetCommitCode := func(version int16) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, req.Generation = "raw-id", producerID, oldEpoch, "g", -1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "raw", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		roundTrip(req, resp, version)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for _, check := range []struct {
		name    string
		code    func(int16) int16
		version int16
		want    *kerr.Error
	}{
		{"AddPartitionsToTxn", addCode, 3, kerr.ProducerFenced},
		{"AddPartitionsToTxn", addCode, 1, kerr.InvalidProducerEpoch},
		{"AddOffsetsToTxn", addOffsetsCode, 3, kerr.ProducerFenced},
		{"AddOffsetsToTxn", addOffsetsCode, 0, kerr.InvalidProducerEpoch},
		{"EndTxn", endCode, 4, kerr.ProducerFenced},
		{"EndTxn", endCode, 1, kerr.InvalidProducerEpoch},
		{"TxnOffsetCommit", offsetCommitCode, 3, kerr.ProducerFenced},
		{"TxnOffsetCommit", offsetCommitCode, 2, kerr.InvalidProducerEpoch},
	} {
		if got := check.code(check.version); got != check.want.Code {
			t.Errorf("%s v%d from the fenced epoch: %v, want %v", check.name, check.version, kerr.ErrorForCode(got), check.want)
		}
	}
	got := r.produceTransactional("raw-id", "raw", 0, producerID, oldEpoch)
	if got.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Errorf("Produce from the fenced epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(got.ErrorCode))
	}
}

// TestTransactionTimeoutAborted: a producer opens a transaction, writes,
// and hangs. Its open transaction holds the last stable offset back (a
// committed transaction written after it stays invisible to read_committed)
// until the coordinator aborts it after transaction.timeout.ms; then
// read_committed consumers advance past it, and the hung producer's commit
// fails.
func TestTransactionTimeoutAborted(t *testing.T) {
	t.Parallel()
	for _, tv := range transactionVersions {
		t.Run(tv.name, func(t *testing.T) {
			b := startTestBroker(t, t.TempDir(), txnTestProperties(tv.version))
			admin := newTestClient(t, b)
			createTopic(t, admin, "stuck", 1, nil)
			ctx := testContext(t, 30*time.Second)
			hung := newTxnProducer(t, b.Addr(), "hung", kgo.TransactionTimeout(1500*time.Millisecond))
			if err := hung.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := hung.ProduceSync(ctx, &kgo.Record{Topic: "stuck", Value: []byte("hung")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			healthy := newTxnProducer(t, b.Addr(), "healthy")
			if err := runTransaction(ctx, healthy, []*kgo.Record{{Topic: "stuck", Value: []byte("healthy")}}, true); err != nil {
				t.Fatal(err)
			}
			highWatermark := listOffsets(t, admin, "stuck", 0, 0)
			stable := listOffsets(t, admin, "stuck", 0, 1)
			state := describeTransaction(t, admin, "hung")
			if state.State == "Ongoing" && stable != 0 {
				t.Fatalf("while the hung transaction is open: last stable offset %d, want 0 (high watermark %d)", stable, highWatermark)
			}
			testutil.Eventually(t, 15*time.Second, "the coordinator aborts the hung transaction", func() (bool, string) {
				state := describeTransaction(t, admin, "hung")
				return state.State == "CompleteAbort", "state " + state.State
			})
			if stable := listOffsets(t, admin, "stuck", 0, 1); stable != listOffsets(t, admin, "stuck", 0, 0) {
				t.Fatalf("after the abort: last stable offset %d below the high watermark", stable)
			}
			got := consumeUntil(t, b.Addr(), "stuck", 1, kgo.ReadCommitted())
			if !sameSet(got, []string{"healthy"}) {
				t.Fatalf("read_committed after the timeout: %q, want only the healthy record", got)
			}
			if err := hung.EndTransaction(ctx, kgo.TryCommit); err == nil {
				t.Fatal("the hung producer committed after its transaction timed out")
			}
		})
	}
}

// consumeUntil reads topic partition 0 from the start at the isolation
// level until want records arrived.
func consumeUntil(t *testing.T, addr, topic string, want int, level kgo.IsolationLevel) []string {
	t.Helper()
	client, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var values []string
	for len(values) < want {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %q, want %d records", values, want)
		}
		fetches.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	return values
}

// TestTransactionStateSurvivesRestart: an aborted transaction and an open
// one are on a partition when the broker restarts. After the restart the
// last stable offset is still held at the open transaction's first offset,
// the coordinator still knows both ids (ListTransactions), and once a new
// instance fences and aborts the open transaction, a read_committed
// consumer sees neither transaction's records — the aborted-transaction
// index came back with the log.
func TestTransactionStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	properties := txnTestProperties("2")
	b := startTestBroker(t, dir, properties)
	admin := newTestClient(t, b)
	createTopic(t, admin, "durable", 1, nil)
	ctx := testContext(t, 30*time.Second)
	aborter := newTxnProducer(t, b.Addr(), "aborter")
	if err := runTransaction(ctx, aborter, []*kgo.Record{{Topic: "durable", Value: []byte("aborted")}}, false); err != nil {
		t.Fatal(err)
	}
	committer := newTxnProducer(t, b.Addr(), "committer")
	if err := runTransaction(ctx, committer, []*kgo.Record{{Topic: "durable", Value: []byte("committed")}}, true); err != nil {
		t.Fatal(err)
	}
	open := newTxnProducer(t, b.Addr(), "open", kgo.TransactionTimeout(time.Minute))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Topic: "durable", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	stableBefore := listOffsets(t, admin, "durable", 0, 1)
	if stableBefore >= listOffsets(t, admin, "durable", 0, 0) {
		t.Fatalf("open transaction: last stable offset %d not below the high watermark", stableBefore)
	}
	for _, client := range []*kgo.Client{aborter, committer, open, admin} {
		client.Close()
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	restarted := startTestBroker(t, dir, properties)
	admin = newTestClient(t, restarted)
	if stable := listOffsets(t, admin, "durable", 0, 1); stable != stableBefore {
		t.Fatalf("after the restart: last stable offset %d, before %d", stable, stableBefore)
	}
	list := kmsg.NewPtrListTransactionsRequest()
	listed, err := list.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, state := range listed.TransactionStates {
		states[state.TransactionalID] = state.TransactionState
	}
	if states["open"] != "Ongoing" || states["aborter"] != "CompleteAbort" || states["committer"] != "CompleteCommit" {
		t.Fatalf("ListTransactions after the restart: %v", states)
	}
	successor := newTxnProducer(t, restarted.Addr(), "open")
	if err := runTransaction(ctx, successor, []*kgo.Record{{Topic: "durable", Value: []byte("successor")}}, true); err != nil {
		t.Fatal(err)
	}
	writeSentinels(t, restarted.Addr(), []string{"durable"}, 1)
	got := consumeToSentinels(t, restarted.Addr(), []string{"durable"}, 1, kgo.ReadCommitted())["durable"]
	if !sameSet(got, []string{"committed", "successor"}) {
		t.Fatalf("read_committed after the restart: %q", got)
	}
}
