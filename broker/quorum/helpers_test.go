package quorum

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// testCluster runs quorum nodes in-process on loopback.
type testCluster struct {
	t      *testing.T
	voters map[int32]VoterAddrs // every node's addresses
	dirs   map[int32]string
	nodes  map[int32]*Node // running nodes
	timing Config          // HeartbeatInterval, SessionTimeout, ElectionTimeout
}

// testTiming is fast enough for tests and slow enough for -race on two
// busy cores.
var testTiming = Config{
	HeartbeatInterval: 50 * time.Millisecond,
	SessionTimeout:    600 * time.Millisecond,
	ElectionTimeout:   400 * time.Millisecond,
}

// newTestCluster makes (does not start) a cluster of nodes 1..n.
func newTestCluster(t *testing.T, n int, timing Config) *testCluster {
	c := &testCluster{t: t, voters: map[int32]VoterAddrs{}, dirs: map[int32]string{}, nodes: map[int32]*Node{}, timing: timing}
	for id := int32(1); id <= int32(n); id++ {
		c.addNode(id)
	}
	t.Cleanup(func() {
		for id := range c.nodes {
			c.stop(id)
		}
	})
	return c
}

func (c *testCluster) addNode(id int32) {
	addrs := testutil.FreeAddrs(c.t, 2)
	c.voters[id] = VoterAddrs{Raft: addrs[0], RPC: addrs[1]}
	c.dirs[id] = c.t.TempDir()
}

// start opens node id with a Voters map of the nodes in known (all if nil).
func (c *testCluster) start(id int32, known []int32) *Node {
	c.t.Helper()
	voters := map[int32]VoterAddrs{}
	for vid, a := range c.voters {
		if known == nil || slices.Contains(known, vid) {
			voters[vid] = a
		}
	}
	cfg := c.timing
	cfg.NodeID, cfg.Voters, cfg.DataDir = id, voters, c.dirs[id]
	n, err := Open(cfg)
	if err != nil {
		c.t.Fatalf("open node %d: %v", id, err)
	}
	c.nodes[id] = n
	return n
}

func (c *testCluster) startAll() {
	for id := range c.voters {
		c.start(id, nil)
	}
}

func (c *testCluster) stop(id int32) {
	c.t.Helper()
	n, ok := c.nodes[id]
	if !ok {
		return
	}
	delete(c.nodes, id)
	if err := n.Close(); err != nil {
		c.t.Errorf("close node %d: %v", id, err)
	}
}

// controller waits for an active controller among the running nodes.
func (c *testCluster) controller(ctx context.Context) *Node {
	c.t.Helper()
	var found *Node
	testutil.UntilContext(c.t, ctx, "an active controller", func() bool {
		for _, n := range c.nodes {
			if n.IsController() {
				found = n
				return true
			}
		}
		return false
	})
	return found
}

// follower returns a running voter that is not the active controller.
func (c *testCluster) follower(ctx context.Context) *Node {
	c.t.Helper()
	leader := c.controller(ctx)
	for _, n := range c.nodes {
		if n != leader && n.IsVoter() {
			return n
		}
	}
	c.t.Fatal("no follower running")
	return nil
}

// heartbeatAll registers broker id on node id for every running node and
// returns the stop functions by id.
func (c *testCluster) heartbeatAll() map[int32]func() {
	stops := map[int32]func(){}
	for id, n := range c.nodes {
		stops[id] = n.StartHeartbeats(BrokerRegistration{ID: id, Host: "127.0.0.1", Port: 9000 + id})
	}
	c.t.Cleanup(func() {
		for _, stop := range stops {
			stop()
		}
	})
	return stops
}

// waitAll waits until cond holds on every running node's image.
func (c *testCluster) waitAll(ctx context.Context, what string, cond func(*Image) bool) {
	c.t.Helper()
	for id, n := range c.nodes {
		if _, err := n.WaitFor(ctx, cond); err != nil {
			c.t.Fatalf("node %d: %s: %v", id, what, err)
		}
	}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// brokersLive reports whether the image has the given brokers, unfenced.
func brokersLive(ids ...int32) func(*Image) bool {
	return func(img *Image) bool {
		for _, id := range ids {
			if b, ok := img.Broker(id); !ok || b.Fenced {
				return false
			}
		}
		return true
	}
}

// checkInvariants returns the first violated invariant of Partition's doc
// in img, or nil.
func checkInvariants(img *Image) error {
	for _, p := range img.Partitions() {
		if len(p.Replicas) == 0 || len(p.ISR) == 0 {
			return fmt.Errorf("%s-%d: empty replicas %v or ISR %v", p.Topic, p.Partition, p.Replicas, p.ISR)
		}
		for i, r := range p.Replicas {
			if slices.Contains(p.Replicas[:i], r) {
				return fmt.Errorf("%s-%d: replica %d twice in %v", p.Topic, p.Partition, r, p.Replicas)
			}
		}
		for _, r := range p.AddingReplicas {
			if !slices.Contains(p.Replicas, r) || slices.Contains(p.RemovingReplicas, r) {
				return fmt.Errorf("%s-%d: adding %v, removing %v, replicas %v", p.Topic, p.Partition, p.AddingReplicas, p.RemovingReplicas, p.Replicas)
			}
		}
		target := p.TargetReplicas()
		if len(target) == 0 || !slices.Equal(p.Replicas[:len(target)], target) {
			return fmt.Errorf("%s-%d: replicas %v do not start with the target %v (removing %v)", p.Topic, p.Partition, p.Replicas, target, p.RemovingReplicas)
		}
		if p.Reassigning() && !slices.ContainsFunc(target, func(r int32) bool { return !slices.Contains(p.ISR, r) }) {
			return fmt.Errorf("%s-%d: every target replica %v is in the ISR %v but the reassignment did not complete", p.Topic, p.Partition, target, p.ISR)
		}
		last := -1
		for _, r := range p.ISR {
			i := slices.Index(p.Replicas, r)
			if i <= last {
				return fmt.Errorf("%s-%d: ISR %v not an ordered subset of replicas %v", p.Topic, p.Partition, p.ISR, p.Replicas)
			}
			last = i
		}
		if p.Leader >= 0 {
			if !slices.Contains(p.ISR, p.Leader) {
				return fmt.Errorf("%s-%d: leader %d not in ISR %v", p.Topic, p.Partition, p.Leader, p.ISR)
			}
			for _, r := range p.ISR {
				if b, _ := img.Broker(r); b.Fenced {
					return fmt.Errorf("%s-%d: fenced %d in ISR %v with leader %d", p.Topic, p.Partition, r, p.ISR, p.Leader)
				}
			}
			continue
		}
		if p.Leader != -1 || len(p.ISR) != 1 {
			return fmt.Errorf("%s-%d: leader %d with ISR %v", p.Topic, p.Partition, p.Leader, p.ISR)
		}
		if b, _ := img.Broker(p.ISR[0]); !b.Fenced {
			return fmt.Errorf("%s-%d: leaderless with unfenced ISR member %d", p.Topic, p.Partition, p.ISR[0])
		}
	}
	return nil
}
