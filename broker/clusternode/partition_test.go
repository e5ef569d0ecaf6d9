package clusternode

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/internal/partition"
	"github.com/exactly-eos/exactly/internal/testutil"
	"github.com/exactly-eos/exactly/wire"
)

// proxiedMember is how a member of a proxied cluster is reached: the
// proxy in front of its Kafka listener (advertised), the real raft and RPC
// listeners behind its voter entry's proxies, and its source address.
type proxiedMember struct {
	advertised, raftListen, rpcListen, source string
}

// newProxiedCluster starts n members with every listener (Kafka, raft,
// RPC) behind a proxy of one partition group: the voters and the
// advertised listeners are the proxies' addresses, and member i dials
// every inter-broker connection from 127.0.0.(10+i). Test clients dial
// from 127.0.0.1.
func newProxiedCluster(t *testing.T, n int, props map[string]string) (*testCluster, *partition.Group) {
	t.Helper()
	group := partition.New()
	t.Cleanup(func() { group.Close() }) // after the members' cleanup below (LIFO)
	c := &testCluster{t: t, voters: map[int32]quorum.VoterAddrs{}, listen: map[int32]string{},
		dirs: map[int32]string{}, props: props, members: map[int32]*Member{}, proxied: map[int32]proxiedMember{}}
	root := t.TempDir()
	for id := int32(1); id <= int32(n); id++ {
		source := "127.0.0." + strconv.Itoa(10+int(id))
		if err := group.AddBroker(id, source); err != nil {
			t.Fatal(err)
		}
		real := testutil.FreeAddrs(t, 3) // raft, RPC, Kafka
		var proxies [3]string
		for i, target := range real {
			addr, err := group.Forward(id, "127.0.0.1:0", target)
			if err != nil {
				t.Fatal(err)
			}
			proxies[i] = addr
		}
		c.voters[id] = quorum.VoterAddrs{Raft: proxies[0], RPC: proxies[1]}
		c.listen[id] = real[2]
		c.proxied[id] = proxiedMember{advertised: proxies[2], raftListen: real[0], rpcListen: real[1], source: source}
		c.dirs[id] = filepath.Join(root, "member-"+strconv.Itoa(int(id)))
	}
	t.Cleanup(func() {
		for id := range c.members {
			c.stop(id)
		}
	})
	for id := int32(1); id <= int32(n); id++ {
		c.start(id)
	}
	return c, group
}

// waitImageOn waits until member m's own quorum image satisfies cond (a
// cut-off member's image is stale, so the test names the member).
func waitImageOn(t *testing.T, m *Member, what string, cond func(*quorum.Image) bool) *quorum.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	img, err := m.Node().WaitFor(ctx, cond)
	if err != nil {
		t.Fatalf("member %d waiting for %s: %v", m.ID(), what, err)
	}
	return img
}

// produceLeaderAck sends one acks=1 Produce of a plain batch of values
// straight to the broker at addr and returns the partition's error.
func produceLeaderAck(t *testing.T, addr, topic string, topicID [16]byte, partition int32, values ...string) error {
	t.Helper()
	var records []wire.BuilderRecord
	for _, v := range values {
		records = append(records, wire.BuilderRecord{TimestampMillis: time.Now().UnixMilli(), Value: []byte(v)})
	}
	batch, err := wire.BuildBatch(wire.PlainBatchOptions(), records)
	if err != nil {
		t.Fatal(err)
	}
	// kgo stamps its own RequiredAcks into every Produce it sends.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID // v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32))
	if err != nil {
		return fmt.Errorf("produce to %s: %w", addr, err)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// produceAll produces values with acks=all through an idempotent client of
// seeds, each acknowledged before the next.
func produceAll(t *testing.T, seeds []string, topic string, values []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s with acks=all: %v", v, err)
		}
	}
}

// values returns n values prefix-000000, prefix-000001, ...
func values(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%06d", prefix, from+i)
	}
	return out
}

// waitSameLog waits (bounded) until member id's replica of topic-0 is
// byte-identical to the leader's, from the log start to the log end, and
// returns it.
func waitSameLog(t *testing.T, c *testCluster, id, leader int32, topic string) []byte {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		want, errWant := c.members[leader].Broker().ReadReplica(topic, 0, 16<<20)
		got, errGot := c.members[id].Broker().ReadReplica(topic, 0, 16<<20)
		if errWant == nil && errGot == nil && got.LogEnd == want.LogEnd && got.LogStart == want.LogStart &&
			bytes.Equal(got.Batches, want.Batches) {
			return got.Batches
		}
		if time.Now().After(deadline) {
			t.Fatalf("member %d's %s-0 (end %d, %d bytes, %v) never matched leader %d's (end %d, %d bytes, %v)",
				id, topic, got.LogEnd, len(got.Batches), errGot, leader, want.LogEnd, len(want.Batches), errWant)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a bounded condition wait
	}
}

// TestPartitionedLeaderTruncatesDivergentTail is issue 18's test (c): the
// leader L of an RF-3 partition is cut off from the other brokers by the
// partition proxies while clients still reach it; records produced to it
// with acks=1 exist only on L (its divergent tail). The quorum fences L and
// elects another ISR member at a higher leader epoch; L is then cut off
// from clients too and acks=all records go to the new leader. After the
// heal L truncates its divergent tail, catches up byte for byte and
// re-enters the ISR; a consumer reads every acks=all record exactly once
// and none of the divergent ones.
func TestPartitionedLeaderTruncatesDivergentTail(t *testing.T) {
	t.Parallel()
	c, group, seeds, img := proxiedTopic(t, "cut")
	acked := values("acked", 0, 20)
	produceAll(t, seeds, "cut", acked)
	before, _ := partitionOf(img, "cut")
	old := before.Leader
	oldAddr := c.proxied[old].advertised
	var observer *Member // a member on the majority side
	for id, m := range c.members {
		if id != old {
			observer = m
			break
		}
	}

	// Step 1: L cut off from its peers only; clients still reach it.
	if err := group.CutPeers(old); err != nil {
		t.Fatal(err)
	}
	divergent := values("divergent", 0, 5)
	for _, v := range divergent {
		if err := produceLeaderAck(t, oldAddr, "cut", before.TopicID, 0, v); err != nil {
			t.Fatalf("acks=1 produce of %s to the cut-off leader %d: %v", v, old, err)
		}
	}
	tail, err := c.members[old].Broker().ReadReplica("cut", 0, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	after := waitImageOn(t, observer, "another leader of cut-0 at a higher epoch", func(img *quorum.Image) bool {
		p, ok := partitionOf(img, "cut")
		return ok && p.Leader >= 0 && p.Leader != old && p.LeaderEpoch > before.LeaderEpoch && !slices.Contains(p.ISR, old)
	})
	now, _ := partitionOf(after, "cut")
	t.Logf("leader %d (epoch %d) cut off with log end %d; new leader %d at epoch %d, ISR %v",
		old, before.LeaderEpoch, tail.LogEnd, now.Leader, now.LeaderEpoch, now.ISR)
	if newLog, err := c.members[now.Leader].Broker().ReadReplica("cut", 0, 16<<20); err != nil || newLog.LogEnd >= tail.LogEnd {
		t.Fatalf("new leader's log end %d (%v), want below the cut-off leader's %d: no divergent tail", newLog.LogEnd, err, tail.LogEnd)
	}

	// Step 2: L cut off from everyone; acks=all records go to the new leader.
	if err := group.Cut(old); err != nil {
		t.Fatal(err)
	}
	more := values("acked", 20, 30)
	produceAll(t, seeds, "cut", more)
	acked = append(acked, more...)

	// Step 3: heal. L truncates, catches up and re-enters the ISR.
	if err := group.Heal(old); err != nil {
		t.Fatal(err)
	}
	waitImageOn(t, observer, "the old leader back in the ISR", func(img *quorum.Image) bool {
		p, ok := partitionOf(img, "cut")
		return ok && len(p.ISR) == 3
	})
	leaderNow := waitImageOn(t, observer, "a leader", func(img *quorum.Image) bool {
		p, ok := partitionOf(img, "cut")
		return ok && p.Leader >= 0
	})
	lp, _ := partitionOf(leaderNow, "cut")
	if lp.Leader == old {
		t.Fatalf("the old leader %d leads again at epoch %d before the test compared logs", old, lp.LeaderEpoch)
	}
	log := waitSameLog(t, c, old, lp.Leader, "cut")
	for _, v := range divergent {
		if bytes.Contains(log, []byte(v)) {
			t.Errorf("the healed replica still holds divergent record %s", v)
		}
	}
	read := readAll(t, seeds, "cut", 0)
	for _, v := range read {
		if strings.HasPrefix(v, "divergent") {
			t.Errorf("consumer read divergent record %s", v)
		}
	}
	checkExactlyOnce(t, acked, read)
}

// TestPartitionedFollowerRejoinsISR: a follower cut off by the partition
// proxies falls out of the ISR while acks=all records go on (ISR 2 of
// min.insync 2); after the heal it catches up byte for byte and re-enters
// the ISR, and every acknowledged record is read exactly once.
func TestPartitionedFollowerRejoinsISR(t *testing.T) {
	t.Parallel()
	c, group, seeds, img := proxiedTopic(t, "lag")
	p, _ := partitionOf(img, "lag")
	follower := p.Replicas[0]
	if follower == p.Leader {
		follower = p.Replicas[1]
	}
	leader := c.members[p.Leader]
	acked := values("acked", 0, 20)
	produceAll(t, seeds, "lag", acked)

	if err := group.Cut(follower); err != nil {
		t.Fatal(err)
	}
	waitImageOn(t, leader, "the cut-off follower out of the ISR", func(img *quorum.Image) bool {
		q, ok := partitionOf(img, "lag")
		return ok && len(q.ISR) == 2 && !slices.Contains(q.ISR, follower)
	})
	more := values("acked", 20, 30)
	produceAll(t, seeds, "lag", more)
	acked = append(acked, more...)
	if got, err := c.members[follower].Broker().ReadReplica("lag", 0, 16<<20); err != nil || got.LogEnd > 20 {
		t.Fatalf("cut-off follower's log end %d (%v): it replicated through the cut", got.LogEnd, err)
	}

	if err := group.Heal(follower); err != nil {
		t.Fatal(err)
	}
	waitImageOn(t, leader, "the follower back in the ISR", func(img *quorum.Image) bool {
		q, ok := partitionOf(img, "lag")
		return ok && len(q.ISR) == 3
	})
	now := waitImageOn(t, leader, "a leader", func(img *quorum.Image) bool {
		q, ok := partitionOf(img, "lag")
		return ok && q.Leader >= 0
	})
	q, _ := partitionOf(now, "lag")
	waitSameLog(t, c, follower, q.Leader, "lag")
	checkExactlyOnce(t, acked, readAll(t, seeds, "lag", 0))
}

// proxiedTopic starts 3 members behind partition proxies and creates
// topic (1 partition, 3 replicas), returning once its ISR is full and
// every member's Metadata shows it.
func proxiedTopic(t *testing.T, topic string) (*testCluster, *partition.Group, []string, *quorum.Image) {
	t.Helper()
	c, group := newProxiedCluster(t, 3, clusterProps)
	c.waitMetadata(3, "", 0)
	seeds := c.bootstrap()
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopic(t, admin, topic, 1, 3)
	img := c.waitImage(topic+"-0 with a full ISR", func(img *quorum.Image) bool { return fullISR(img, topic) })
	c.waitMetadata(3, topic, 3)
	return c, group, seeds, img
}
