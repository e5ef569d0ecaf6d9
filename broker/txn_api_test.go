package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// txnAPI calls the transaction per-API handlers directly, on a broker that
// holds only a transaction coordinator over an in-memory log (markers
// succeed at once; no sockets, no timer: time does not move) and a group
// coordinator over an in-memory store.
type txnAPI struct {
	t      *testing.T
	broker *Broker
	// coordinator is the broker's one transaction coordinator shard.
	coordinator *txn.Coordinator
	conn        *connection
	ctx         context.Context
}

// txnAPIIDs hands out producer ids from 100.
type txnAPIIDs struct {
	mu   sync.Mutex
	next int64
}

func (s *txnAPIIDs) Next() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	return 99 + s.next, nil
}

type txnAPIMarkers struct{}

func (txnAPIMarkers) WriteMarkers(context.Context, int64, int16, int32, bool, []txn.TopicPartition) error {
	return nil
}

func newTxnAPI(t *testing.T, transactionVersion int16, adjust func(*txn.Config)) *txnAPI {
	t.Helper()
	// One __consumer_offsets partition, as withCoordinatorShards makes.
	cfg := txn.Config{CleanupInterval: -1, CompletionWait: 10 * time.Second, OffsetsTopicPartitions: 1}
	if adjust != nil {
		adjust(&cfg)
	}
	coordinator, err := txn.NewCoordinator(cfg, txn.NewMemoryLog(), &txnAPIIDs{}, txnAPIMarkers{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = coordinator.Close() })
	// A group coordinator takes the offsets TxnOffsetCommit stages.
	groups, err := group.NewCoordinator(group.Config{NoInitialRebalanceDelay: true}, group.NewMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = groups.Close() })
	b := &Broker{transactionVersion: transactionVersion, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	withCoordinatorShards(b, groups, coordinator)
	return &txnAPI{t: t, broker: b, coordinator: coordinator, conn: &connection{broker: b, logger: b.logger}, ctx: context.Background()}
}

// txnProducer is a client's producer id and epoch for a transactional id.
type txnProducer struct {
	id    string
	pid   int64
	epoch int16
}

func (a *txnAPI) init(version int16, id string, current *txnProducer) (txnProducer, int16) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = version, &id, 60_000
	if current != nil {
		req.ProducerID, req.ProducerEpoch = current.pid, current.epoch
	}
	resp := serveAPI(a.ctx, a.conn, req).(*kmsg.InitProducerIDResponse)
	return txnProducer{id: id, pid: resp.ProducerID, epoch: resp.ProducerEpoch}, resp.ErrorCode
}

func (a *txnAPI) mustInit(id string) txnProducer {
	a.t.Helper()
	p, code := a.init(5, id, nil)
	if code != 0 {
		a.t.Fatalf("InitProducerId %q: %v", id, kerr.ErrorForCode(code))
	}
	return p
}

// addPartitions is a client's AddPartitionsToTxn (v0–3): the code of each
// partition, in request order.
func (a *txnAPI) addPartitions(version int16, p txnProducer, partitions ...txn.TopicPartition) []int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, p.id, p.pid, p.epoch
	for _, tp := range partitions {
		req.Topics = append(req.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	resp := serveAPI(a.ctx, a.conn, req).(*kmsg.AddPartitionsToTxnResponse)
	var codes []int16
	for _, topic := range resp.Topics {
		for _, partition := range topic.Partitions {
			codes = append(codes, partition.ErrorCode)
		}
	}
	return codes
}

func (a *txnAPI) addOffsets(version int16, p txnProducer, group string) int16 {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = version, p.id, p.pid, p.epoch, group
	return serveAPI(a.ctx, a.conn, req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
}

func (a *txnAPI) endTxn(version int16, p txnProducer, commit bool) *kmsg.EndTxnResponse {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, p.id, p.pid, p.epoch, commit
	return serveAPI(a.ctx, a.conn, req).(*kmsg.EndTxnResponse)
}

func (a *txnAPI) describe(ids ...string) []kmsg.DescribeTransactionsResponseTransactionState {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = ids
	return serveAPI(a.ctx, a.conn, req).(*kmsg.DescribeTransactionsResponse).TransactionStates
}

// txnOffsetCommitCode is the code of a TxnOffsetCommit of one partition's
// offset for groupID: the transaction coordinator's refusal, else the
// group coordinator's answer (0 for a commit staged).
func (a *txnAPI) txnOffsetCommitCode(version int16, p txnProducer, groupID string) int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = version, p.id, p.pid, p.epoch, groupID
	topic := kmsg.NewTxnOffsetCommitRequestTopic()
	topic.Topic = "consumed"
	partition := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	partition.Offset = 1
	topic.Partitions = append(topic.Partitions, partition)
	req.Topics = append(req.Topics, topic)
	return serveAPI(a.ctx, a.conn, req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(wantCode))
	}
}

func ttp(topic string, partition int32) txn.TopicPartition {
	return txn.TopicPartition{Topic: topic, Partition: partition}
}

// Every transaction coordinator sentinel maps to the Kafka error clients
// have always seen for it, also when wrapped with context, in every
// transactional API; a fenced producer is PRODUCER_FENCED from the first
// version of each API that knows it (KIP-588) and INVALID_PRODUCER_EPOCH
// before it and in every Produce version.
func TestTxnErrorCodes(t *testing.T) {
	t.Parallel()
	apis := []int16{wire.APIInitProducerID, wire.APIAddPartitionsToTxn, wire.APIAddOffsetsToTxn, wire.APIEndTxn,
		wire.APITxnOffsetCommit, wire.APIDescribeTransactions, wire.APIListTransactions}
	for _, c := range []struct {
		err  error
		code *kerr.Error
	}{
		{txn.ErrInvalidRequest, kerr.InvalidRequest},
		{txn.ErrInvalidTxnState, kerr.InvalidTxnState},
		{txn.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
		{txn.ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
		{txn.ErrInvalidTransactionTimeout, kerr.InvalidTransactionTimeout},
		{txn.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{txn.ErrCoordinatorClosed, kerr.NotCoordinator},
		{txn.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
		{txn.ErrOperationNotAttempted, kerr.OperationNotAttempted},
		{txn.ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound},
		{txn.ErrInvalidRegularExpression, kerr.InvalidRegularExpression},
		// Anything the table does not know is a failed log append.
		{errors.New("unclassified"), kerr.CoordinatorNotAvailable},
	} {
		wrapped := fmt.Errorf("transactional id %q: %w", "app", c.err)
		for _, api := range apis {
			for version := int16(0); version <= 5; version++ {
				if got := errcode.Txn(wrapped, api, version); got != c.code.Code {
					t.Errorf("%v in API %d v%d: %v, want %v", c.err, api, version, kerr.ErrorForCode(got), c.code)
				}
			}
		}
	}
	fenced := fmt.Errorf("transactional id %q: %w", "app", txn.ErrProducerFenced)
	for api, since := range map[int16]int16{
		wire.APIInitProducerID: 4, wire.APIAddPartitionsToTxn: 2, wire.APIAddOffsetsToTxn: 2,
		wire.APIEndTxn: 2, wire.APITxnOffsetCommit: 3,
	} {
		for version := int16(0); version <= 6; version++ {
			want := kerr.ProducerFenced
			if version < since {
				want = kerr.InvalidProducerEpoch
			}
			if got := errcode.Txn(fenced, api, version); got != want.Code {
				t.Errorf("fenced in API %d v%d: %v, want %v", api, version, kerr.ErrorForCode(got), want)
			}
		}
	}
	for version := int16(3); version <= 12; version++ {
		if got := produceErrorCode(fenced, version); got != kerr.InvalidProducerEpoch.Code {
			t.Errorf("fenced in Produce v%d: %v, want INVALID_PRODUCER_EPOCH", version, kerr.ErrorForCode(got))
		}
	}
}

// A fenced producer gets PRODUCER_FENCED or INVALID_PRODUCER_EPOCH by
// request version from every handler; KIP-360 fields count from
// InitProducerId v3.
func TestTxnFencedCodesByVersion(t *testing.T) {
	t.Parallel()
	a := newTxnAPI(t, 2, nil)
	zombie := a.mustInit("app")
	wantCode(t, "add", a.addPartitions(3, zombie, ttp("out", 0))[0], nil)
	fresh := a.mustInit("app") // fences and aborts the zombie's transaction
	if fresh.pid != zombie.pid || fresh.epoch != zombie.epoch+2 {
		t.Fatalf("new instance %+v, zombie %+v", fresh, zombie)
	}
	for _, version := range []int16{0, 1, 2, 3} {
		want := kerr.ProducerFenced
		if version < 2 {
			want = kerr.InvalidProducerEpoch
		}
		wantCode(t, fmt.Sprintf("zombie AddPartitionsToTxn v%d", version), a.addPartitions(version, zombie, ttp("out", 1))[0], want)
		wantCode(t, fmt.Sprintf("zombie AddOffsetsToTxn v%d", version), a.addOffsets(version, zombie, "g"), want)
		wantCode(t, fmt.Sprintf("zombie EndTxn v%d", version), a.endTxn(version, zombie, true).ErrorCode, want)
	}
	for _, version := range []int16{2, 3} {
		want := kerr.ProducerFenced
		if version < 3 {
			want = kerr.InvalidProducerEpoch
		}
		wantCode(t, fmt.Sprintf("zombie TxnOffsetCommit v%d", version), a.txnOffsetCommitCode(version, zombie, "g"), want)
	}
	// KIP-360: v3 carries the producer's id and epoch (INVALID_PRODUCER_EPOCH
	// for a fenced one), v4+ PRODUCER_FENCED; v2 has no such fields, so the
	// same request is a new instance and bumps.
	_, code := a.init(3, "app", &zombie)
	wantCode(t, "zombie InitProducerId v3", code, kerr.InvalidProducerEpoch)
	_, code = a.init(4, "app", &zombie)
	wantCode(t, "zombie InitProducerId v4", code, kerr.ProducerFenced)
	bumped, code := a.init(2, "app", &zombie)
	wantCode(t, "InitProducerId v2 with producer fields", code, nil)
	if bumped.epoch != fresh.epoch+1 {
		t.Fatalf("v2 init epoch %d, want %d", bumped.epoch, fresh.epoch+1)
	}
	// Produce: a fenced producer is INVALID_PRODUCER_EPOCH in every version.
	tx := produceTxn{broker: a.broker, transactionalID: []byte("app"), version: 12, ctx: a.ctx}
	err := a.broker.verifyTransactionalBatch(tx, zombie.pid, zombie.epoch, "out", 0)
	wantCode(t, "zombie Produce v12", produceErrorCode(err, 12), kerr.InvalidProducerEpoch)
}

// KIP-890 through the handlers: the brokers' batched AddPartitionsToTxn
// (v4+ VerifyOnly and add), the implicit adds of Produce v12+ and
// TxnOffsetCommit v5+ under transaction.version 2 (older versions only
// verify), and EndTxn v5's epoch bump only at transaction.version 2.
func TestTxnKIP890Versions(t *testing.T) {
	t.Parallel()
	a := newTxnAPI(t, 2, nil)
	p := a.mustInit("app")
	wantCode(t, "add", a.addPartitions(3, p, ttp("a", 0))[0], nil)
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{
		{TransactionalID: "app", ProducerID: p.pid, ProducerEpoch: p.epoch, VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{0, 1}}}},
		{TransactionalID: "app", ProducerID: p.pid, ProducerEpoch: p.epoch - 1, VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{0}}}},
		{TransactionalID: "nobody", ProducerID: 1, ProducerEpoch: 0, VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{0}}}},
		{TransactionalID: "app", ProducerID: p.pid, ProducerEpoch: p.epoch,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "b", Partitions: []int32{3}}}},
	}
	resp := serveAPI(a.ctx, a.conn, req).(*kmsg.AddPartitionsToTxnResponse)
	var codes []int16
	for _, transaction := range resp.Transactions {
		for _, topic := range transaction.Topics {
			for _, partition := range topic.Partitions {
				codes = append(codes, partition.ErrorCode)
			}
		}
	}
	want := []int16{0, kerr.InvalidTxnState.Code, kerr.ProducerFenced.Code, kerr.InvalidProducerIDMapping.Code, 0}
	if !slices.Equal(codes, want) {
		t.Fatalf("batched codes %v, want %v", codes, want)
	}

	// Produce: v11 only verifies; v12 adds the partition.
	tx := produceTxn{broker: a.broker, transactionalID: []byte("app"), version: 11, ctx: a.ctx}
	wantCode(t, "Produce v11 to a partition not added", produceErrorCode(a.broker.verifyTransactionalBatch(tx, p.pid, p.epoch, "c", 0), 11), kerr.InvalidTxnState)
	tx.version = 12
	wantCode(t, "Produce v12 adds", produceErrorCode(a.broker.verifyTransactionalBatch(tx, p.pid, p.epoch, "c", 0), 12), nil)
	// TxnOffsetCommit: v4 only verifies; v5 adds the group.
	wantCode(t, "TxnOffsetCommit v4, group not added", a.txnOffsetCommitCode(4, p, "g"), kerr.InvalidTxnState)
	wantCode(t, "TxnOffsetCommit v5 adds", a.txnOffsetCommitCode(5, p, "g"), nil)
	wantCode(t, "TxnOffsetCommit v4 after the add", a.txnOffsetCommitCode(4, p, "g"), nil)
	described := a.describe("app")[0]
	var topics []string
	for _, topic := range described.Topics {
		topics = append(topics, fmt.Sprint(topic.Topic, topic.Partitions))
	}
	if want := []string{"__consumer_offsets[" + fmt.Sprint(txn.PartitionFor("g", 1)) + "]", "a[0]", "b[3]", "c[0]"}; !slices.Equal(topics, want) {
		t.Fatalf("participants %v, want %v", topics, want)
	}

	// EndTxn v4 keeps the epoch and answers no producer; v5 bumps.
	v4 := a.endTxn(4, p, true)
	if v4.ErrorCode != 0 || v4.ProducerID != -1 || v4.ProducerEpoch != -1 {
		t.Fatalf("EndTxn v4: %+v", v4)
	}
	wantCode(t, "add", a.addPartitions(3, p, ttp("a", 0))[0], nil)
	v5 := a.endTxn(5, p, true)
	if v5.ErrorCode != 0 || v5.ProducerID != p.pid || v5.ProducerEpoch != p.epoch+1 {
		t.Fatalf("EndTxn v5: %+v", v5)
	}

	// Below transaction.version 2 EndTxn v5 behaves as v4, and Produce
	// v12 and TxnOffsetCommit v5 only verify.
	old := newTxnAPI(t, 1, nil)
	q := old.mustInit("q")
	wantCode(t, "add", old.addPartitions(3, q, ttp("a", 0))[0], nil)
	if resp := old.endTxn(5, q, true); resp.ErrorCode != 0 || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Fatalf("EndTxn v5 at transaction.version 1: %+v", resp)
	}
	wantCode(t, "add", old.addPartitions(3, q, ttp("a", 0))[0], nil) // the epoch was not bumped
	tx = produceTxn{broker: old.broker, transactionalID: []byte("q"), version: 12, ctx: old.ctx}
	wantCode(t, "Produce v12 at transaction.version 1", produceErrorCode(old.broker.verifyTransactionalBatch(tx, q.pid, q.epoch, "c", 0), 12), kerr.InvalidTxnState)
	wantCode(t, "TxnOffsetCommit v5 at transaction.version 1", old.txnOffsetCommitCode(5, q, "g"), kerr.InvalidTxnState)
}

// Unknown partitions, unknown ids, ListTransactions' version-gated filters
// and a closed coordinator, through the handlers.
func TestTxnRequestErrorsThroughHandlers(t *testing.T) {
	t.Parallel()
	a := newTxnAPI(t, 2, func(cfg *txn.Config) {
		cfg.PartitionExists = func(topic string, _ int32) bool { return topic != "missing" }
	})
	p := a.mustInit("app")
	codes := a.addPartitions(3, p, ttp("a", 1), ttp("missing", 0))
	if !slices.Equal(codes, []int16{kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code}) {
		t.Fatalf("unknown partition codes %v", codes)
	}
	_, code := a.init(4, "app", &txnProducer{pid: -1, epoch: 3})
	wantCode(t, "half-set KIP-360 fields", code, kerr.InvalidRequest)
	empty := ""
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = &empty
	wantCode(t, "empty transactional id", serveAPI(a.ctx, a.conn, init).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.InvalidRequest)
	wantCode(t, "AddOffsetsToTxn without a group", a.addOffsets(3, p, ""), kerr.InvalidRequest)
	wantCode(t, "EndTxn with nothing open", a.endTxn(3, p, true).ErrorCode, kerr.InvalidTxnState)
	wantCode(t, "EndTxn of an unknown id", a.endTxn(3, txnProducer{id: "nobody"}, true).ErrorCode, kerr.InvalidProducerIDMapping)
	states := a.describe("app", "nobody")
	if states[0].ErrorCode != 0 || states[0].State != "Empty" || states[0].ProducerID != p.pid {
		t.Fatalf("describe app: %+v", states[0])
	}
	wantCode(t, "describe unknown", states[1].ErrorCode, kerr.TransactionalIDNotFound)

	list := func(version int16, duration int64, pattern *string) *kmsg.ListTransactionsResponse {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.DurationFilterMillis, req.TransactionalIDPattern = version, duration, pattern
		return serveAPI(a.ctx, a.conn, req).(*kmsg.ListTransactionsResponse)
	}
	// v0 has no duration filter: a large one is ignored; v1 applies it.
	if resp := list(0, 1<<40, nil); resp.ErrorCode != 0 || len(resp.TransactionStates) != 1 {
		t.Fatalf("list v0: %+v", resp)
	}
	if resp := list(1, 1<<40, nil); resp.ErrorCode != 0 || len(resp.TransactionStates) != 0 {
		t.Fatalf("list v1 with a duration filter: %+v", resp)
	}
	bad := "("
	wantCode(t, "list v2 with a bad pattern", list(2, -1, &bad).ErrorCode, kerr.InvalidRegularExpression)
	wantCode(t, "list v1 ignores the pattern", list(1, -1, &bad).ErrorCode, nil)

	_ = a.coordinator.Close()
	_, code = a.init(4, "app", nil)
	wantCode(t, "InitProducerId after close", code, kerr.NotCoordinator)
	wantCode(t, "describe after close", a.describe("app")[0].ErrorCode, kerr.NotCoordinator)
	// ListTransactions lists what the shards led here hold: a closed one
	// (its partition's leadership going) holds nothing.
	if resp := list(1, -1, nil); resp.ErrorCode != 0 || len(resp.TransactionStates) != 0 {
		t.Fatalf("list after close: %+v, want no error and no transaction", resp)
	}
}

// Every transaction handler answers every version it serves with a
// response of that version, which kmsg encodes and decodes back to the
// same bytes.
func TestTxnResponsesEncodeAtEveryVersion(t *testing.T) {
	t.Parallel()
	a := newTxnAPI(t, 2, nil)
	p := a.mustInit("app")
	calls := []versionedCall{
		{"InitProducerId", [2]int16{0, 5}, func(v int16) kmsg.Response {
			id := fmt.Sprint("init-", v)
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version, req.TransactionalID, req.TransactionTimeoutMillis = v, &id, 1000
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"AddPartitionsToTxn", [2]int16{0, 5}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = v, p.id, p.pid, p.epoch
			req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "a", Partitions: []int32{0, 1}}}
			req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: p.id, ProducerID: p.pid, ProducerEpoch: p.epoch,
				Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{0, 1}}}}}
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"AddOffsetsToTxn", [2]int16{0, 4}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = v, p.id, p.pid, p.epoch, "g"
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"EndTxn", [2]int16{0, 5}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrEndTxnRequest()
			req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = v, "nobody", 1, 0
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"TxnOffsetCommit", [2]int16{0, 6}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = v, p.id, p.pid, p.epoch, "g"
			req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "consumed", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"DescribeTransactions", [2]int16{0, 0}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.Version, req.TransactionalIDs = v, []string{"app", "nobody"}
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"ListTransactions", [2]int16{0, 1}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrListTransactionsRequest()
			req.Version, req.StateFilters = v, []string{"Ongoing", "Bogus"}
			return serveAPI(a.ctx, a.conn, req)
		}},
	}
	checkEveryVersionRoundTrips(t, calls)
}
