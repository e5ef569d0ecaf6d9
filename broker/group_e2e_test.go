package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// End-to-end consumer group tests: franz-go group consumers against the
// broker (issue 6). Time is never waited out: every wait is a condition
// polled against a deadline.

// newGroupConsumer starts a kgo group consumer of topic named name; its
// view of its partitions feeds owner. It is closed (leaving the group) at
// the end of the test unless the test closed it.
func newGroupConsumer(t *testing.T, b *Broker, owner *ownership, name, groupID, topic string, sessionTimeout time.Duration, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	options := []kgo.Opt{
		kgo.SeedBrokers(b.Addr()), kgo.ClientID(name),
		kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(sessionTimeout), kgo.HeartbeatInterval(200 * time.Millisecond),
		kgo.RebalanceTimeout(60 * time.Second),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
	options = append(options, owner.options(name)...)
	client, err := kgo.NewClient(append(options, extra...)...)
	if err != nil {
		t.Fatalf("new consumer %s: %v", name, err)
	}
	t.Cleanup(client.Close)
	// Fetching is what makes kgo start its group management.
	go func() {
		for {
			if fetches := client.PollFetches(context.Background()); fetches.IsClientClosed() {
				return
			}
		}
	}()
	return client
}

// Three consumers share twelve partitions; one leaves and the two left
// take everything over; a fourth joins, crashes (no LeaveGroup) and is
// evicted after its session timeout, and the two take its partitions.
func TestGroupMembersShareLeaveAndEviction(t *testing.T) {
	t.Parallel()
	const partitions = 12
	b := startTestBroker(t, t.TempDir(), groupTestProperties())
	admin := newTestClient(t, b)
	createTopic(t, admin, "shared", partitions, nil)
	owner := newOwnership()

	// The survivors' and the leaver's sessions outlast every wait below,
	// so only LeaveGroup or the crashed member's own short session can
	// explain each takeover. The rebalance timeout is a minute: a
	// rebalance that completes within the waits completed because every
	// member joined, not because a timeout dropped one.
	a := newGroupConsumer(t, b, owner, "a", "g", "shared", 30*time.Second)
	bb := newGroupConsumer(t, b, owner, "b", "g", "shared", 30*time.Second)
	c := newGroupConsumer(t, b, owner, "c", "g", "shared", 30*time.Second)
	testutil.Eventually(t, 20*time.Second, "a, b, c share the partitions", func() (bool, string) {
		if ok, detail := owner.shared([]string{"a", "b", "c"}, partitions); !ok {
			return false, detail
		}
		return serverShare(t, admin, "g", "shared", 3, partitions)
	})
	// All three are in the same generation, and nobody saw an error.
	_, generationA := a.GroupMetadata()
	_, generationB := bb.GroupMetadata()
	_, generationC := c.GroupMetadata()
	if generationA != generationB || generationB != generationC || generationA < 1 {
		t.Fatalf("generations a=%d b=%d c=%d, want one generation", generationA, generationB, generationC)
	}
	if errs := owner.errorsOf("a", "b", "c"); len(errs) > 0 {
		t.Fatalf("group management errors during the rebalance: %v", errs)
	}

	// c leaves (Close sends LeaveGroup).
	c.Close()
	testutil.Eventually(t, 20*time.Second, "a and b take over c's partitions", func() (bool, string) {
		if ok, detail := owner.shared([]string{"a", "b"}, partitions); !ok {
			return false, detail
		}
		return serverShare(t, admin, "g", "shared", 2, partitions)
	})

	// k joins with a 1.5 s session, then goes silent: its connections are
	// cut and it cannot reconnect, so it neither heartbeats nor leaves.
	dialer := &killableDialer{}
	k := newGroupConsumer(t, b, owner, "k", "g", "shared", 1500*time.Millisecond, kgo.Dialer(dialer.dial))
	testutil.Eventually(t, 20*time.Second, "a, b, k share the partitions", func() (bool, string) {
		if ok, detail := owner.shared([]string{"a", "b", "k"}, partitions); !ok {
			return false, detail
		}
		return serverShare(t, admin, "g", "shared", 3, partitions)
	})
	dialer.kill()
	testutil.Eventually(t, 20*time.Second, "k is evicted and a and b own everything", func() (bool, string) {
		if ok, detail := owner.shared([]string{"a", "b"}, partitions); !ok {
			return false, detail
		}
		return serverShare(t, admin, "g", "shared", 2, partitions)
	})
	// Stop k at once: its leave cannot reach the broker.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	k.LeaveGroupContext(cancelled)
	k.Close()
}

// Offsets committed before a broker restart are where the group resumes.
func TestGroupCommittedOffsetsSurviveRestart(t *testing.T) {
	t.Parallel()
	const partitions = 4
	dir := t.TempDir()
	b := startTestBroker(t, dir, groupTestProperties())
	admin := newTestClient(t, b)
	createTopic(t, admin, "resume", partitions, nil)
	produceNumbered(t, b, "resume", partitions, 400) // 100 per partition

	owner := newOwnership()
	first := newGroupConsumer(t, b, owner, "first", "resumers", "resume", 10*time.Second, kgo.DisableAutoCommit())
	testutil.Eventually(t, 20*time.Second, "first owns every partition", func() (bool, string) {
		return owner.shared([]string{"first"}, partitions)
	})
	commits := map[int32]kgo.EpochOffset{}
	want := map[int32]int64{}
	for p := range int32(partitions) {
		want[p] = int64(10 + 20*p)
		commits[p] = kgo.EpochOffset{Epoch: -1, Offset: want[p]}
	}
	var commitErr error
	first.CommitOffsetsSync(testContext(t, 10*time.Second), map[string]map[int32]kgo.EpochOffset{"resume": commits},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
			if err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if e := kerr.ErrorForCode(rp.ErrorCode); e != nil {
							commitErr = fmt.Errorf("commit %s-%d: %w", rt.Topic, rp.Partition, e)
						}
					}
				}
			}
		})
	if commitErr != nil {
		t.Fatalf("commit: %v", commitErr)
	}
	first.Close()
	admin.Close()
	if err := b.Close(); err != nil {
		t.Fatalf("close broker: %v", err)
	}

	restarted := startTestBroker(t, dir, groupTestProperties())
	if got := committedOffsets(t, newTestClient(t, restarted), "resumers", "resume"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed offsets after restart = %v, want %v", got, want)
	}
	second, err := kgo.NewClient(kgo.SeedBrokers(restarted.Addr()), kgo.ConsumerGroup("resumers"), kgo.ConsumeTopics("resume"),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatalf("new consumer: %v", err)
	}
	t.Cleanup(second.Close)
	firstSeen := map[int32]int64{}
	ctx := testContext(t, 20*time.Second)
	for len(firstSeen) < partitions {
		fetches := second.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("first offsets seen after restart: %v, want every partition", firstSeen)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if _, seen := firstSeen[r.Partition]; !seen {
				firstSeen[r.Partition] = r.Offset
			}
		})
	}
	if fmt.Sprint(firstSeen) != fmt.Sprint(want) {
		t.Fatalf("the restarted group resumed at %v, want the committed offsets %v", firstSeen, want)
	}
}

// processedLog counts how often each record was processed, across the
// group, and gates progress so membership changes happen mid-run.
type processedLog struct {
	mu    sync.Mutex
	times map[int]int
	total int
	// limit: workers do not poll again while total >= limit.
	limit   int
	changed chan struct{} // closed and replaced on every change
	errs    []error
}

func newProcessedLog(limit int) *processedLog {
	return &processedLog{times: map[int]int{}, limit: limit, changed: make(chan struct{})}
}

func (l *processedLog) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *processedLog) record(value []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	index, err := strconv.Atoi(string(value))
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("record value %q: %w", value, err))
	}
	l.times[index]++
	if l.times[index] == 2 && len(l.errs) < 10 {
		l.errs = append(l.errs, fmt.Errorf("record %d processed twice", index))
	}
	l.total++
	l.notifyLocked()
}

func (l *processedLog) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
	l.notifyLocked()
}

func (l *processedLog) setLimit(limit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = limit
	l.notifyLocked()
}

// waitBelowLimit blocks until another poll is allowed or stop closes; it
// reports whether to go on.
func (l *processedLog) waitBelowLimit(stop <-chan struct{}) bool {
	for {
		l.mu.Lock()
		below, changed := l.total < l.limit, l.changed
		l.mu.Unlock()
		if below {
			return true
		}
		select {
		case <-stop:
			return false
		case <-changed:
		}
	}
}

func (l *processedLog) snapshot() (total, distinct int, errs []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, len(l.times), append([]error(nil), l.errs...)
}

// worker is one consumer of the exactly-once test: poll, process, commit
// what it processed, then allow a rebalance. It stops cleanly: the last
// commit, then Close (LeaveGroup).
type worker struct {
	stop chan struct{}
	done chan struct{}
}

func startWorker(t *testing.T, b *Broker, log *processedLog, name, groupID, topic string) *worker {
	client, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID(name),
		kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(30*time.Second), kgo.HeartbeatInterval(200*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatalf("new worker %s: %v", name, err)
	}
	w := &worker{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer client.Close()
		pollContext, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-w.stop
			cancel()
		}()
		for log.waitBelowLimit(w.stop) {
			fetches := client.PollRecords(pollContext, 200)
			records := fetches.Records()
			for _, r := range records {
				log.record(r.Value)
			}
			if len(records) > 0 {
				commitContext, commitCancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := client.CommitRecords(commitContext, records...); err != nil {
					log.fail(fmt.Errorf("%s: commit: %w", name, err))
				}
				commitCancel()
			}
			client.AllowRebalance()
			if pollContext.Err() != nil {
				return
			}
		}
		client.AllowRebalance()
	}()
	return w
}

func (w *worker) stopAndWait(t *testing.T) {
	t.Helper()
	close(w.stop)
	select {
	case <-w.done:
	case <-time.After(20 * time.Second):
		t.Fatal("worker did not stop")
	}
}

// Every one of 20000 records is processed exactly once by a group whose
// members join and leave during the run, when each member commits what it
// processed before allowing a rebalance and stops cleanly.
func TestGroupProcessesEveryRecordOnce(t *testing.T) {
	t.Parallel()
	const (
		partitions = 6
		count      = 20000
	)
	b := startTestBroker(t, t.TempDir(), groupTestProperties())
	admin := newTestClient(t, b)
	createTopic(t, admin, "work", partitions, nil)
	produceNumbered(t, b, "work", partitions, count)

	log := newProcessedLog(count / 4)
	reach := func(total int, members int) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, fmt.Sprintf("%d records processed", total), func() (bool, string) {
			got, _, errs := log.snapshot()
			if len(errs) > 0 {
				t.Fatalf("workers failed: %v", errs)
			}
			return got >= total, fmt.Sprintf("%d processed", got)
		})
		testutil.Eventually(t, 20*time.Second, fmt.Sprintf("%d workers share the partitions", members), func() (bool, string) {
			return serverShare(t, admin, "workers", "work", members, partitions)
		})
	}
	first := startWorker(t, b, log, "w1", "workers", "work")
	second := startWorker(t, b, log, "w2", "workers", "work")
	reach(count/4, 2)
	third := startWorker(t, b, log, "w3", "workers", "work") // joins mid-run
	reach(count/4, 3)
	log.setLimit(count / 2)
	reach(count/2, 3)
	first.stopAndWait(t) // leaves mid-run
	reach(count/2, 2)
	log.setLimit(3 * count / 4)
	reach(3*count/4, 2)
	fourth := startWorker(t, b, log, "w4", "workers", "work")
	reach(3*count/4, 3)
	log.setLimit(count + 1)
	testutil.Eventually(t, 20*time.Second, "every record processed", func() (bool, string) {
		_, distinct, errs := log.snapshot()
		if len(errs) > 0 {
			t.Fatalf("workers failed: %v", errs)
		}
		return distinct == count, fmt.Sprintf("%d distinct records processed", distinct)
	})
	for _, w := range []*worker{second, third, fourth} {
		w.stopAndWait(t)
	}

	total, distinct, errs := log.snapshot()
	if len(errs) > 0 {
		t.Fatalf("workers failed: %v", errs)
	}
	for index, times := range log.times {
		if times != 1 || index < 0 || index >= count {
			t.Fatalf("record %d processed %d times", index, times)
		}
	}
	if total != count || distinct != count {
		t.Fatalf("processed %d records (%d distinct), want %d once each", total, distinct, count)
	}
	// Every processed record was committed: a new member would re-read
	// nothing.
	committed := committedOffsets(t, admin, "workers", "work")
	for p := range int32(partitions) {
		if committed[p] != count/partitions+boolToInt(p < count%partitions) {
			t.Fatalf("partition %d committed at %d, want its end %d", p, committed[p], count/partitions)
		}
	}
}

func boolToInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// A member that missed a rebalance cannot commit with its old generation,
// and an unknown or departed member cannot commit at all.
func TestGroupRefusesStaleCommits(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), groupTestProperties())
	createTopic(t, newTestClient(t, b), "stale", 2, nil)
	ctx := testContext(t, 20*time.Second)

	one := newRawMember(t, b, "stale-group", "stale")
	joined, err := one.join(ctx)
	if err != nil {
		t.Fatalf("first member join: %v", err)
	}
	if joined.LeaderID != one.id {
		t.Fatalf("leader %q, want the only member %q", joined.LeaderID, one.id)
	}
	if err := one.sync(ctx, map[string][]int32{one.id: {0, 1}}); err != nil {
		t.Fatalf("first member sync: %v", err)
	}
	oldGeneration := one.generation
	if err := one.commit(ctx, one.id, oldGeneration, 5); err != nil {
		t.Fatalf("commit in the current generation: %v", err)
	}

	// A second member joins: its join parks until the first rejoins.
	two := newRawMember(t, b, "stale-group", "stale")
	secondJoin := make(chan error, 1)
	go func() {
		_, err := two.join(ctx)
		secondJoin <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the first member is told to rejoin", func() (bool, string) {
		err := one.heartbeat(ctx)
		return errors.Is(err, kerr.RebalanceInProgress), fmt.Sprintf("heartbeat: %v", err)
	})
	if _, err := one.join(ctx); err != nil {
		t.Fatalf("first member rejoin: %v", err)
	}
	if err := <-secondJoin; err != nil {
		t.Fatalf("second member join: %v", err)
	}
	if one.generation != two.generation || one.generation <= oldGeneration {
		t.Fatalf("generations after the rebalance: %d and %d, old %d", one.generation, two.generation, oldGeneration)
	}
	syncs := make(chan error, 1)
	go func() { syncs <- two.sync(ctx, nil) }()
	if err := one.sync(ctx, map[string][]int32{one.id: {0}, two.id: {1}}); err != nil {
		t.Fatalf("leader sync: %v", err)
	}
	if err := <-syncs; err != nil {
		t.Fatalf("follower sync: %v", err)
	}

	if err := one.commit(ctx, one.id, oldGeneration, 50); !errors.Is(err, kerr.IllegalGeneration) {
		t.Fatalf("commit with the old generation: %v, want ILLEGAL_GENERATION", err)
	}
	if err := one.commit(ctx, "ghost", one.generation, 60); !errors.Is(err, kerr.UnknownMemberID) {
		t.Fatalf("commit by an unknown member: %v, want UNKNOWN_MEMBER_ID", err)
	}
	if err := two.commit(ctx, two.id, two.generation, 7); err != nil {
		t.Fatalf("commit in the new generation: %v", err)
	}
	if err := two.leave(ctx); err != nil {
		t.Fatalf("leave: %v", err)
	}
	if err := two.commit(ctx, two.id, two.generation, 70); !errors.Is(err, kerr.UnknownMemberID) {
		t.Fatalf("commit by a member that left: %v, want UNKNOWN_MEMBER_ID", err)
	}
	if got := committedOffsets(t, one.client, "stale-group", "stale"); got[0] != 7 {
		t.Fatalf("committed offset %d, want 7 (only accepted commits count)", got[0])
	}
}

// A JoinGroup parked in a rebalance when the broker shuts down is
// answered NOT_COORDINATOR, and the shutdown does not wait for the
// rebalance (Close's fallback for stuck connections is 10 s).
func TestGroupParkedJoinAnsweredOnShutdown(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), groupTestProperties())
	createTopic(t, newTestClient(t, b), "parked", 1, nil)
	ctx := testContext(t, 20*time.Second)
	one := newRawMember(t, b, "parked-group", "parked")
	if _, err := one.join(ctx); err != nil {
		t.Fatalf("join: %v", err)
	}
	if err := one.sync(ctx, map[string][]int32{one.id: {0}}); err != nil {
		t.Fatalf("sync: %v", err)
	}

	// A second member joins over a bare connection (JoinGroup v3: no
	// KIP-394 round trip); the join parks until the first rejoins, which
	// it never does.
	raw := dialRaw(t, b)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "parked-group", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 60000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
	raw.request(join, 3)
	testutil.Eventually(t, 10*time.Second, "the second join is parked", func() (bool, string) {
		err := one.heartbeat(ctx)
		return errors.Is(err, kerr.RebalanceInProgress), fmt.Sprintf("heartbeat: %v", err)
	})

	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	joined := kmsg.NewPtrJoinGroupResponse()
	raw.response(joined, 3)
	if err := kerr.ErrorForCode(joined.ErrorCode); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("parked join answered %v on shutdown, want NOT_COORDINATOR", err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("Close waited for the parked rebalance")
	}
}

// Offsets live in partition n = PartitionFor(group) of the replicated
// topic __consumer_offsets, <data-dir>/broker/__consumer_offsets-<n>;
// Metadata lists the topic as internal, with offsets.topic.num.partitions
// partitions; and once it exists its partition count stays, since groups
// map to partitions by it: a restart with another
// offsets.topic.num.partitions still finds the group's offsets.
func TestGroupOffsetsTopicLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startTestBroker(t, dir, groupTestProperties())
	createTopic(t, newTestClient(t, b), "layout", 1, nil)
	member := newRawMember(t, b, "layout-group", "layout")
	if err := member.commit(testContext(t, 10*time.Second), "", -1, 3); err != nil {
		t.Fatalf("simple commit: %v", err)
	}
	partition := group.PartitionFor("layout-group", 5)
	logDir := filepath.Join(dir, brokerDirName, group.OffsetsTopic+"-"+strconv.Itoa(partition))
	if info, err := os.Stat(logDir); err != nil || !info.IsDir() {
		t.Fatalf("no offsets partition directory %s: %v", logDir, err)
	}
	metadata, err := kmsg.NewPtrMetadataRequest().RequestWith(testContext(t, 10*time.Second), member.client)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	listedInternal := false
	for _, listed := range metadata.Topics {
		if listed.Topic != nil && *listed.Topic == group.OffsetsTopic {
			if !listed.IsInternal || len(listed.Partitions) != 5 || listedInternal {
				t.Fatalf("Metadata lists %s: internal %v, %d partitions, twice %v", group.OffsetsTopic, listed.IsInternal, len(listed.Partitions), listedInternal)
			}
			listedInternal = true
		}
	}
	if !listedInternal {
		t.Fatalf("Metadata does not list %s", group.OffsetsTopic)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	properties := groupTestProperties()
	properties["offsets.topic.num.partitions"] = "7"
	restarted := startTestBroker(t, dir, properties)
	client := newTestClient(t, restarted)
	if got := committedOffsets(t, client, "layout-group", "layout"); got[0] != 3 {
		t.Fatalf("committed offset after a restart with another offsets.topic.num.partitions = %v, want 3", got)
	}
	if listed := metadataOf(t, client, []string{group.OffsetsTopic}, false)[group.OffsetsTopic]; len(listed.Partitions) != 5 {
		t.Fatalf("%s has %d partitions after the restart, want 5", group.OffsetsTopic, len(listed.Partitions))
	}
}

// ApiVersions advertises the classic group APIs and KIP-848's
// (ConsumerGroupHeartbeat, ConsumerGroupDescribe) over their full ranges.
func TestGroupAPIVersionsAdvertised(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), groupTestProperties())
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testContext(t, 10*time.Second), newTestClient(t, b))
	if err != nil {
		t.Fatalf("api versions: %v", err)
	}
	advertised := map[int16][2]int16{}
	for _, key := range resp.ApiKeys {
		advertised[key.ApiKey] = [2]int16{key.MinVersion, key.MaxVersion}
	}
	want := map[int16][2]int16{
		8: {0, 10}, 9: {0, 10}, 10: {0, 6}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5},
		15: {0, 6}, 16: {0, 5}, 42: {0, 3}, 47: {0, 0}, 68: {0, 1}, 69: {0, 1},
	}
	for key, versions := range want {
		if advertised[key] != versions {
			t.Errorf("API %d advertised %v, want %v", key, advertised[key], versions)
		}
	}
}
