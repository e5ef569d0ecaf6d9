package clusternode

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/broker/quorum"
)

// TestReassignmentSurvivesStopsMidMove: a partition moves from 1, 2, 3 to
// 4, 2, 3 (its leader leaves) under an idempotent acks=all producer with
// the new replica throttled, so the move is still copying when, in turn,
// the active controller stops and the partition's leader stops. Both
// come back; the move completes from the quorum's log without being asked
// again, and every acknowledged record is read back exactly once, in order.
func TestReassignmentSurvivesStopsMidMove(t *testing.T) {
	t.Parallel()
	c := newTestClusterWith(t, 4, map[string]string{"min.insync.replicas": "2", "auto.leader.rebalance.enable": "false"}, func(c *testCluster) {
		c.memberProps = map[int32]map[string]string{4: {"follower.replication.throttled.rate": "65536"}}
	})
	c.waitMetadata(4, "", 0)
	seeds := c.bootstrap()
	admin, adm := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createTopicOnFirstThree(ctx, t, admin, adm, "hard")

	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("hard"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(8<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var mu sync.Mutex
	var acked []string
	value := func(i int) []byte { return fmt.Appendf(make([]byte, 0, 600), "%06d-%0590d", i, i) }
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			producer.Produce(ctx, &kgo.Record{Value: value(i)}, func(r *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %.6s: %v", r.Value, err)
					return
				}
				mu.Lock()
				acked = append(acked, string(r.Value))
				mu.Unlock()
			})
		}
	}
	produce(0, 500) // about 300 KB: several seconds of copy at 64 KiB/s
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("hard", 0, []int32{4, 2, 3})
	mustReassign(ctx, t, adm, req)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); produce(500, 1000) }()

	// The active controller stops while the copy runs, then returns.
	moving := c.waitImage("the move under way", func(img *quorum.Image) bool {
		p, _ := img.Partition("hard", 0)
		return slices.Equal(p.AddingReplicas, []int32{4}) || slices.Equal(p.Replicas, []int32{4, 2, 3})
	})
	if p, _ := moving.Partition("hard", 0); !p.Reassigning() {
		t.Fatalf("the move finished before the faults (the throttle should hold it): %+v", p)
	}
	controller := c.anyMember().Node().ControllerID()
	c.stop(controller)
	time.Sleep(1500 * time.Millisecond) // past the session timeout: a new controller is elected, the stopped member fenced
	c.start(controller)
	// The partition's leader stops while the copy still runs, then returns.
	img := c.waitImage("a leader for hard-0", func(img *quorum.Image) bool { p, _ := img.Partition("hard", 0); return p.Leader > 0 })
	p, _ := img.Partition("hard", 0)
	t.Logf("stopped the controller %d; now stopping the leader %d of %+v", controller, p.Leader, p)
	leader := p.Leader
	c.stop(leader)
	time.Sleep(1500 * time.Millisecond) // past the session timeout: fenced, another replica leads meanwhile
	c.start(leader)

	wg.Wait()
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c.waitImage("the move finished", func(img *quorum.Image) bool {
		p, _ := img.Partition("hard", 0)
		return slices.Equal(p.Replicas, []int32{4, 2, 3}) && !p.Reassigning() && p.Leader > 0
	})
	mu.Lock()
	want := slices.Clone(acked)
	mu.Unlock()
	slices.Sort(want)
	live := []string{c.listen[2], c.listen[3], c.listen[4]}
	checkExactlyOnce(t, want, readAll(t, live, "hard", 0))
}

// TestRemovedWhileDownDeletesItsCopy: a broker that a reassignment removed
// from a partition while it was down deletes its copy when it returns.
func TestRemovedWhileDownDeletesItsCopy(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 4, map[string]string{"auto.leader.rebalance.enable": "false"})
	c.waitMetadata(4, "", 0)
	cl, adm := c.client(kgo.DefaultProduceTopic("left"), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createTopicOnFirstThree(ctx, t, cl, adm, "left")
	for i := range 50 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitBrokerISR(t, c.listen[2], "left", 0, 3)
	c.stop(3)
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("left", 0, []int32{1, 2, 4})
	mustReassign(ctx, t, adm, req)
	waitReplicas(ctx, t, adm, "left", []int32{1, 2, 4})
	c.start(3)
	c.waitMetadata(4, "", 0)
	size := int64(-1) // unknown until broker 3 answers
	for {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 3, kadm.TopicsSet{"left": {0: {}}})
		if err == nil {
			size = 0
			dirs.EachPartition(func(p kadm.DescribedLogDirPartition) { size += p.Size })
		}
		if size == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("broker 3 still holds %d bytes of left-0, removed from it while it was down", size)
		}
		time.Sleep(100 * time.Millisecond) // poll interval of a bounded wait
	}
}
