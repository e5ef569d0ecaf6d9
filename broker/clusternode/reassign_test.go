package clusternode

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/quorum"
)

// TestReassignmentMovesPartitionsToANewBroker: a fourth broker joins a
// cluster of three; partitions (one whose oldest records were deleted,
// one led by a replica that leaves) are moved to it with
// AlterPartitionReassignments while a producer keeps writing with
// acks=all. Every acknowledged record is read back once, the new replica
// starts at the leader's log start, the removed replicas delete their
// copies, and the removed broker can then be stopped without losing
// anything. ListPartitionReassignments shows the move while it runs
// (held open by a stopped target broker), cancelling restores the
// original replicas, and ElectLeaders moves leadership to the preferred
// replica.
func TestReassignmentMovesPartitionsToANewBroker(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 4, map[string]string{"min.insync.replicas": "2", "auto.leader.rebalance.enable": "false"})
	c.waitMetadata(4, "", 0)
	seeds := c.bootstrap()
	admin, adm := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// The topic lives on brokers 1–3 only: assign it there explicitly.
	createTopic(t, admin, "moved", 2, 3)
	c.waitImage("topic moved in sync", func(img *quorum.Image) bool { return fullISR(img, "moved") })
	// Put both partitions on 1, 2, 3 (the quorum may have used 4).
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("moved", 0, []int32{1, 2, 3})
	req.Assign("moved", 1, []int32{2, 3, 1})
	mustReassign(ctx, t, adm, req)
	waitNoReassignment(ctx, t, adm)

	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("moved"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var mu sync.Mutex
	acked := map[int32][]string{}
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			r := &kgo.Record{Value: []byte(fmt.Sprintf("r%04d", i))}
			producer.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %s: %v", r.Value, err)
					return
				}
				mu.Lock()
				acked[r.Partition] = append(acked[r.Partition], string(r.Value))
				mu.Unlock()
			})
		}
		if err := producer.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 400)
	// Partition 0 loses its oldest records: the new replica must start
	// at the leader's log start.
	deleted, err := adm.DeleteRecords(ctx, kadm.Offsets{"moved": {0: {At: 60}}})
	if err != nil || deleted.Error() != nil {
		t.Fatalf("delete records: %v %v", err, deleted.Error())
	}

	// Move: partition 0 from 1,2,3 to 4,2,3 (leader 1 leaves: 4 takes
	// over once in sync), partition 1 from 2,3,1 to 2,4,3. Keep
	// producing meanwhile.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); produce(400, 800) }()
	req = kadm.AlterPartitionAssignmentsReq{}
	req.Assign("moved", 0, []int32{4, 2, 3})
	req.Assign("moved", 1, []int32{2, 4, 3})
	mustReassign(ctx, t, adm, req)
	waitNoReassignment(ctx, t, adm)
	wg.Wait()
	img := c.waitImage("partitions on their new replicas", func(img *quorum.Image) bool {
		p0, _ := img.Partition("moved", 0)
		p1, _ := img.Partition("moved", 1)
		return slices.Equal(p0.Replicas, []int32{4, 2, 3}) && slices.Equal(p1.Replicas, []int32{2, 4, 3}) &&
			len(p0.ISR) == 3 && len(p1.ISR) == 3
	})
	if p0, _ := img.Partition("moved", 0); p0.Leader != 4 {
		t.Fatalf("partition 0 led by %d after its leader left; want the first in-sync target replica 4", p0.Leader)
	}
	// The removed replicas' copies go (their local partitions are empty)
	// once each removed broker has applied the move.
	for {
		dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"moved": {0: {}, 1: {}}})
		var left []string
		if err == nil {
			dirs.Each(func(d kadm.DescribedLogDir) {
				d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
					target := [][]int32{{4, 2, 3}, {2, 4, 3}}[p.Partition]
					if !slices.Contains(target, d.Broker) && p.Size > 0 {
						left = append(left, fmt.Sprintf("broker %d: %d bytes of moved-%d", d.Broker, p.Size, p.Partition))
					}
				})
			})
		}
		if err == nil && len(left) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("removed replicas still hold data: %v (%v)", left, err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a bounded wait
	}
	// Broker 1 holds nothing any more: stop it (drained), then read. The
	// admin client may still route to it until its metadata is refreshed.
	c.stop(1)
	var starts kadm.ListedOffsets
	for {
		starts, err = adm.ListStartOffsets(ctx, "moved")
		if err == nil && starts.Error() == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("list start offsets without broker 1: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // poll interval of a bounded wait
	}
	if o, _ := starts.Lookup("moved", 0); o.Offset != 60 {
		t.Fatalf("log start of moved-0 on its new leader: %+v, want 60", o)
	}
	live := []string{c.listen[2], c.listen[3], c.listen[4]}
	for partition := int32(0); partition < 2; partition++ {
		read := readAll(t, live, "moved", partition)
		want := acked[partition]
		if partition == 0 {
			want = want[60:]
		}
		checkExactlyOnce(t, want, read)
	}

	// A reassignment to a stopped broker stays in progress: listed, then
	// cancelled back to the original replicas.
	req = kadm.AlterPartitionAssignmentsReq{}
	req.Assign("moved", 1, []int32{2, 4, 1})
	mustReassign(ctx, t, adm, req)
	// The broker answering may not have applied the move yet: ask until
	// it lists it.
	var listed kadm.ListPartitionReassignmentsResponses
	for {
		listed, err = adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moved": {0: {}, 1: {}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := listed["moved"][1]; ok || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a bounded wait
	}
	got, ok := listed["moved"][1]
	if !ok || !slices.Equal(got.Replicas, []int32{2, 4, 1, 3}) || !slices.Equal(got.AddingReplicas, []int32{1}) || !slices.Equal(got.RemovingReplicas, []int32{3}) {
		t.Fatalf("listed: %+v (found %v)", got, ok)
	}
	if _, ok := listed["moved"][0]; ok {
		t.Fatal("moved-0 listed without a reassignment")
	}
	req = kadm.AlterPartitionAssignmentsReq{}
	req.CancelAssign("moved", 1)
	mustReassign(ctx, t, adm, req)
	waitNoReassignment(ctx, t, adm)
	// Every member applies the cancel (the one answering may be ahead).
	c.waitImage("the cancelled move back on 2, 4, 3", func(img *quorum.Image) bool {
		p1, _ := img.Partition("moved", 1)
		return slices.Equal(p1.Replicas, []int32{2, 4, 3}) && !p1.Reassigning()
	})
	cancelAgain := kadm.AlterPartitionAssignmentsReq{}
	cancelAgain.CancelAssign("moved", 1)
	answers, err := adm.AlterPartitionAssignments(ctx, cancelAgain)
	if err != nil {
		t.Fatal(err)
	}
	if a := answers["moved"][1]; !errors.Is(a.Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel without a reassignment: %+v", a)
	}

	// Preferred leader election: reorder partition 1 to 3, 2, 4 (no copy
	// needed), then elect 3.
	req = kadm.AlterPartitionAssignmentsReq{}
	req.Assign("moved", 1, []int32{3, 2, 4})
	mustReassign(ctx, t, adm, req)
	elected, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"moved": {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := elected["moved"][1]; r.Err != nil {
		t.Fatalf("elect preferred: %+v", r)
	}
	c.waitImage("preferred leader 3", func(img *quorum.Image) bool { p, _ := img.Partition("moved", 1); return p.Leader == 3 })
	again, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"moved": {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := again["moved"][1]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("second election: %+v", r)
	}
}

func mustReassign(ctx context.Context, t *testing.T, adm *kadm.Client, req kadm.AlterPartitionAssignmentsReq) {
	t.Helper()
	answers, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range answers.Sorted() {
		if a.Err != nil {
			t.Fatalf("reassign %s-%d: %v %s", a.Topic, a.Partition, a.Err, a.ErrMessage)
		}
	}
}

// waitNoReassignment waits until ListPartitionReassignments of every
// partition lists none.
func waitNoReassignment(ctx context.Context, t *testing.T, adm *kadm.Client) {
	t.Helper()
	for {
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moved": {0: {}, 1: {}}})
		if err == nil && len(listed.Sorted()) == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("reassignments still in progress: %v %+v", err, listed)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a bounded wait
	}
}

// TestBrokerWithoutReplicaAnswersNotLeader: a broker that holds no replica
// of a topic the cluster has answers Produce and Fetch (by id and by name)
// and ListOffsets with NOT_LEADER_OR_FOLLOWER, as Kafka does, so a client
// whose metadata is older than a move refreshes it and retries instead of
// taking the topic for deleted (UNKNOWN_TOPIC_ID).
func TestBrokerWithoutReplicaAnswersNotLeader(t *testing.T) {
	t.Parallel()
	c, cl, p, topic := clusterWithOneReplicaTopic(t)
	c.waitMetadata(3, "one", 1) // every member has applied the topic
	other := int32(1)
	if p.Leader == other {
		other = 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	broker := cl.Broker(int(other))

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 13
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = topic.ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fetch.MaxBytes = 1 << 20
	resp, err := fetch.RequestWith(ctx, broker)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch by id from broker %d: %v, want NOT_LEADER_OR_FOLLOWER", other, kerr.ErrorForCode(got))
	}

	list := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "one"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	list.Topics = append(list.Topics, lt)
	listed, err := list.RequestWith(ctx, broker)
	if err != nil {
		t.Fatal(err)
	}
	if got := listed.Topics[0].Partitions[0].ErrorCode; got != kerr.NotLeaderForPartition.Code {
		t.Fatalf("list offsets from broker %d: %v, want NOT_LEADER_OR_FOLLOWER", other, kerr.ErrorForCode(got))
	}
	if code := rawProduce(t, c.listen[other], "one", topic.ID, 0, "v"); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce by id to broker %d: %v, want NOT_LEADER_OR_FOLLOWER", other, kerr.ErrorForCode(code))
	}
}

// TestCoordinatorWithoutReplicaResolvesTopicIDs: a group's coordinator
// that holds no replica of the group's topic still resolves its id
// (OffsetCommit and OffsetFetch v10 name topics by id): the topics come
// from the cluster's metadata, not from the coordinator's own disk.
func TestCoordinatorWithoutReplicaResolvesTopicIDs(t *testing.T) {
	t.Parallel()
	c, cl, p, topic := clusterWithOneReplicaTopic(t)
	c.waitMetadata(3, "one", 1) // every member has applied the topic
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A group whose coordinator is not the topic's only replica.
	var group string
	var coordinator int32
	for i := 0; group == ""; i++ {
		if i == 50 {
			t.Fatal("every group tried is coordinated by the topic's broker")
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{fmt.Sprintf("g%d", i)}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if k := resp.Coordinators[0]; k.ErrorCode == 0 && k.NodeID != p.Leader {
			group, coordinator = k.Key, k.NodeID
		} else if k.ErrorCode != 0 {
			time.Sleep(100 * time.Millisecond) // the offsets topic is being created: a bounded retry
		}
	}
	broker := cl.Broker(int(coordinator))
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 10, group, -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.TopicID = topic.ID
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 42
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	var code int16
	for {
		committed, err := commit.RequestWith(ctx, broker)
		if err != nil {
			t.Fatal(err)
		}
		code = committed.Topics[0].Partitions[0].ErrorCode
		if code != kerr.NotCoordinator.Code && code != kerr.CoordinatorLoadInProgress.Code || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond) // the coordinator is loading its shard: a bounded retry
	}
	if code != 0 {
		t.Fatalf("commit by topic id at coordinator %d (topic on %d): %v", coordinator, p.Leader, kerr.ErrorForCode(code))
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 10
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group = group
	ft := kmsg.NewOffsetFetchRequestGroupTopic()
	ft.TopicID, ft.Partitions = topic.ID, []int32{0}
	fg.Topics = append(fg.Topics, ft)
	fetch.Groups = append(fetch.Groups, fg)
	fetched, err := fetch.RequestWith(ctx, broker)
	if err != nil {
		t.Fatal(err)
	}
	got := fetched.Groups[0].Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.Offset != 42 {
		t.Fatalf("fetch by topic id: offset %d, %v", got.Offset, kerr.ErrorForCode(got.ErrorCode))
	}
}

// TestReassignmentCopyThrottled: with follower.replication.throttled.rate
// on the broker a reassignment adds, its copy of the partition grows no
// faster than the rate allows (plus one second's burst and one fetch),
// while the move still completes.
func TestReassignmentCopyThrottled(t *testing.T) {
	t.Parallel()
	const rate = 128 << 10
	c := newTestClusterWith(t, 4, map[string]string{"auto.leader.rebalance.enable": "false"}, func(c *testCluster) {
		c.memberProps = map[int32]map[string]string{4: {"follower.replication.throttled.rate": strconv.Itoa(rate)}}
	})
	c.waitMetadata(4, "", 0)
	cl, adm := c.client(kgo.DefaultProduceTopic("slow"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(16<<10))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createTopicOnFirstThree(ctx, t, cl, adm, "slow")
	random := rand.New(rand.NewPCG(1, 2))
	for range 600 { // about 600 KB that does not compress
		value := make([]byte, 1000)
		for i := range value {
			value[i] = byte(random.Uint32())
		}
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("slow", 0, []int32{1, 2, 3, 4})
	start := time.Now()
	mustReassign(ctx, t, adm, req)
	time.Sleep(time.Second) // let the copy run a while (the bound below holds for any elapsed time)
	dirs, err := adm.DescribeBrokerLogDirs(ctx, 4, kadm.TopicsSet{"slow": {0: {}}})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var copied int64
	dirs.EachPartition(func(p kadm.DescribedLogDirPartition) { copied += p.Size })
	limit := int64(rate*elapsed.Seconds()) + rate + rate/4 + 64<<10 // the rate, one second's burst, one fetch, batch framing
	if copied > limit {
		t.Fatalf("broker 4 copied %d bytes in %v, more than the throttle allows (%d)", copied, elapsed, limit)
	}
	t.Logf("broker 4 copied %d bytes in %v (limit %d)", copied, elapsed, limit)
	waitReplicas(ctx, t, adm, "slow", []int32{1, 2, 3, 4})
	// In sync: broker 4 holds the whole partition.
	dirs, err = adm.DescribeBrokerLogDirs(ctx, 4, kadm.TopicsSet{"slow": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var whole int64
	dirs.EachPartition(func(p kadm.DescribedLogDirPartition) { whole += p.Size })
	if whole < 600_000 {
		t.Fatalf("broker 4 holds %d bytes once in sync, want the 600 KB produced", whole)
	}
}

// waitReplicas waits until Metadata shows topic's partition 0 on exactly
// replicas (in that order) with all of them in sync.
func waitReplicas(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, replicas []int32) {
	t.Helper()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if p, ok := md.Topics[topic].Partitions[0]; ok && slices.Equal(p.Replicas, replicas) && len(p.ISR) == len(replicas) {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s-0 not on %v in sync: %v", topic, replicas, err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a bounded wait
	}
}

// clusterWithOneReplicaTopic starts 3 members and creates topic "one" of
// one partition on one broker: the cluster, a client, the partition and
// the topic as the quorum holds them.
func clusterWithOneReplicaTopic(t *testing.T) (*testCluster, *kgo.Client, quorum.Partition, quorum.Topic) {
	t.Helper()
	c := newTestCluster(t, 3, nil)
	c.waitMetadata(3, "", 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	createTopic(t, cl, "one", 1, 1)
	img := c.waitImage("topic one", func(img *quorum.Image) bool { _, ok := img.Partition("one", 0); return ok })
	p, _ := img.Partition("one", 0)
	topic, _ := img.Topic("one")
	return c, cl, p, topic
}

// createTopicOnFirstThree creates topic (one partition, RF 3) and moves it
// onto brokers 1, 2, 3 (the quorum may have placed it on 4), in sync.
func createTopicOnFirstThree(ctx context.Context, t *testing.T, cl *kgo.Client, adm *kadm.Client, topic string) {
	t.Helper()
	createTopic(t, cl, topic, 1, 3)
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, []int32{1, 2, 3})
	mustReassign(ctx, t, adm, req)
	waitReplicas(ctx, t, adm, topic, []int32{1, 2, 3})
}
