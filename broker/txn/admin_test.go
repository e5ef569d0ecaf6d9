package txn

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions and ListTransactions report what the coordinator
// holds, with ListTransactions' filters.
func TestDescribeAndListTransactions(t *testing.T) {
	h := newHarness(t)
	open := h.init("open", 60000)
	h.add(open, tp("b", 1), tp("a", 0), tp("b", 0))
	start := h.clock.Now().UnixMilli()
	idle := h.init("idle", 30000)
	done := h.init("done", 30000)
	h.add(done, tp("a", 0))
	expectCode(t, "commit", h.endTxn(done, 3, true).ErrorCode, nil)
	h.waitIdle()

	d := h.describe("open")
	if d.ErrorCode != 0 || d.State != "Ongoing" || d.TimeoutMillis != 60000 || d.StartTimestamp != start ||
		d.ProducerID != open.pid || d.ProducerEpoch != open.epoch || len(d.Topics) != 2 ||
		d.Topics[0].Topic != "a" || !slices.Equal(d.Topics[1].Partitions, []int32{0, 1}) {
		t.Fatalf("describe open: %+v", d)
	}
	if d := h.describe("done"); d.State != "CompleteCommit" || d.StartTimestamp != -1 || len(d.Topics) != 0 {
		t.Fatalf("describe done: %+v", d)
	}

	list := func(version int16, states []string, pids []int64, duration int64, pattern *string) ([]string, []string) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis, req.TransactionalIDPattern = version, states, pids, duration, pattern
		resp := h.c.ListTransactions(context.Background(), req)
		if resp.ErrorCode != 0 {
			t.Fatalf("list: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		var ids []string
		for _, state := range resp.TransactionStates {
			ids = append(ids, state.TransactionalID+"/"+state.TransactionState)
		}
		return ids, resp.UnknownStateFilters
	}
	if ids, _ := list(0, nil, nil, -1, nil); !slices.Equal(ids, []string{"done/CompleteCommit", "idle/Empty", "open/Ongoing"}) {
		t.Fatalf("list all: %v", ids)
	}
	ids, unknown := list(0, []string{"Empty", "Bogus"}, nil, -1, nil)
	if !slices.Equal(ids, []string{"idle/Empty"}) || !slices.Equal(unknown, []string{"Bogus"}) {
		t.Fatalf("state filter: %v %v", ids, unknown)
	}
	if ids, _ := list(0, nil, []int64{done.pid}, -1, nil); !slices.Equal(ids, []string{"done/CompleteCommit"}) {
		t.Fatalf("producer filter: %v", ids)
	}
	h.clock.Advance(5 * time.Second)
	if ids, _ := list(1, nil, nil, 4000, nil); !slices.Equal(ids, []string{"open/Ongoing"}) {
		t.Fatalf("duration filter 4 s: %v", ids)
	}
	if ids, _ := list(1, nil, nil, 6000, nil); len(ids) != 0 {
		t.Fatalf("duration filter 6 s: %v", ids)
	}
	pattern := "^(i|d)"
	if ids, _ := list(2, nil, nil, -1, &pattern); !slices.Equal(ids, []string{"done/CompleteCommit", "idle/Empty"}) {
		t.Fatalf("pattern filter: %v", ids)
	}
	_ = idle
}

// Restarting on the log keeps the latest value of each id, tombstones
// included: everything Describe reported before is reported after.
func TestReloadKeepsLatestValuePerID(t *testing.T) {
	h := newHarness(t)
	a := h.init("a", 60000)
	h.add(a, tp("x", 0))
	a = h.init("a", 60000) // fences and aborts, then bumps
	h.add(a, tp("y", 1))
	expectCode(t, "AddOffsets", h.addOffsets(a, 3, "g"), nil)
	b := h.init("b", 60000)
	h.add(b, tp("x", 0))
	expectCode(t, "commit b", h.endTxn(b, 3, true).ErrorCode, nil)
	c := h.init("c", 60000)
	h.waitIdle()
	h.clock.Advance(8 * 24 * time.Hour) // past transactional.id.expiration.ms for the idle ones
	h.add(a, tp("y", 2))                // keeps a fresh, open
	result, err := h.c.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// a's transaction is 8 days old: past its 60 s timeout it is aborted.
	slices.Sort(result.Expired)
	if !slices.Equal(result.Expired, []string{"b", "c"}) || !slices.Equal(result.Aborted, []string{"a"}) {
		t.Fatalf("tick: %+v", result)
	}
	h.waitIdle()
	before := h.describe("a")
	h.c.Close()
	h.start()
	after := h.describe("a")
	if before.State != after.State || before.ProducerEpoch != after.ProducerEpoch || before.ProducerID != after.ProducerID ||
		before.State != "CompleteAbort" {
		t.Fatalf("a before %+v after %+v", before, after)
	}
	for _, id := range []string{"b", "c"} {
		expectCode(t, "expired "+id, h.describe(id).ErrorCode, kerr.TransactionalIDNotFound)
	}
	// An expired id starts again with a new producer id.
	again := h.init("c", 60000)
	if again.pid == c.pid || again.epoch != 0 {
		t.Fatalf("expired id restarted as %+v (was %+v)", again, c)
	}
}

// KIP-890 part 1: VerifyPartition and the brokers' VerifyOnly form of
// AddPartitionsToTxn (v4+) accept only partitions of the open transaction
// of the current producer.
func TestVerifyPartitions(t *testing.T) {
	h := newHarness(t)
	p := h.init("app", 60000)
	if err := h.c.VerifyPartition("app", p.pid, p.epoch, "a", 0); err == nil {
		t.Fatal("verified a partition with no transaction open")
	}
	h.add(p, tp("a", 0))
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	for _, transaction := range []kmsg.AddPartitionsToTxnRequestTransaction{
		{TransactionalID: "app", ProducerID: p.pid, ProducerEpoch: p.epoch, VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{0, 1}}}},
		{TransactionalID: "app", ProducerID: p.pid, ProducerEpoch: p.epoch - 1, VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{0}}}},
		{TransactionalID: "nobody", ProducerID: 1, ProducerEpoch: 0, VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{0}}}},
	} {
		req.Transactions = append(req.Transactions, transaction)
	}
	resp := h.c.AddPartitionsToTxn(context.Background(), req)
	var codes []int16
	for _, transaction := range resp.Transactions {
		for _, topic := range transaction.Topics {
			for _, partition := range topic.Partitions {
				codes = append(codes, partition.ErrorCode)
			}
		}
	}
	want := []int16{0, kerr.InvalidTxnState.Code, kerr.ProducerFenced.Code, kerr.InvalidProducerIDMapping.Code}
	if !slices.Equal(codes, want) {
		t.Fatalf("verify codes %v, want %v", codes, want)
	}
	if got := len(h.states("app")); got != 2 {
		t.Fatalf("verification wrote to the log: %d records", got)
	}
	// The v5 add form (a partition leader adding implicitly) adds.
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 5
	add.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: "app", ProducerID: p.pid, ProducerEpoch: p.epoch,
		Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "b", Partitions: []int32{3}}}}}
	if code := h.c.AddPartitionsToTxn(context.Background(), add).Transactions[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("v5 add: %v", kerr.ErrorForCode(code))
	}
	if err := h.c.VerifyPartition("app", p.pid, p.epoch, "b", 3); err != nil {
		t.Fatalf("verify after implicit add: %v", err)
	}
	if code := ProduceErrorCode(h.c.VerifyPartition("app", p.pid, p.epoch-1, "b", 3)); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("produce code for a fenced producer: %v", kerr.ErrorForCode(code))
	}
}

// KIP-890 part 2 (transaction version 2, EndTxn v5): every EndTxn bumps the
// epoch, markers carry the bumped epoch, the response hands it to the
// producer, and a retry with the old epoch is answered with the same.
func TestTransactionVersion2BumpsEpochAtEveryEnd(t *testing.T) {
	h := newHarness(t)
	h.cfg.TransactionVersion2 = true
	h.c.Close()
	h.start()
	p := h.init("app", 60000)
	h.add(p, tp("a", 0))
	resp := h.endTxn(p, 5, true)
	expectCode(t, "EndTxn v5", resp.ErrorCode, nil)
	if resp.ProducerID != p.pid || resp.ProducerEpoch != p.epoch+1 {
		t.Fatalf("EndTxn v5 returned %d/%d", resp.ProducerID, resp.ProducerEpoch)
	}
	h.waitIdle()
	if calls := h.markers.succeeded(); len(calls) != 1 || calls[0].ProducerEpoch != p.epoch+1 {
		t.Fatalf("markers %+v", calls)
	}
	retry := h.endTxn(p, 5, true)
	if retry.ErrorCode != 0 || retry.ProducerEpoch != p.epoch+1 {
		t.Fatalf("retry: %+v", retry)
	}
	next := producer{id: "app", pid: resp.ProducerID, epoch: resp.ProducerEpoch}
	expectCode(t, "old epoch add", h.addPartitions(p, 3, tp("a", 0))[0], kerr.ProducerFenced)
	h.add(next, tp("a", 0))
	// An abort with nothing open still bumps.
	resp = h.endTxn(next, 5, false)
	expectCode(t, "abort", resp.ErrorCode, nil)
	resp = h.endTxn(producer{id: "app", pid: resp.ProducerID, epoch: resp.ProducerEpoch}, 5, false)
	if resp.ErrorCode != 0 || resp.ProducerEpoch != next.epoch+2 {
		t.Fatalf("empty abort: %+v", resp)
	}
	// v4 keeps the classic behaviour and reports no producer id.
	h.waitIdle()
	cur := producer{id: "app", pid: resp.ProducerID, epoch: resp.ProducerEpoch}
	h.add(cur, tp("a", 0))
	v4 := h.endTxn(cur, 4, true)
	if v4.ErrorCode != 0 || v4.ProducerID != -1 {
		t.Fatalf("v4: %+v", v4)
	}
}

// Transaction version 2 at the last epoch: EndTxn moves to a new producer
// id at epoch 0, and a retry from the old id is still recognized.
func TestTransactionVersion2RotatesProducerID(t *testing.T) {
	h := newHarness(t)
	h.cfg.TransactionVersion2 = true
	h.c.Close()
	h.start()
	p := h.init("app", 60000)
	// Fast-forward the epoch by writing a state, as a long-lived producer
	// would reach it.
	e, _ := h.c.lockEntry("app", nil)
	m := e.meta.clone()
	m.ProducerEpoch = maxProducerEpoch - 1
	if err := h.c.write(context.Background(), e, m); err != nil {
		t.Fatal(err)
	}
	e.mu.Unlock()
	p.epoch = maxProducerEpoch - 1
	h.add(p, tp("a", 0))
	resp := h.endTxn(p, 5, true)
	if resp.ErrorCode != 0 || resp.ProducerID == p.pid || resp.ProducerEpoch != 0 {
		t.Fatalf("rotation: %+v", resp)
	}
	h.waitIdle()
	if calls := h.markers.succeeded(); len(calls) != 1 || calls[0].ProducerID != p.pid || calls[0].ProducerEpoch != maxProducerEpoch {
		t.Fatalf("markers %+v", calls)
	}
	retry := h.endTxn(p, 5, true)
	if retry.ErrorCode != 0 || retry.ProducerID != resp.ProducerID || retry.ProducerEpoch != 0 {
		t.Fatalf("retry after rotation: %+v", retry)
	}
}
