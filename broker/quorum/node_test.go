package quorum

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/exactly-eos/exactly/internal/testutil"
)

func TestElectsOneController(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 20*time.Second)
	c := newTestCluster(t, 3, testTiming)
	c.startAll()
	leader := c.controller(ctx)
	testutil.UntilContext(t, ctx, "every node agreeing on the controller", func() bool {
		for _, n := range c.nodes {
			if n.ControllerID() != leader.ID() {
				return false
			}
		}
		return true
	})
	active := 0
	for _, n := range c.nodes {
		if !n.IsVoter() {
			t.Errorf("node %d of 3 is not a voter", n.ID())
		}
		if n.IsController() {
			active++
		}
	}
	if active != 1 {
		t.Fatalf("%d active controllers, want 1", active)
	}
}

// A topic created through a follower (forwarded to the controller) shows up,
// identical, in every node's image; errors cross the forwarding as sentinels.
func TestCreateTopicForwardedAndSeenByAll(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 20*time.Second)
	c := newTestCluster(t, 3, testTiming)
	c.startAll()
	c.heartbeatAll()
	c.waitAll(ctx, "brokers registered", brokersLive(1, 2, 3))
	follower := c.follower(ctx)
	topic, err := follower.CreateTopic(ctx, CreateTopicRequest{Name: "orders", Partitions: 3, ReplicationFactor: 3, Configs: map[string]string{"min.insync.replicas": "2"}})
	if err != nil {
		t.Fatalf("create through follower %d: %v", follower.ID(), err)
	}
	if topic.ID == ([16]byte{}) || len(topic.Partitions) != 3 {
		t.Fatalf("created topic %+v", topic)
	}
	if local, ok := follower.Image().Topic("orders"); !ok || !sameTopic(&local, &topic) {
		t.Fatalf("the calling follower's image does not hold its own write: %+v", local)
	}
	c.waitAll(ctx, "the topic", func(img *Image) bool {
		got, ok := img.Topic("orders")
		return ok && sameTopic(&got, &topic)
	})
	_, err = follower.CreateTopic(ctx, CreateTopicRequest{Name: "orders", Partitions: 1, ReplicationFactor: 1})
	if !errors.Is(err, ErrTopicAlreadyExists) {
		t.Fatalf("duplicate through follower: %v, want ErrTopicAlreadyExists", err)
	}
	_, err = follower.CreateTopic(ctx, CreateTopicRequest{Name: "big", Partitions: 1, ReplicationFactor: 4})
	if !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("RF 4 on 3 brokers: %v, want ErrInvalidReplicationFactor", err)
	}
	if _, err := follower.CreatePartitions(ctx, "orders", 5); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	if err := follower.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	c.waitAll(ctx, "the topic deleted", func(img *Image) bool { _, ok := img.Topic("orders"); return !ok })
}

// Closing the active controller moves the role to another voter, and
// requests made on the survivors still work.
func TestControllerFailover(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	c := newTestCluster(t, 3, testTiming)
	c.startAll()
	old := c.controller(ctx)
	c.stop(old.ID())
	leader := c.controller(ctx)
	if leader.ID() == old.ID() {
		t.Fatal("closed node still controller")
	}
	for _, n := range c.nodes {
		stop := n.StartHeartbeats(BrokerRegistration{ID: n.ID(), Host: "127.0.0.1", Port: 9000 + n.ID()})
		t.Cleanup(stop)
	}
	c.waitAll(ctx, "survivors registered", brokersLive(c.follower(ctx).ID(), leader.ID()))
	follower := c.follower(ctx)
	if _, err := follower.CreateTopic(ctx, CreateTopicRequest{Name: "after-failover", Partitions: 2, ReplicationFactor: 2}); err != nil {
		t.Fatalf("create after failover: %v", err)
	}
	c.waitAll(ctx, "topic after failover", func(img *Image) bool { _, ok := img.Topic("after-failover"); return ok })
}

// A broker that stops heartbeating is fenced within SessionTimeout (plus
// slack); the partitions it led get the next ISR replica as leader with
// leader epoch +1; when it heartbeats again it is unfenced.
func TestSilentBrokerFencedAndReturns(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	c := newTestCluster(t, 3, testTiming)
	c.startAll()
	stops := c.heartbeatAll()
	c.waitAll(ctx, "brokers registered", brokersLive(1, 2, 3))
	leader := c.controller(ctx)
	topic, err := leader.CreateTopic(ctx, CreateTopicRequest{Name: "t", Partitions: 3, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	const victim = int32(2) // the broker, not the raft node, goes silent
	epoch := func() int64 { b, _ := leader.Image().Broker(victim); return b.Epoch }()
	stops[victim]()
	silentSince := time.Now()
	img, err := leader.WaitFor(ctx, func(img *Image) bool { b, _ := img.Broker(victim); return b.Fenced })
	if err != nil {
		t.Fatal(err)
	}
	slack := 2 * time.Second
	if took := time.Since(silentSince); took > c.timing.SessionTimeout+slack {
		t.Errorf("fenced after %v, want within %v + %v", took, c.timing.SessionTimeout, slack)
	}
	for i, before := range topic.Partitions {
		after, _ := img.Partition("t", int32(i))
		if slices.Contains(after.ISR, victim) {
			t.Errorf("partition %d: fenced %d still in ISR %v", i, victim, after.ISR)
		}
		if before.Leader != victim {
			if after.Leader != before.Leader || after.LeaderEpoch != before.LeaderEpoch {
				t.Errorf("partition %d: leader %d/%d changed to %d/%d", i, before.Leader, before.LeaderEpoch, after.Leader, after.LeaderEpoch)
			}
			continue
		}
		// Every replica was in the ISR: the first one in assignment order
		// other than the victim takes over.
		want := before.Replicas[slices.IndexFunc(before.Replicas, func(r int32) bool { return r != victim })]
		if after.Leader != want || after.LeaderEpoch != before.LeaderEpoch+1 || after.PartitionEpoch != before.PartitionEpoch+1 {
			t.Errorf("partition %d (replicas %v): leader %d epochs %d/%d, want leader %d epochs %d/%d",
				i, before.Replicas, after.Leader, after.LeaderEpoch, after.PartitionEpoch, want, before.LeaderEpoch+1, before.PartitionEpoch+1)
		}
	}
	if err := checkInvariants(img); err != nil {
		t.Fatal(err)
	}
	// It comes back with a heartbeat of the same epoch: unfenced, same epoch.
	if err := c.nodes[victim].Heartbeat(ctx, victim, epoch); err != nil {
		t.Fatalf("heartbeat of the returning broker: %v", err)
	}
	b, _ := c.nodes[victim].Image().Broker(victim)
	if b.Fenced || b.Epoch != epoch {
		t.Fatalf("after heartbeat: %+v, want unfenced with epoch %d", b, epoch)
	}
	restart := c.nodes[victim].StartHeartbeats(BrokerRegistration{ID: victim, Host: "127.0.0.1", Port: 9000 + victim})
	t.Cleanup(restart)
	c.waitAll(ctx, "returned broker unfenced", brokersLive(1, 2, 3))
}

// With every ISR member fenced the leader is -1 and live replicas outside
// the ISR never lead; the last ISR member's return elects it.
func TestNoUncleanLeaderElection(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	c := newTestCluster(t, 3, testTiming)
	c.startAll()
	stops := c.heartbeatAll()
	c.waitAll(ctx, "brokers registered", brokersLive(1, 2, 3))
	leader := c.controller(ctx)
	topic, err := leader.CreateTopic(ctx, CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := topic.Partitions[0]
	shrunk, err := c.follower(ctx).AlterPartition(ctx, "t", 0, p.LeaderEpoch, p.PartitionEpoch, []int32{p.Leader})
	if err != nil {
		t.Fatalf("shrink ISR to the leader: %v", err)
	}
	if !slices.Equal(shrunk.ISR, []int32{p.Leader}) || shrunk.PartitionEpoch != p.PartitionEpoch+1 {
		t.Fatalf("shrunk: %+v", shrunk)
	}
	stops[p.Leader]()
	img, err := leader.WaitFor(ctx, func(img *Image) bool { b, _ := img.Broker(p.Leader); return b.Fenced })
	if err != nil {
		t.Fatal(err)
	}
	q, _ := img.Partition("t", 0)
	if q.Leader != -1 || !slices.Equal(q.ISR, []int32{p.Leader}) || q.LeaderEpoch != p.LeaderEpoch+1 {
		t.Fatalf("leaderless partition %+v, want ISR [%d] and leader epoch %d", q, p.Leader, p.LeaderEpoch+1)
	}
	// The other replicas keep heartbeating; wait past another session
	// timeout and check every image on the way: none of them ever leads.
	deadline := time.Now().Add(2 * c.timing.SessionTimeout)
	for img := leader.Image(); time.Now().Before(deadline); {
		if q, _ := img.Partition("t", 0); q.Leader != -1 {
			t.Fatalf("replica outside the ISR became leader: %+v", q)
		}
		select {
		case <-img.Changed():
			img = leader.Image()
		case <-time.After(time.Until(deadline)):
		}
	}
	if q, _ := leader.Image().Partition("t", 0); q.Leader != -1 {
		t.Fatalf("replica outside the ISR became leader: %+v", q)
	}
	restart := c.nodes[p.Leader].StartHeartbeats(BrokerRegistration{ID: p.Leader, Host: "127.0.0.1", Port: 9000 + p.Leader})
	t.Cleanup(restart)
	img, err = leader.WaitFor(ctx, func(img *Image) bool { q, _ := img.Partition("t", 0); return q.Leader == p.Leader })
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := img.Partition("t", 0); q.LeaderEpoch != p.LeaderEpoch+2 {
		t.Fatalf("re-elected with leader epoch %d, want %d", q.LeaderEpoch, p.LeaderEpoch+2)
	}
}

func TestAlterPartitionStaleEpochRejected(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 20*time.Second)
	c := newTestCluster(t, 3, testTiming)
	c.startAll()
	c.heartbeatAll()
	c.waitAll(ctx, "brokers registered", brokersLive(1, 2, 3))
	follower := c.follower(ctx)
	topic, err := follower.CreateTopic(ctx, CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := topic.Partitions[0]
	if _, err := follower.AlterPartition(ctx, "t", 0, p.LeaderEpoch+1, p.PartitionEpoch, p.ISR); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("wrong leader epoch: %v, want ErrFencedLeaderEpoch", err)
	}
	next, err := follower.AlterPartition(ctx, "t", 0, p.LeaderEpoch, p.PartitionEpoch, p.ISR[:2])
	if err != nil {
		t.Fatal(err)
	}
	// The same request again carries a partition epoch that is now stale.
	if _, err := follower.AlterPartition(ctx, "t", 0, p.LeaderEpoch, p.PartitionEpoch, p.ISR[:2]); !errors.Is(err, ErrInvalidUpdateVersion) {
		t.Fatalf("stale partition epoch: %v, want ErrInvalidUpdateVersion", err)
	}
	if _, err := follower.AlterPartition(ctx, "t", 0, next.LeaderEpoch, next.PartitionEpoch, p.ISR); err != nil {
		t.Fatalf("expand with current epochs: %v", err)
	}
}

// Closing all three nodes and opening them on their data dirs gives back
// the same image (from a snapshot on one node, from the log on the others).
func TestRestartKeepsState(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 40*time.Second)
	timing := testTiming
	timing.SessionTimeout = time.Minute // nobody heartbeats after the restart
	c := newTestCluster(t, 3, timing)
	c.startAll()
	stops := c.heartbeatAll()
	c.waitAll(ctx, "brokers registered", brokersLive(1, 2, 3))
	leader := c.controller(ctx)
	if _, err := leader.CreateTopic(ctx, CreateTopicRequest{Name: "a", Partitions: 2, ReplicationFactor: 3}); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[1].raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot on node 1: %v", err)
	}
	if _, err := leader.CreateTopic(ctx, CreateTopicRequest{Name: "b", Partitions: 1, ReplicationFactor: 2, Configs: map[string]string{"x": "y"}}); err != nil {
		t.Fatal(err)
	}
	for _, stop := range stops {
		stop()
	}
	want := leader.Image()
	c.waitAll(ctx, "the same image", func(img *Image) bool { return sameState(img, want) })
	for id := range c.voters {
		c.stop(id)
	}
	c.startAll()
	c.controller(ctx)
	c.waitAll(ctx, "the image from before the restart", func(img *Image) bool { return sameState(img, want) })
}

// A fourth node joins as a non-voter, receives the image, and can forward.
func TestNonVoterJoins(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	c := newTestCluster(t, 3, testTiming)
	c.addNode(4)
	for id := int32(1); id <= 3; id++ {
		c.start(id, []int32{1, 2, 3}) // the voters do not know node 4
	}
	c.heartbeatAll()
	c.waitAll(ctx, "brokers registered", brokersLive(1, 2, 3))
	leader := c.controller(ctx)
	if _, err := leader.CreateTopic(ctx, CreateTopicRequest{Name: "before-join", Partitions: 2, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	fourth := c.start(4, nil)
	if fourth.IsVoter() {
		t.Fatal("node 4 is a voter")
	}
	if _, err := fourth.WaitFor(ctx, func(img *Image) bool { _, ok := img.Topic("before-join"); return ok }); err != nil {
		t.Fatal(err)
	}
	f := leader.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	var suffrage []string
	for _, s := range f.Configuration().Servers {
		suffrage = append(suffrage, string(s.ID)+":"+s.Suffrage.String())
		if s.ID == "4" && s.Suffrage != raft.Nonvoter {
			t.Errorf("node 4 has suffrage %v", s.Suffrage)
		}
	}
	if len(suffrage) != 4 {
		t.Fatalf("configuration %v, want 3 voters and node 4", suffrage)
	}
	stop := fourth.StartHeartbeats(BrokerRegistration{ID: 4, Host: "127.0.0.1", Port: 9004})
	t.Cleanup(stop)
	if _, err := fourth.WaitFor(ctx, brokersLive(4)); err != nil {
		t.Fatal(err)
	}
	if _, err := fourth.CreateTopic(ctx, CreateTopicRequest{Name: "from-nonvoter", Partitions: 1, ReplicationFactor: 4}); err != nil {
		t.Fatalf("create through the non-voter: %v", err)
	}
	c.waitAll(ctx, "topic from the non-voter", func(img *Image) bool { _, ok := img.Topic("from-nonvoter"); return ok })
}

// Heartbeats for an unknown broker, or with a stale epoch, are rejected
// with sentinels the heartbeat loop acts on.
func TestHeartbeatRejections(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 20*time.Second)
	c := newTestCluster(t, 3, testTiming)
	c.startAll()
	follower := c.follower(ctx)
	if err := follower.Heartbeat(ctx, 42, 1); !errors.Is(err, ErrUnknownBroker) {
		t.Fatalf("unknown broker: %v", err)
	}
	epoch, err := follower.RegisterBroker(ctx, BrokerRegistration{ID: 42, Host: "127.0.0.1", Port: 9042})
	if err != nil {
		t.Fatal(err)
	}
	if err := follower.Heartbeat(ctx, 42, epoch-1); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	if err := follower.Heartbeat(ctx, 42, epoch); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	if _, err := follower.RegisterBroker(ctx, BrokerRegistration{ID: 43}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("registration without host: %v", err)
	}
	shortCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	for id := range c.voters {
		c.stop(id)
	}
	if _, err := follower.CreateTopic(shortCtx, CreateTopicRequest{Name: "x", Partitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("request on a closed node: %v", err)
	}
}

// A node that becomes controller again starts every broker's session anew:
// the heartbeats it saw in its earlier term (older than SessionTimeout by
// now) must not fence brokers that kept heartbeating to the other
// controller meanwhile.
func TestNewControllerResetsSessions(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	c := newTestCluster(t, 3, testTiming)
	c.startAll()
	c.heartbeatAll()
	c.waitAll(ctx, "brokers registered", brokersLive(1, 2, 3))
	first := c.controller(ctx)
	if _, err := first.CreateTopic(ctx, CreateTopicRequest{Name: "t", Partitions: 3, ReplicationFactor: 3}); err != nil {
		t.Fatal(err)
	}
	second := c.follower(ctx)
	transfer := func(from, to *Node) {
		t.Helper()
		addr := raft.ServerAddress(c.voters[to.ID()].Raft)
		if err := from.raft.LeadershipTransferToServer(serverID(to.ID()), addr).Error(); err != nil {
			t.Fatalf("transfer %d -> %d: %v", from.ID(), to.ID(), err)
		}
		testutil.UntilContext(t, ctx, "the new controller active", to.IsController)
	}
	transfer(first, second)
	// Let first's memory of the heartbeats expire while second is in charge.
	expired := time.Now().Add(c.timing.SessionTimeout + 100*time.Millisecond)
	testutil.UntilContext(t, ctx, "a session timeout under the second controller", func() bool { return time.Now().After(expired) })
	before := second.Image()
	transfer(second, first)
	settled := time.Now().Add(c.timing.SessionTimeout / 2)
	testutil.UntilContext(t, ctx, "half a session under the first controller again", func() bool { return time.Now().After(settled) })
	after := first.Image()
	for _, b := range after.Brokers() {
		if b.Fenced {
			t.Errorf("broker %d fenced by the returning controller", b.ID)
		}
	}
	for i := range int32(3) {
		pb, _ := before.Partition("t", i)
		pa, _ := after.Partition("t", i)
		if pa.PartitionEpoch != pb.PartitionEpoch {
			t.Errorf("partition %d: partition epoch %d -> %d: a broker was fenced and came back", i, pb.PartitionEpoch, pa.PartitionEpoch)
		}
	}
}
