package clusternode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/quorum"
)

// clusterProps are the brokers' settings in these tests: RF 3 by default,
// min.insync.replicas 2, a short ISR lag.
var clusterProps = map[string]string{
	"default.replication.factor": "3",
	"min.insync.replicas":        "2",
	"replica.lag.time.max.ms":    "2000",
}

// TestLeaderKillKeepsAcknowledgedRecords: an idempotent acks=all producer
// writes N records to an RF-3 topic; after a third of them are
// acknowledged the partition leader's member is closed; the quorum fences
// it and elects another ISR member; the producer goes on, and every
// acknowledged record is read back exactly once, in order.
func TestLeaderKillKeepsAcknowledgedRecords(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, clusterProps)
	c.waitMetadata(3, "", 0)
	seeds := c.bootstrap()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("kill"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(40*time.Second),
		kgo.RetryTimeout(40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createTopic(t, cl, "kill", 1, 3)
	img := c.waitImage("kill-0 with a full ISR", func(img *quorum.Image) bool {
		p, ok := partitionOf(img, "kill")
		return ok && len(p.ISR) == 3
	})
	before, _ := partitionOf(img, "kill")
	c.waitMetadata(3, "kill", 3)

	const n = 600
	var mu sync.Mutex
	var acked []string
	var failed []error
	var wg sync.WaitGroup
	killed := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		if i == n/3 {
			// Wait for the first third, then close the leader's member.
			waitProduced(t, &wg, "the first third")
			t.Logf("closing member %d (leader of kill-0 at epoch %d)", before.Leader, before.LeaderEpoch)
			c.stop(before.Leader)
			close(killed)
		}
		wg.Add(1)
		value := fmt.Sprintf("%06d", i)
		cl.Produce(ctx, &kgo.Record{Value: []byte(value)}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			acked = append(acked, value)
		})
		if i%50 == 0 {
			time.Sleep(time.Millisecond) // spread the load a little; not a synchronisation
		}
	}
	waitProduced(t, &wg, "every record")
	<-killed
	after := c.waitImage("a new leader of kill-0", func(img *quorum.Image) bool {
		p, ok := partitionOf(img, "kill")
		return ok && p.Leader >= 0 && p.Leader != before.Leader
	})
	p, _ := partitionOf(after, "kill")
	t.Logf("new leader %d at epoch %d, ISR %v", p.Leader, p.LeaderEpoch, p.ISR)
	if p.LeaderEpoch <= before.LeaderEpoch || slices.Contains(p.ISR, before.Leader) {
		t.Errorf("after the kill: leader epoch %d (was %d), ISR %v still holds %d", p.LeaderEpoch, before.LeaderEpoch, p.ISR, before.Leader)
	}
	if len(failed) > 0 {
		t.Errorf("%d records failed, first: %v", len(failed), failed[0])
	}
	if len(acked) != n {
		t.Errorf("%d of %d acknowledged", len(acked), n)
	}
	read := readAll(t, seeds, "kill", 0)
	checkExactlyOnce(t, acked, read)
}

// TestNotEnoughReplicasThenRecovery: five members (voters 1-3, non-voters
// 4 and 5), a topic of 5 partitions at RF 3 and min.insync.replicas 2.
// The partition whose replicas are a voter plus 4 and 5 gets records; then
// members 4 and 5 are closed: the quorum keeps its majority, fences them
// and shrinks the ISR to the voter alone, and acks=all answers
// NOT_ENOUGH_REPLICAS. After 4 and 5 restart on their data directories and
// rejoin the ISR, producing works again and every acknowledged record is
// there exactly once.
func TestNotEnoughReplicasThenRecovery(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 5, clusterProps)
	c.waitMetadata(5, "", 0)
	seeds := c.bootstrap()
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopic(t, admin, "nes", 5, 3)
	img := c.waitImage("every nes partition with a full ISR", func(img *quorum.Image) bool { return fullISR(img, "nes") })
	var target quorum.Partition
	found := false
	tp, _ := img.Topic("nes")
	for _, p := range tp.Partitions {
		if slices.Contains(p.Replicas, 4) && slices.Contains(p.Replicas, 5) && p.Leader <= 3 {
			target, found = p, true
		}
	}
	if !found {
		t.Fatalf("no partition led by a voter with replicas 4 and 5: %+v", tp.Partitions)
	}
	t.Logf("partition %d: replicas %v, leader %d", target.Partition, target.Replicas, target.Leader)
	newProducer := func(extra ...kgo.Opt) *kgo.Client {
		opts := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("nes"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0)}, extra...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	var acked []string
	produce := func(cl *kgo.Client, from, to int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := from; i < to; i++ {
			value := fmt.Sprintf("%06d", i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value), Partition: target.Partition}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", value, err)
			}
			acked = append(acked, value)
		}
	}
	produce(newProducer(), 0, 100)

	c.stop(4)
	c.stop(5)
	c.waitImage("the ISR shrunk to the leader", func(img *quorum.Image) bool {
		p, ok := img.Partition("nes", target.Partition)
		return ok && len(p.ISR) == 1 && p.Leader == target.Leader
	})
	waitBrokerISR(t, c.listen[target.Leader], "nes", target.Partition, 1)
	// A raw acks=all Produce to the leader, so the test sees the broker's
	// own answer (a client would retry it).
	if code := rawProduce(t, c.listen[target.Leader], "nes", target.TopicID, target.Partition, "refused"); !errors.Is(kerr.ErrorForCode(code), kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with the ISR at 1 of min.insync 2: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(code))
	}

	c.start(4)
	c.start(5)
	c.waitImage("the ISR full again", func(img *quorum.Image) bool {
		p, ok := img.Partition("nes", target.Partition)
		return ok && len(p.ISR) == 3
	})
	produce(newProducer(), 100, 150)
	read := readAll(t, seeds, "nes", target.Partition)
	if slices.Contains(read, "refused") {
		t.Errorf("a refused record is in the log")
	}
	checkExactlyOnce(t, acked, read)
}

// waitProduced waits for the produce callbacks counted by wg, at most 90s
// (a client that cannot find the new leader would retry for long).
func waitProduced(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("%s not acknowledged or failed within 90s", what)
	}
}

// TestFindCoordinatorAgrees: every member names the same coordinator for
// a group and for a transactional id — the leader of the key's partition
// of the replicated internal topic — and, once that member is closed,
// the same new one.
func TestFindCoordinatorAgrees(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, coordinatorProps())
	c.waitMetadata(3, "", 0)
	for _, keyType := range []int8{0, 1} {
		first := waitCoordinator(t, c, keyType, -1)
		if keyType == 1 {
			c.stop(first)
			waitCoordinator(t, c, keyType, first)
		}
	}
}

// waitCoordinator waits until every running member answers FindCoordinator
// of key "k" with one broker other than not, the leader of the key's
// partition in the quorum's image, and returns it.
func waitCoordinator(t *testing.T, c *testCluster, keyType int8, not int32) int32 {
	t.Helper()
	topic, partitions := "__consumer_offsets", 5
	if keyType == 1 {
		topic = "__transaction_state"
	}
	index := int32(group.PartitionFor("k", partitions)) // txn.PartitionFor is the same hash
	deadline := time.Now().Add(20 * time.Second)
	for {
		answers := map[int32]bool{}
		for _, m := range c.members {
			answers[findCoordinator(t, m.Addr(), keyType, "k")] = true
		}
		p, ok := c.anyMember().Node().Image().Partition(topic, index)
		if len(answers) == 1 && ok && answers[p.Leader] && p.Leader != not {
			return p.Leader
		}
		if time.Now().After(deadline) {
			t.Fatalf("coordinators of k (key type %d): %v; leader of %s-%d %d", keyType, answers, topic, index, p.Leader)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a bounded condition wait
	}
}

// TestTopicAdminThroughQuorum: CreateTopics with a config, CreatePartitions,
// auto-creation by Produce, AlterConfigs, IncrementalAlterConfigs and
// DeleteTopics, each sent to one member, show on every member (Metadata,
// DescribeConfigs).
func TestTopicAdminThroughQuorum(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, clusterProps)
	c.waitMetadata(3, "", 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.listen[2]), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	create := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "admin", 1, -1
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("123456")
	rt.Configs = append(rt.Configs, cfg)
	create.Topics, create.TimeoutMillis = append(create.Topics, rt), 30000
	created, err := create.RequestWith(ctx, cl)
	if err != nil || created.Topics[0].ErrorCode != 0 || created.Topics[0].ReplicationFactor != 3 {
		t.Fatalf("CreateTopics admin: %v %+v", err, created)
	}
	again, err := create.RequestWith(ctx, cl)
	if err != nil || again.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("second CreateTopics admin: %v %+v, want TOPIC_ALREADY_EXISTS", err, again)
	}
	eachMember(t, c, "admin with 1 partition of 3 replicas and retention.ms 123456", func(addr string) error {
		if err := topicShape(addr, "admin", 1, 3); err != nil {
			return err
		}
		return topicConfigIs(addr, "admin", "retention.ms", "123456")
	})

	grow := kmsg.NewPtrCreatePartitionsRequest()
	gt := kmsg.NewCreatePartitionsRequestTopic()
	gt.Topic, gt.Count = "admin", 3
	grow.Topics, grow.TimeoutMillis = append(grow.Topics, gt), 30000
	grown, err := grow.RequestWith(ctx, cl)
	if err != nil || grown.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreatePartitions admin: %v %+v", err, grown)
	}
	eachMember(t, c, "admin with 3 partitions", func(addr string) error { return topicShape(addr, "admin", 3, 3) })

	// Configs changed through one member reach every replica: the
	// controller's metadata holds them, not the member that was asked.
	incremental := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, "admin"
	ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ic.Name, ic.Op, ic.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("654321")
	ir.Configs = append(ir.Configs, ic)
	incremental.Resources = append(incremental.Resources, ir)
	altered, err := incremental.RequestWith(ctx, cl)
	if err != nil || altered.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs admin: %v %+v", err, altered)
	}
	eachMember(t, c, "admin with retention.ms 654321", func(addr string) error {
		return topicConfigIs(addr, "admin", "retention.ms", "654321")
	})
	replace := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "admin"
	ac := kmsg.NewAlterConfigsRequestResourceConfig()
	ac.Name, ac.Value = "retention.ms", kmsg.StringPtr("777777")
	ar.Configs = append(ar.Configs, ac)
	replace.Resources = append(replace.Resources, ar)
	if replaced, err := replace.RequestWith(ctx, cl); err != nil || replaced.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs admin: %v %+v", err, replaced)
	}
	eachMember(t, c, "admin with retention.ms 777777", func(addr string) error {
		return topicConfigIs(addr, "admin", "retention.ms", "777777")
	})
	bad := kmsg.NewPtrAlterConfigsRequest()
	br := ar
	bc := ac
	bc.Value = kmsg.StringPtr("not a number")
	br.Configs = []kmsg.AlterConfigsRequestResourceConfig{bc}
	bad.Resources = append(bad.Resources, br)
	if refused, err := bad.RequestWith(ctx, cl); err != nil || refused.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("AlterConfigs with a bad value: %v %+v, want INVALID_CONFIG", err, refused)
	}
	eachMember(t, c, "admin still with retention.ms 777777", func(addr string) error {
		return topicConfigIs(addr, "admin", "retention.ms", "777777")
	})

	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce to an auto-created topic: %v", err)
	}
	eachMember(t, c, "auto with 1 partition of 3 replicas", func(addr string) error { return topicShape(addr, "auto", 1, 3) })

	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("admin")
	del.Topics, del.TopicNames, del.TimeoutMillis = append(del.Topics, dt), []string{"admin"}, 30000
	deleted, err := del.RequestWith(ctx, cl)
	if err != nil || deleted.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics admin: %v %+v", err, deleted)
	}
	eachMember(t, c, "admin gone", func(addr string) error {
		resp, err := metadataOf(addr, "")
		if err != nil {
			return err
		}
		for _, mt := range resp.Topics {
			if *mt.Topic == "admin" {
				return fmt.Errorf("admin still listed")
			}
		}
		return nil
	})
}

// eachMember waits (bounded) until check passes on every running member.
func eachMember(t *testing.T, c *testCluster, what string, check func(addr string) error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for id, m := range c.members {
		for {
			err := check(m.Addr())
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d: %s: %v", id, what, err)
			}
			time.Sleep(50 * time.Millisecond) // poll interval of a bounded condition wait
		}
	}
}

// topicShape checks a topic's partition count and replicas per partition
// in the Metadata of the broker at addr (all topics, no auto-creation).
func topicShape(addr, topic string, partitions, replicas int) error {
	resp, err := metadataOf(addr, "")
	if err != nil {
		return err
	}
	for _, mt := range resp.Topics {
		if *mt.Topic != topic {
			continue
		}
		if len(mt.Partitions) != partitions {
			return fmt.Errorf("%s has %d partitions", topic, len(mt.Partitions))
		}
		for _, p := range mt.Partitions {
			if len(p.Replicas) != replicas || p.Leader < 0 {
				return fmt.Errorf("%s-%d: replicas %v, leader %d", topic, p.Partition, p.Replicas, p.Leader)
			}
		}
		return nil
	}
	return fmt.Errorf("%s not listed", topic)
}

// TestWholeClusterRestart: every member closed and started again on its
// data directory (the quorum restarts from its log): the topic, its
// assignment and every acknowledged record are there.
func TestWholeClusterRestart(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, clusterProps)
	c.waitMetadata(3, "", 0)
	seeds := c.bootstrap()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("restart"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	createTopic(t, cl, "restart", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var acked []string
	for i := range 100 {
		value := fmt.Sprintf("%06d", i)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", value, err)
		}
		acked = append(acked, value)
	}
	cl.Close()
	before, _ := partitionOf(c.anyMember().Node().Image(), "restart")
	for id := int32(1); id <= 3; id++ {
		c.stop(id)
	}
	for id := int32(1); id <= 3; id++ {
		c.start(id)
	}
	c.waitMetadata(3, "restart", 3)
	after, _ := partitionOf(c.anyMember().Node().Image(), "restart")
	if after.TopicID != before.TopicID || !slices.Equal(after.Replicas, before.Replicas) {
		t.Errorf("after the restart: %+v, before %+v", after, before)
	}
	// The high watermark is not kept on disk: after the restart it rises
	// again as the followers fetch.
	took := waitEndOffset(t, seeds, "restart", 0, int64(len(acked)))
	t.Logf("high watermark back at %d after %v", len(acked), took.Round(time.Millisecond))
	checkExactlyOnce(t, acked, readAll(t, seeds, "restart", 0))
}
