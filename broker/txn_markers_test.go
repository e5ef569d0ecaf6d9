package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/wire"
)

// Broker-side pieces of transactions driven by hand: the WriteTxnMarkers
// handler as a remote coordinator would call it, KIP-890 verification on
// Produce, the verification guard, and the transaction.version feature.

// openRawTransaction initialises transactionalID, adds topic-0 to its
// transaction and writes one transactional batch there; it returns the
// producer id and epoch.
func openRawTransaction(t *testing.T, r *rawConnection, transactionalID, topic string) (int64, int16) {
	t.Helper()
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionalID, initReq.TransactionTimeoutMillis = kmsg.StringPtr(transactionalID), 60000
	r.request(initReq, 4)
	initResp := kmsg.NewPtrInitProducerIDResponse()
	r.response(initResp, 4)
	if initResp.ErrorCode != 0 {
		t.Fatalf("init %s: %v", transactionalID, kerr.ErrorForCode(initResp.ErrorCode))
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = transactionalID, initResp.ProducerID, initResp.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	r.request(add, 3)
	addResp := kmsg.NewPtrAddPartitionsToTxnResponse()
	r.response(addResp, 3)
	if code := addResp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("add %s: %v", topic, kerr.ErrorForCode(code))
	}
	if got := r.produceTransactional(transactionalID, topic, 0, initResp.ProducerID, initResp.ProducerEpoch); got.ErrorCode != 0 {
		t.Fatalf("transactional produce: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	return initResp.ProducerID, initResp.ProducerEpoch
}

// TestWriteTxnMarkersHandler: a COMMIT marker sent as a WriteTxnMarkers
// request closes the producer's transaction on the partition (the LSO
// reaches the high watermark); a stale marker is answered with success and
// not written; a marker for a missing partition gets
// UNKNOWN_TOPIC_OR_PARTITION.
func TestWriteTxnMarkersHandler(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), txnTestProperties("0"))
	createTopic(t, newTestClient(t, b), "marked", 1, nil)
	readyCoordinator(t, b, coordinatorTransaction, "marked-id")
	r := dialRaw(t, b)
	producerID, epoch := openRawTransaction(t, r, "marked-id", "marked")
	p, err := b.partitionOf(b.topicByName("marked"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.LastStableOffset() != 0 || p.HighWatermark() != 1 {
		t.Fatalf("open transaction: LSO %d, high watermark %d", p.LastStableOffset(), p.HighWatermark())
	}
	send := func(topic string, partition int32, markerEpoch int16) int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		marker := kmsg.NewWriteTxnMarkersRequestMarker()
		marker.ProducerID, marker.ProducerEpoch, marker.Committed, marker.CoordinatorEpoch = producerID, markerEpoch, true, 0
		marker.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{partition}}}
		req.Markers = append(req.Markers, marker)
		r.request(req, 1)
		resp := kmsg.NewPtrWriteTxnMarkersResponse()
		r.response(resp, 1)
		return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	if code := send("marked", 0, epoch); code != 0 {
		t.Fatalf("commit marker: %v", kerr.ErrorForCode(code))
	}
	if p.LastStableOffset() != 2 || p.HighWatermark() != 2 {
		t.Fatalf("after the marker: LSO %d, high watermark %d, want both 2", p.LastStableOffset(), p.HighWatermark())
	}
	// A newer epoch's marker moves the producer on; the old one is stale.
	if code := send("marked", 0, epoch+1); code != 0 {
		t.Fatalf("newer marker: %v", kerr.ErrorForCode(code))
	}
	end := p.HighWatermark()
	if code := send("marked", 0, epoch); code != 0 || p.HighWatermark() != end {
		t.Fatalf("stale marker: %v, log end %d → %d", kerr.ErrorForCode(code), end, p.HighWatermark())
	}
	if code := send("absent", 0, epoch+1); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("marker for a missing topic: %v", kerr.ErrorForCode(code))
	}
}

// TestProduceVerification (KIP-890 part 1): a transactional batch for a
// partition that was not added to the producer's transaction is refused
// with INVALID_TXN_STATE and not written, so it cannot open a transaction
// no marker would close; an unknown transactional id is
// INVALID_PRODUCER_ID_MAPPING.
func TestProduceVerification(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), txnTestProperties("0"))
	client := newTestClient(t, b)
	createTopic(t, client, "verified", 1, nil)
	createTopic(t, client, "unadded", 1, nil)
	readyCoordinator(t, b, coordinatorTransaction, "verify-id")
	r := dialRaw(t, b)
	producerID, epoch := openRawTransaction(t, r, "verify-id", "verified")
	if got := r.produceTransactional("verify-id", "unadded", 0, producerID, epoch); got.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("batch for a partition outside the transaction: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(got.ErrorCode))
	}
	if got := r.produceTransactional("nobody", "unadded", 0, producerID+100, 0); got.ErrorCode != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("batch of an unknown transactional id: %v, want INVALID_PRODUCER_ID_MAPPING", kerr.ErrorForCode(got.ErrorCode))
	}
	p, err := b.partitionOf(b.topicByName("unadded"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 0 || p.LastStableOffset() != 0 {
		t.Fatalf("refused batches were written: high watermark %d", p.HighWatermark())
	}
}

// TestVerificationGuardRace: the sequence Jepsen found in Kafka — a batch
// is verified, then the transaction ends (its marker is written) before
// the batch is appended. The marker removes the guard, so the late batch
// is refused instead of opening a transaction that would hold the last
// stable offset back forever.
func TestVerificationGuardRace(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), txnTestProperties("0"))
	createTopic(t, newTestClient(t, b), "raced", 1, nil)
	readyCoordinator(t, b, coordinatorTransaction, "race-id")
	r := dialRaw(t, b)
	producerID, epoch := openRawTransaction(t, r, "race-id", "raced")
	p, err := b.partitionOf(b.topicByName("raced"), 0)
	if err != nil {
		t.Fatal(err)
	}
	options := wire.PlainBatchOptions()
	options.ProducerID, options.ProducerEpoch, options.BaseSequence, options.Transactional = producerID, epoch, 1, true
	late, err := wire.BuildBatch(options, []wire.BuilderRecord{{Value: []byte("late")}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := partition.Analyze(partition.OriginClient, late, 0, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	var verified error = errors.New("not verified")
	raced := racingVerifier{
		produceTxn: produceTxn{broker: b, transactionalID: []byte("race-id"), version: 9, ctx: testContext(t, 5*time.Second)},
		verified:   &verified,
		afterVerify: func() error {
			_, err := p.AppendMarker(producerID, epoch, 0, true)
			return err
		},
	}
	_, err = p.AppendClient(late, &info, raced)
	if verified != nil {
		t.Fatalf("verification of a batch in the open transaction: %v", verified)
	}
	if err == nil || errorCode(err) != kerr.InvalidTxnState.Code {
		t.Fatalf("late batch after the marker: %v, want INVALID_TXN_STATE", err)
	}
	if p.LastStableOffset() != p.HighWatermark() {
		t.Fatalf("LSO %d held below the high watermark %d", p.LastStableOffset(), p.HighWatermark())
	}
}

// racingVerifier is a request's produceTxn whose verification, once
// answered, lets the transaction end (afterVerify writes its marker)
// before the batch reaches the append: the window Jepsen found.
type racingVerifier struct {
	produceTxn
	verified    *error
	afterVerify func() error
}

func (v racingVerifier) VerifyTransactional(producerID int64, producerEpoch int16, topic string, index int32) error {
	*v.verified = v.produceTxn.VerifyTransactional(producerID, producerEpoch, topic, index)
	if *v.verified != nil {
		return *v.verified
	}
	return v.afterVerify()
}

// TestTransactionVersionFeature: ApiVersions v3+ advertises
// transaction.version as supported 0–2 and finalized at the broker's
// setting (absent at 0), which is what makes franz-go pick the protocol.
func TestTransactionVersionFeature(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		setting   string
		finalized int16 // -1: not listed
	}{{"0", -1}, {"1", 1}, {"2", 2}} {
		b := startTestBroker(t, t.TempDir(), txnTestProperties(tc.setting))
		client := newTestClient(t, b)
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testContext(t, 10*time.Second), client)
		if err != nil {
			t.Fatal(err)
		}
		finalized := int16(-1)
		for _, feature := range resp.FinalizedFeatures {
			if feature.Name == "transaction.version" {
				finalized = feature.MaxVersionLevel
			}
		}
		supported := false
		for _, feature := range resp.SupportedFeatures {
			supported = supported || feature.Name == "transaction.version" && feature.MinVersion == 0 && feature.MaxVersion == 2
		}
		if finalized != tc.finalized || !supported {
			t.Errorf("transaction.version=%s: finalized %d (want %d), supported 0–2 %v", tc.setting, finalized, tc.finalized, supported)
		}
	}
}

// TestTransactionMaxTimeout: InitProducerId asking for more than
// transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT.
func TestTransactionMaxTimeout(t *testing.T) {
	t.Parallel()
	properties := txnTestProperties("2")
	properties["transaction.max.timeout.ms"] = "1000"
	b := startTestBroker(t, t.TempDir(), properties)
	readyCoordinator(t, b, coordinatorTransaction, "bounded")
	r := dialRaw(t, b)
	for _, tc := range []struct {
		timeout int32
		want    int16
	}{{1001, kerr.InvalidTransactionTimeout.Code}, {1000, 0}} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("bounded"), tc.timeout
		r.request(req, 4)
		resp := kmsg.NewPtrInitProducerIDResponse()
		r.response(resp, 4)
		if resp.ErrorCode != tc.want {
			t.Errorf("timeout %d ms: %v, want %v", tc.timeout, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(tc.want))
		}
	}
}

// TestTxnOffsetCommitPendingUntilCommit: offsets committed in a
// transaction are pending — OffsetFetch with RequireStable answers
// UNSTABLE_OFFSET_COMMIT and without it the old offset — until EndTxn
// commits, which makes them visible through the coordinator's
// OffsetCommitter wiring; an aborted transaction's offsets are dropped.
func TestTxnOffsetCommitPendingUntilCommit(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), txnTestProperties("0"))
	createTopic(t, newTestClient(t, b), "consumed", 1, nil)
	readyCoordinator(t, b, coordinatorTransaction, "offsets-id")
	readyCoordinator(t, b, coordinatorGroup, "pipeline")
	r := dialRaw(t, b)
	producerID, epoch := openRawTransaction(t, r, "offsets-id", "consumed")
	roundTrip := func(req kmsg.Request, resp kmsg.Response, version int16) {
		r.request(req, version)
		r.response(resp, version)
	}
	fetchOffset := func(requireStable bool) (int64, int16) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = "pipeline", requireStable
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "consumed", Partitions: []int32{0}}}
		resp := kmsg.NewPtrOffsetFetchResponse()
		roundTrip(req, resp, 7)
		partition := resp.Topics[0].Partitions[0]
		return partition.Offset, partition.ErrorCode
	}
	commitOffset := func(offset int64, commit bool) {
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "offsets-id", producerID, epoch, "pipeline"
		addResp := kmsg.NewPtrAddOffsetsToTxnResponse()
		roundTrip(add, addResp, 3)
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, req.Generation = "offsets-id", producerID, epoch, "pipeline", -1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "consumed", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		roundTrip(req, resp, 3)
		if addResp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("commit offset %d: add %v, commit %v", offset, kerr.ErrorForCode(addResp.ErrorCode),
				kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
		}
		if offset, code := fetchOffset(true); code != kerr.UnstableOffsetCommit.Code {
			t.Fatalf("pending offset, RequireStable: offset %d, %v, want UNSTABLE_OFFSET_COMMIT", offset, kerr.ErrorForCode(code))
		}
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "offsets-id", producerID, epoch, commit
		endResp := kmsg.NewPtrEndTxnResponse()
		roundTrip(end, endResp, 3)
		if endResp.ErrorCode != 0 {
			t.Fatalf("end transaction (commit %v): %v", commit, kerr.ErrorForCode(endResp.ErrorCode))
		}
	}
	commitOffset(7, true)
	if offset, code := fetchOffset(true); code != 0 || offset != 7 {
		t.Fatalf("after the commit: offset %d, %v, want 7", offset, kerr.ErrorForCode(code))
	}
	commitOffset(9, false)
	if offset, code := fetchOffset(true); code != 0 || offset != 7 {
		t.Fatalf("after the abort: offset %d, %v, want still 7", offset, kerr.ErrorForCode(code))
	}
}
