package clusternode

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/internal/testutil"
	"github.com/exactly-eos/exactly/wire"
)

// sentinel is the value writeSentinels ends every partition with.
const sentinel = "end-of-test"

// writeSentinels appends one plain record to every partition of topic, so
// a reader knows it has read everything before it.
func writeSentinels(t *testing.T, seeds []string, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p := range partitions {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(sentinel)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatalf("sentinel to %s-%d: %v", topic, p, err)
		}
	}
}

// readToSentinels reads every partition of topic from the start with the
// isolation level given until each partition's sentinel, bounded; it
// returns the values before the sentinels.
func readToSentinels(t *testing.T, seeds []string, topic string, partitions int32, isolation kgo.IsolationLevel) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(isolation),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var out []string
	ended := map[int32]bool{}
	for len(ended) < int(partitions) {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: sentinels of %d of %d partitions before the deadline (%d records)", topic, len(ended), partitions, len(out))
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == sentinel {
				ended[r.Partition] = true
			} else if !ended[r.Partition] {
				out = append(out, string(r.Value))
			}
		})
	}
	return out
}

// distinctLeaders counts the distinct leaders of topic's partitions.
func distinctLeaders(img *quorum.Image, topic string) int {
	tp, _ := img.Topic(topic)
	leaders := map[int32]bool{}
	for _, p := range tp.Partitions {
		leaders[p.Leader] = true
	}
	return len(leaders)
}

// TestTransactionsAcrossLeaders: a transactional producer writes to the 3
// partitions of an RF-3 topic, led by different brokers, in three
// transactions: committed, aborted, committed. Its coordinator sends the
// markers to each partition's leader; read_committed sees exactly the
// committed records, read_uncommitted the aborted ones too.
func TestTransactionsAcrossLeaders(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, coordinatorProps())
	c.waitMetadata(3, "", 0)
	seeds := c.bootstrap()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("tx-across"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(20*time.Second),
		kgo.RecordDeliveryTimeout(40*time.Second), kgo.RetryTimeout(40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createTopic(t, cl, "tx", 3, 3)
	img := c.waitImage("tx with full ISRs", func(img *quorum.Image) bool { return fullISR(img, "tx") })
	if n := distinctLeaders(img, "tx"); n < 2 {
		t.Fatalf("tx's 3 partitions have %d distinct leaders; the test needs several", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var want []string
	for _, txn := range []struct {
		prefix string
		commit bool
	}{{"c1", true}, {"a", false}, {"c2", true}} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 30 {
			value := fmt.Sprintf("%s-%02d", txn.prefix, i)
			r := &kgo.Record{Topic: "tx", Partition: int32(i % 3), Value: []byte(value)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", value, err)
			}
			if txn.commit {
				want = append(want, value)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(txn.commit)); err != nil {
			t.Fatalf("end transaction %s (commit %v): %v", txn.prefix, txn.commit, err)
		}
	}
	writeSentinels(t, seeds, "tx", 3)
	committed := readToSentinels(t, seeds, "tx", 3, kgo.ReadCommitted())
	got := map[string]int{}
	for _, v := range committed {
		got[v]++
	}
	for _, v := range want {
		if got[v] != 1 {
			t.Errorf("committed record %s read %d times", v, got[v])
		}
	}
	for v := range got {
		if strings.HasPrefix(v, "a-") {
			t.Errorf("aborted record %s read with read_committed", v)
		}
	}
	if len(committed) != len(want) {
		t.Errorf("read_committed read %d records, want %d", len(committed), len(want))
	}
	all := readToSentinels(t, seeds, "tx", 3, kgo.ReadUncommitted())
	if len(all) != 90 {
		t.Errorf("read_uncommitted read %d records, want 90 (the aborted ones too)", len(all))
	}
}

// TestEOSPipelineWithTransactionCoordinatorClosed: a GroupTransactSession
// consumes an RF-3 input topic and writes every record to an output topic,
// committing the input offsets in the same transaction. When a third of
// the input is committed, the member that is the session's transaction
// coordinator is closed; its __transaction_state partition moves, the new
// leader loads the transaction log (completing a transaction left
// prepared), the session finds it and goes on. Every input record is in
// the committed output exactly once.
func TestEOSPipelineWithTransactionCoordinatorClosed(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, coordinatorProps())
	c.waitMetadata(3, "", 0)
	seeds := c.bootstrap()
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	createTopic(t, producer, "src", 3, 3)
	createTopic(t, producer, "dst", 3, 3)
	c.waitImage("src and dst with full ISRs", func(img *quorum.Image) bool { return fullISR(img, "src") && fullISR(img, "dst") })
	const total = 3000
	for i := range total {
		producer.Produce(context.Background(), &kgo.Record{Topic: "src", Partition: int32(i % 3), Value: []byte(fmt.Sprintf("%06d", i))}, nil)
	}
	if err := producer.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	session, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seeds...),
		kgo.TransactionalID("etl"), kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup("etl-group"), kgo.ConsumeTopics("src"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(40*time.Second),
		kgo.RecordDeliveryTimeout(40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var endErrs sync.Map // error text → struct{}: End failures, for the log
	// The pipeline stops beginning transactions once a third of the input
	// is committed (third closes) until the coordinator is closed (moved
	// closes), so that transactions run after the move however fast the
	// first third went.
	third, moved := make(chan struct{}), make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		committedRecords, paused := 0, false
		for ctx.Err() == nil {
			if committedRecords >= total/3 && !paused {
				paused = true
				close(third)
				select {
				case <-moved:
				case <-ctx.Done():
					return
				}
			}
			fetches := session.PollRecords(ctx, 50)
			if fetches.IsClientClosed() || ctx.Err() != nil {
				return
			}
			if fetches.NumRecords() == 0 {
				continue
			}
			if err := session.Begin(); err != nil {
				t.Errorf("Begin: %v", err)
				return
			}
			fetches.EachRecord(func(r *kgo.Record) {
				session.Produce(ctx, &kgo.Record{Topic: "dst", Partition: r.Partition, Value: r.Value}, nil)
			})
			if committed, err := session.End(ctx, kgo.TryCommit); committed && err == nil {
				committedRecords += fetches.NumRecords()
			} else if err != nil {
				// Errors while the coordinator moves make End abort; the
				// records come again.
				if _, seen := endErrs.LoadOrStore("end: "+err.Error(), struct{}{}); !seen {
					t.Logf("End: %v", err)
				}
			}
		}
	}()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			session.Close()
			wg.Wait()
		}
	}()

	committedSum := func() int64 {
		sum := int64(0)
		for _, offset := range committedOffsets(t, seeds, "etl-group", "src") {
			sum += offset
		}
		return sum
	}
	waitCommitted := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			got := committedSum()
			if got >= want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("committed input offsets sum to %d, want %d", got, want)
			}
			time.Sleep(100 * time.Millisecond) // poll interval of a bounded condition wait
		}
	}
	select {
	case <-third:
	case <-time.After(90 * time.Second):
		t.Fatal("a third of the input was never committed")
	}
	coordinator := findCoordinator(t, seeds[0], 1, "etl")
	t.Logf("closing member %d, the transaction coordinator of etl", coordinator)
	c.stop(coordinator)
	close(moved)
	waitCommitted(total)
	producerID, producerEpoch, err := session.Client().ProducerID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	session.Close()
	wg.Wait()
	stopped = true
	endErrs.Range(func(key, _ any) bool {
		t.Logf("during the run: %v", key)
		return true
	})

	// The transactions after the move carried the new coordinator epoch
	// (the partition's leader epoch, 1): at a data partition that got a
	// marker of it, a marker of the closed coordinator's epoch 0 is fenced.
	// The member that ran the stopped coordinator may still lead a
	// partition of dst in a member's image for a moment after the run.
	img := c.waitImage("every partition of dst led by a running member", func(img *quorum.Image) bool {
		for p := range int32(3) {
			part, ok := img.Partition("dst", p)
			if !ok || c.members[part.Leader] == nil {
				return false
			}
		}
		return true
	})
	fenced := 0
	for p := range int32(3) {
		part, _ := img.Partition("dst", p)
		addr := c.members[part.Leader].Addr()
		if coordinatorEpochAt(t, addr, "dst", p, producerID) < 1 {
			continue // every transaction on it ended before the move
		}
		code := staleMarker(t, addr, producerID, producerEpoch, "dst", p)
		if code != kerr.TransactionCoordinatorFenced.Code {
			t.Errorf("marker of coordinator epoch 0 to dst-%d at broker %d: %v, want TRANSACTION_COORDINATOR_FENCED", p, part.Leader, kerr.ErrorForCode(code))
		}
		fenced++
	}
	if fenced == 0 {
		t.Errorf("no partition of dst got a marker of the new coordinator epoch")
	}

	writeSentinels(t, seeds, "dst", 3)
	output := readToSentinels(t, seeds, "dst", 3, kgo.ReadCommitted())
	seen := map[string]int{}
	for _, v := range output {
		seen[v]++
	}
	missing, duplicated := 0, 0
	for i := range total {
		switch seen[fmt.Sprintf("%06d", i)] {
		case 0:
			missing++
		case 1:
		default:
			duplicated++
		}
	}
	t.Logf("%d input records → %d committed output records (%d missing, %d duplicated)", total, len(output), missing, duplicated)
	if missing > 0 || duplicated > 0 || len(output) != total {
		t.Fatalf("output is not every input record exactly once: %d missing, %d duplicated, %d records", missing, duplicated, len(output))
	}
}

// coordinatorEpochAt is the coordinator epoch of the producer's last
// marker on partition, as its leader at addr describes it (-1: none).
func coordinatorEpochAt(t *testing.T, addr, topic string, partition int32, producerID int64) int32 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32))
	if err != nil {
		t.Fatalf("DescribeProducers at %s: %v", addr, err)
	}
	for _, p := range resp.Topics[0].Partitions {
		for _, producer := range p.ActiveProducers {
			if producer.ProducerID == producerID {
				return producer.CoordinatorEpoch
			}
		}
	}
	return -1
}

// staleMarker sends an ABORT marker of coordinator epoch 0 for the
// producer to partition at the broker at addr and returns its error code.
func staleMarker(t *testing.T, addr string, producerID int64, producerEpoch int16, topic string, partition int32) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	marker := kmsg.NewWriteTxnMarkersRequestMarker()
	marker.ProducerID, marker.ProducerEpoch, marker.CoordinatorEpoch = producerID, producerEpoch, 0
	rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	marker.Topics = append(marker.Topics, rt)
	req.Markers = append(req.Markers, marker)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32))
	if err != nil {
		t.Fatalf("WriteTxnMarkers to %s: %v", addr, err)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// transactionalProduce sends one transactional one-record batch of the
// producer (sequence 0) to partition of topic at the broker at addr and
// returns the partition's error code.
func transactionalProduce(t *testing.T, addr, transactionalID string, producerID int64, epoch int16, topic string, partition int32) int16 {
	t.Helper()
	options := wire.PlainBatchOptions()
	options.ProducerID, options.ProducerEpoch, options.BaseSequence, options.Transactional = producerID, epoch, 0, true
	batch, err := wire.BuildBatch(options, []wire.BuilderRecord{{TimestampMillis: time.Now().UnixMilli(), Value: []byte("unverified")}})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	metadata, err := metadataOf(addr, topic)
	if err != nil || len(metadata.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 5000, kmsg.StringPtr(transactionalID)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, metadata.Topics[0].TopicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32))
	if err != nil {
		t.Fatalf("produce to %s: %v", addr, err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// verificationSetup starts a 3-member cluster with props, a transactional
// franz-go client whose open transaction holds one partition of topic
// "v", and returns a partition of "v" led by a broker other than the
// transactional id's coordinator (not in the transaction yet) with its
// leader's address.
type verificationSetup struct {
	c                *testCluster
	cl               *kgo.Client
	producerID       int64
	epoch            int16
	coordinator      int32
	target, other    int32
	targetLeaderAddr string
	seeds            []string
}

func newVerificationSetup(t *testing.T, ctx context.Context, props map[string]string, transactionalID string) *verificationSetup {
	t.Helper()
	c := newTestCluster(t, 3, props)
	c.waitMetadata(3, "", 0)
	seeds := c.bootstrap()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(transactionalID), kgo.TransactionTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	createTopic(t, cl, "v", 3, 3)
	img := c.waitImage("v with full ISRs", func(img *quorum.Image) bool { return fullISR(img, "v") })
	producerID, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	coordinator := findCoordinator(t, seeds[0], 1, transactionalID)
	// A partition led elsewhere than the coordinator, and another one the
	// transaction writes to (so it is open).
	target := int32(-1)
	for p := range int32(3) {
		if part, _ := img.Partition("v", p); part.Leader != coordinator {
			target = p
		}
	}
	if target < 0 {
		t.Fatalf("every partition of v is led by the coordinator %d", coordinator)
	}
	other := (target + 1) % 3
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "v", Partition: other, Value: []byte("in")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	leader, _ := img.Partition("v", target)
	return &verificationSetup{c: c, cl: cl, producerID: producerID, epoch: epoch, coordinator: coordinator,
		target: target, other: other, targetLeaderAddr: c.members[leader.Leader].Addr(), seeds: seeds}
}

// finalizedTransactionVersion is the transaction.version the broker at
// addr finalizes (ApiVersions), 0 when none.
func finalizedTransactionVersion(t *testing.T, ctx context.Context, addr string) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range versions.FinalizedFeatures {
		if f.Name == "transaction.version" {
			return f.MaxVersionLevel
		}
	}
	return 0
}

// TestVerificationAcrossBrokers: KIP-890 part 1 in a cluster running
// transaction.version 1. A transactional batch for a partition its
// transaction does not hold, sent to that partition's leader on a broker
// other than the producer's transaction coordinator, is refused
// (INVALID_TXN_STATE): the leader asked the coordinator's broker.
func TestVerificationAcrossBrokers(t *testing.T) {
	t.Parallel()
	props := coordinatorProps()
	props["transaction.version"] = "1"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	v := newVerificationSetup(t, ctx, props, "verified")
	if got := finalizedTransactionVersion(t, ctx, v.seeds[0]); got != 1 {
		t.Errorf("transaction.version %d finalized, want 1", got)
	}
	code := transactionalProduce(t, v.targetLeaderAddr, "verified", v.producerID, v.epoch, "v", v.target)
	if code != kerr.InvalidTxnState.Code {
		t.Errorf("unverified batch to v-%d at %s (coordinator %d): %v, want INVALID_TXN_STATE", v.target, v.targetLeaderAddr, v.coordinator, kerr.ErrorForCode(code))
	}
	if err := v.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}

// TestImplicitAddAcrossBrokers: KIP-890 part 2 in a cluster, which
// finalizes transaction.version 2 as a single broker does, at the wire
// (raw requests, so no client decides which version to use). A Produce
// v12 for a partition the transaction does not hold yet, sent to that
// partition's leader on a broker other than the coordinator, adds the
// partition at the coordinator's broker (AddPartitionsToTxn v5 between
// brokers): the commit's markers reach it, so read_committed sees the
// record. A TxnOffsetCommit v5+ to a group coordinated on another broker
// adds the group the same way (AddOffsetsToTxn): the commit makes the
// offset visible. EndTxn v5 bumps the epoch, and a late batch with the
// old epoch is fenced instead of opening the next transaction.
func TestImplicitAddAcrossBrokers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const transactionalID = "implicit"
	c := newTestCluster(t, 3, coordinatorProps())
	c.waitMetadata(3, "", 0)
	seeds := c.bootstrap()
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopic(t, admin, "v", 3, 3)
	img := c.waitImage("v with full ISRs", func(img *quorum.Image) bool { return fullISR(img, "v") })
	if got := finalizedTransactionVersion(t, ctx, seeds[0]); got != 2 {
		t.Fatalf("transaction.version %d finalized in a cluster, want 2", got)
	}
	coordinator := findCoordinator(t, seeds[0], 1, transactionalID)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis, init.ProducerID, init.ProducerEpoch = kmsg.StringPtr(transactionalID), 20000, -1, -1
	initResp, err := init.RequestWith(ctx, admin) // kgo sends it to the coordinator
	if err != nil || initResp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, initResp)
	}
	producerID, epoch := initResp.ProducerID, initResp.ProducerEpoch
	// Every partition of v, each added by its first batch; at least one is
	// led away from the coordinator.
	away := 0
	for p := range int32(3) {
		part, _ := img.Partition("v", p)
		if part.Leader != coordinator {
			away++
		}
		if code := transactionalProduce(t, c.members[part.Leader].Addr(), transactionalID, producerID, epoch, "v", p); code != 0 {
			t.Fatalf("Produce v12 to v-%d at broker %d (coordinator %d): %v, want an implicit add", p, part.Leader, coordinator, kerr.ErrorForCode(code))
		}
	}
	if away == 0 {
		t.Fatalf("every partition of v is led by the coordinator %d", coordinator)
	}
	groupID := ""
	for i := range 100 {
		id := fmt.Sprintf("implicit-group-%d", i)
		if findCoordinator(t, seeds[0], 0, id) != coordinator {
			groupID = id
			break
		}
	}
	if groupID == "" {
		t.Fatal("no group coordinated away from the transaction coordinator among 100 ids")
	}
	groupAddr := c.members[findCoordinator(t, seeds[0], 0, groupID)].Addr()
	if code := txnOffsetCommit(t, ctx, groupAddr, transactionalID, producerID, epoch, groupID, "v", 1, 42); code != 0 {
		t.Fatalf("TxnOffsetCommit for group %s at %s: %v, want an implicit add", groupID, groupAddr, kerr.ErrorForCode(code))
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = transactionalID, producerID, epoch, true
	endResp, err := end.RequestWith(ctx, admin)
	if err != nil || endResp.ErrorCode != 0 {
		t.Fatalf("EndTxn commit: %v %v", err, endResp)
	}
	if endResp.Version < 5 || endResp.ProducerID != producerID || endResp.ProducerEpoch != epoch+1 {
		t.Errorf("EndTxn v%d answered producer %d epoch %d; want v5+ with producer %d epoch %d (bumped)",
			endResp.Version, endResp.ProducerID, endResp.ProducerEpoch, producerID, epoch+1)
	}
	writeSentinels(t, seeds, "v", 3)
	committed := readToSentinels(t, seeds, "v", 3, kgo.ReadCommitted())
	if len(committed) != 3 {
		t.Errorf("read_committed read %v; want the 3 implicitly added batches", committed)
	}
	// The group's marker may land after the data partitions' markers.
	testutil.Eventually(t, 30*time.Second, "the transaction's offset committed", func() (bool, string) {
		got := committedOffsets(t, seeds, groupID, "v")
		return got[1] == 42, fmt.Sprintf("group %s offsets %v, want v-1 at 42", groupID, got)
	})
	// The commit bumped the epoch: a late batch of the old one is fenced
	// on every partition, wherever its leader is.
	for p := range int32(3) {
		part, _ := img.Partition("v", p)
		code := transactionalProduce(t, c.members[part.Leader].Addr(), transactionalID, producerID, epoch, "v", p)
		if code != kerr.InvalidProducerEpoch.Code && code != kerr.ProducerFenced.Code {
			t.Errorf("late batch to v-%d with the epoch before the commit: %v, want INVALID_PRODUCER_EPOCH", p, kerr.ErrorForCode(code))
		}
	}
}

// txnOffsetCommit sends a TxnOffsetCommit (v5 or later, as franz-go
// negotiates; no AddOffsetsToTxn before it) to the group coordinator at
// addr and returns the partition's code.
func txnOffsetCommit(t *testing.T, ctx context.Context, addr, transactionalID string, producerID int64, epoch int16, groupID, topic string, partition int32, offset int64) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 5
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = transactionalID, groupID, producerID, epoch
	req.Generation, req.MemberID = -1, ""
	metadata, err := metadataOf(addr, topic)
	if err != nil || len(metadata.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, metadata.Topics[0].TopicID
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = partition, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("TxnOffsetCommit to %s: %v", addr, err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}
