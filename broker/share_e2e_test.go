package broker

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/sharetest"
)

// Share groups end to end with franz-go's share consumer: records
// produced before the consumers join are shared between two members,
// each accepted once; a record released once comes back with delivery
// count 2.
func TestShareGroupSharesAndRedeliversReleased(t *testing.T) {
	t.Parallel()
	const total = 2000
	b, m := startMetricsBroker(t, nil)
	admin := newTestClient(t, b, kgo.DefaultProduceTopic("share-in"))
	createTopic(t, admin, "share-in", 3, nil)
	ctx := testContext(t, 60*time.Second)
	setGroupConfig(t, admin, "sg", "share.auto.offset.reset", "earliest")
	for i := range total {
		admin.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), nil)
	}
	if err := admin.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	accepted := map[string]int{}
	released := map[string]bool{}
	maxCount := map[string]int32{}
	var wg sync.WaitGroup
	consume := func() {
		defer wg.Done()
		cl := newTestClient(t, b, kgo.ShareGroup("sg"), kgo.ConsumeTopics("share-in"))
		for {
			mu.Lock()
			n := len(accepted)
			mu.Unlock()
			if n == total || ctx.Err() != nil {
				break
			}
			pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			fetches := cl.PollFetches(pollCtx)
			cancel()
			for r := range fetches.RecordsAll() {
				key := string(r.Value)
				mu.Lock()
				if r.DeliveryCount() > maxCount[key] {
					maxCount[key] = r.DeliveryCount()
				}
				if !released[key] && len(key) > 0 && key[len(key)-1] == '7' {
					released[key] = true
					mu.Unlock()
					r.Ack(kgo.AckRelease)
					continue
				}
				accepted[key]++
				mu.Unlock()
				r.Ack(kgo.AckAccept)
			}
		}
		flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.FlushAcks(flushCtx); err != nil {
			t.Errorf("flush acks: %v", err)
		}
	}
	wg.Add(2)
	go consume()
	go consume()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(accepted) != total {
		t.Fatalf("accepted %d distinct records, want %d", len(accepted), total)
	}
	for key, n := range accepted {
		if n != 1 {
			t.Errorf("record %s accepted %d times", key, n)
		}
	}
	for key := range released {
		if maxCount[key] < 2 {
			t.Errorf("released record %s came back with delivery count %d, want 2", key, maxCount[key])
		}
	}
	// The leader's metrics count the same.
	share := func(event string) float64 {
		return mustMetric(t, m, "exactly_share_records_total", map[string]string{"event": event})
	}
	if got := share("accepted"); got != total {
		t.Errorf("accepted metric %v, want %d", got, total)
	}
	if got, want := share("released"), float64(len(released)); got != want {
		t.Errorf("released metric %v, want %v", got, want)
	}
	if got, want := share("redelivered"), float64(len(released)); got < want {
		t.Errorf("redelivered metric %v, want at least %v", got, want)
	}
	if got, want := share("acquired"), float64(total+len(released)); got < want {
		t.Errorf("acquired metric %v, want at least %v", got, want)
	}
}

// setGroupConfig sets one group config (IncrementalAlterConfigs SET on
// the GROUP resource).
func setGroupConfig(t *testing.T, client *kgo.Client, groupID, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, groupID
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), client)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("set %s=%s on group %s: %v", name, value, groupID, err)
	}
}

// With share.isolation.level=read_committed a share group gets only
// committed records: an aborted transaction's records are archived
// unread, and nothing past an open transaction is delivered until it
// commits.
func TestShareGroupReadCommitted(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), txnTestProperties("2"))
	admin := newTestClient(t, b)
	createTopic(t, admin, "share-txn", 1, nil)
	setGroupConfig(t, admin, "sg-rc", "share.auto.offset.reset", "earliest")
	setGroupConfig(t, admin, "sg-rc", "share.isolation.level", "read_committed")
	ctx := testContext(t, 60*time.Second)
	producer := newTxnProducer(t, b.Addr(), "share-txn-producer")
	batch := func(prefix string, n int) []*kgo.Record {
		var records []*kgo.Record
		for i := range n {
			records = append(records, &kgo.Record{Topic: "share-txn", Partition: 0, Value: []byte(prefix + strconv.Itoa(i))})
		}
		return records
	}
	if err := runTransaction(ctx, producer, batch("committed-", 10), true); err != nil {
		t.Fatal(err)
	}
	if err := runTransaction(ctx, producer, batch("aborted-", 10), false); err != nil {
		t.Fatal(err)
	}
	// An open transaction: its records must wait for its commit.
	if err := producer.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := producer.ProduceSync(ctx, batch("later-", 5)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumer := newTestClient(t, b, kgo.ShareGroup("sg-rc"), kgo.ConsumeTopics("share-txn"))
	poll := func(want int) []string {
		var got []string
		for len(got) < want && ctx.Err() == nil {
			pollCtx, cancel := context.WithTimeout(ctx, time.Second)
			fetches := consumer.PollFetches(pollCtx)
			cancel()
			for r := range fetches.RecordsAll() {
				got = append(got, string(r.Value))
				r.Ack(kgo.AckAccept)
			}
		}
		return got
	}
	first := poll(10)
	// Nothing more may come while the transaction is open.
	extra := func() []string {
		pollCtx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		var got []string
		for r := range consumer.PollFetches(pollCtx).RecordsAll() {
			got = append(got, string(r.Value))
			r.Ack(kgo.AckAccept)
		}
		return got
	}()
	if len(first) != 10 || len(extra) != 0 {
		t.Fatalf("before the commit: got %v then %v, want the 10 committed records and nothing else", first, extra)
	}
	for _, v := range first {
		if v[:len("committed-")] != "committed-" {
			t.Errorf("read_committed share group got %q", v)
		}
	}
	if err := producer.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	later := poll(5)
	if len(later) != 5 {
		t.Fatalf("after the commit: got %v, want the 5 records of the committed transaction", later)
	}
	for _, v := range later {
		if v[:len("later-")] != "later-" {
			t.Errorf("after the commit got %q", v)
		}
	}
}

// Records nobody acknowledges come back when their acquisition lock
// times out, to another member, with their delivery count up; after
// group.share.delivery.count.limit deliveries they are archived, the
// start offset moves past them and nobody gets them again.
func TestShareGroupLockTimeoutAndDeliveryLimit(t *testing.T) {
	t.Parallel()
	b, m := startMetricsBroker(t, map[string]string{
		"group.share.record.lock.duration.ms": "1000",
		"group.share.delivery.count.limit":    "2",
	})
	admin := newTestClient(t, b, kgo.DefaultProduceTopic("share-lock"))
	createTopic(t, admin, "share-lock", 1, nil)
	ctx := testContext(t, 30*time.Second)
	topicID := topicIDOf(t, admin, "share-lock")
	openShareSession(t, ctx, admin, "sg-lock", "member-a", topicID)
	produceCounting(t, ctx, admin, 5)
	fetch := func(member string, epoch int32) []int16 {
		t.Helper()
		req := sharetest.FetchRequest("sg-lock", member, epoch, topicID)
		req.MaxWaitMillis = 3000
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		return sharetest.AcquiredCounts(t, resp)
	}
	if got := fetch("member-a", 1); len(got) != 5 || got[0] != 1 {
		t.Fatalf("first delivery: %v, want 5 records at count 1", got)
	}
	// member-b's long poll (its session's first fetch) is woken by the
	// locks' expiry.
	if got := fetch("member-b", 0); len(got) != 5 || got[0] != 2 {
		t.Fatalf("after the lock timed out: %v, want the 5 records again at count 2", got)
	}
	if got := fetch("member-a", 2); len(got) != 0 {
		t.Fatalf("after the delivery limit: %v, want nothing (archived)", got)
	}
	describe := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	group := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	group.GroupID = "sg-lock"
	describe.Groups = append(describe.Groups, group)
	described, err := describe.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(described.Groups[0].Topics) != 1 || described.Groups[0].Topics[0].Partitions[0].StartOffset != 5 || described.Groups[0].Topics[0].Partitions[0].Lag != 0 {
		t.Fatalf("share offsets after archiving: %+v, want start offset 5, lag 0", described.Groups[0])
	}
	if got := mustMetric(t, m, "exactly_share_records_total", map[string]string{"event": "lock_timeout"}); got != 10 {
		t.Errorf("lock_timeout metric %v, want 10 (5 records, twice)", got)
	}
}

// group.share.partition.max.record.locks bounds how many records of one
// share-partition are acquired at once: a fetch for 1000 gets 100, and
// the next gets nothing more until some are acknowledged.
func TestShareGroupMaxRecordLocks(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"group.share.partition.max.record.locks": "100"})
	admin := newTestClient(t, b, kgo.DefaultProduceTopic("share-locks"))
	createTopic(t, admin, "share-locks", 1, nil)
	setGroupConfig(t, admin, "sg-locks", "share.auto.offset.reset", "earliest")
	ctx := testContext(t, 30*time.Second)
	for i := range 500 {
		admin.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), nil)
	}
	if err := admin.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	topicID := topicIDOf(t, admin, "share-locks")
	fetch := func(member string) int {
		req := sharetest.FetchRequest("sg-locks", member, 0, topicID)
		req.MaxWaitMillis = 0
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		return len(sharetest.AcquiredCounts(t, resp))
	}
	if got := fetch("member-a"); got != 100 {
		t.Fatalf("first fetch acquired %d records, want 100 (the lock limit)", got)
	}
	if got := fetch("member-b"); got != 0 {
		t.Fatalf("a second member acquired %d records with 100 locks held, want 0", got)
	}
}
