package quorum

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func (m *machine) allocate(id int32, floor int64) int64 {
	m.t.Helper()
	b, ok := m.img.Broker(id)
	if !ok {
		m.t.Fatalf("broker %d not registered", id)
	}
	return m.must(allocatePIDsCmd{BrokerID: id, BrokerEpoch: b.Epoch, Floor: floor}).pidStart
}

// blockSet records producer-id blocks and fails on the first overlap.
type blockSet struct {
	t      testing.TB
	starts []int64 // sorted
}

func (s *blockSet) add(what string, start int64) {
	s.t.Helper()
	if start < 0 || start%ProducerIDBlockSize != 0 {
		s.t.Fatalf("%s: block start %d is not a whole block", what, start)
	}
	i, found := slices.BinarySearch(s.starts, start)
	if found || i > 0 && s.starts[i-1]+ProducerIDBlockSize > start || i < len(s.starts) && start+ProducerIDBlockSize > s.starts[i] {
		s.t.Fatalf("%s: block [%d, %d) overlaps one handed out before (%d blocks so far)", what, start, start+ProducerIDBlockSize, len(s.starts))
	}
	s.starts = slices.Insert(s.starts, i, start)
}

func (s *blockSet) end() int64 {
	if len(s.starts) == 0 {
		return 0
	}
	return s.starts[len(s.starts)-1] + ProducerIDBlockSize
}

// Blocks are whole, disjoint and increasing, whichever broker asks; with
// brokers outside the earlier scheme's ids (no stripes to skip) they are
// consecutive from 0.
func TestProducerIDBlocksDisjointAndIncreasing(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1024, 1025, 5000)
	blocks := &blockSet{t: t}
	var last int64 = -1
	for i := range 30 {
		id := []int32{1024, 1025, 5000}[i%3]
		start := m.allocate(id, 0)
		if start != int64(i)*ProducerIDBlockSize {
			t.Fatalf("allocation %d by broker %d: start %d, want %d", i, id, start, int64(i)*ProducerIDBlockSize)
		}
		if start <= last {
			t.Fatalf("allocation %d: start %d not above the last %d", i, start, last)
		}
		last = start
		blocks.add(fmt.Sprintf("allocation %d", i), start)
		if m.img.NextProducerID() != start+ProducerIDBlockSize {
			t.Fatalf("next %d after block %d", m.img.NextProducerID(), start)
		}
	}
	// Brokers 1 and 2 (ids of the earlier scheme's stripes) registered and
	// silent: their stripes are skipped; each one's first request reports
	// it, and its stripe is used again.
	m.register(1, 2)
	for i := range 2 * legacyStripes {
		start := m.allocate(1024, 0)
		blocks.add(fmt.Sprintf("broker 1024, allocation %d", i), start)
		if stripe := start / ProducerIDBlockSize % legacyStripes; stripe == 1 || stripe == 2 {
			t.Fatalf("block %d is in the stripe of broker %d, which has not reported", start, stripe)
		}
	}
	m.allocate(1, 0)
	m.allocate(2, 0)
	before := m.img.NextProducerID()
	for i := range legacyStripes {
		if start := m.allocate(1025, 0); start != before+int64(i)*ProducerIDBlockSize {
			t.Fatalf("after every broker reported: start %d, want %d", start, before+int64(i)*ProducerIDBlockSize)
		}
	}
}

func TestProducerIDAllocationRejections(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1)
	old, _ := m.img.Broker(1)
	m.register(1) // the broker restarted: a new epoch
	cur, _ := m.img.Broker(1)
	for _, tc := range []struct {
		name string
		cmd  allocatePIDsCmd
		want error
	}{
		{"stale epoch", allocatePIDsCmd{BrokerID: 1, BrokerEpoch: old.Epoch}, ErrStaleBrokerEpoch},
		{"future epoch", allocatePIDsCmd{BrokerID: 1, BrokerEpoch: cur.Epoch + 1}, ErrStaleBrokerEpoch},
		{"unknown broker", allocatePIDsCmd{BrokerID: 2, BrokerEpoch: cur.Epoch}, ErrUnknownBroker},
		{"negative floor", allocatePIDsCmd{BrokerID: 1, BrokerEpoch: cur.Epoch, Floor: -1}, ErrInvalidRequest},
		{"floor at the end of the id space", allocatePIDsCmd{BrokerID: 1, BrokerEpoch: cur.Epoch, Floor: math.MaxInt64 - 10}, ErrProducerIDsExhausted},
		{"no whole block left", allocatePIDsCmd{BrokerID: 1, BrokerEpoch: cur.Epoch, Floor: math.MaxInt64 / ProducerIDBlockSize * ProducerIDBlockSize}, ErrProducerIDsExhausted},
	} {
		before := m.img
		if res := m.apply(tc.cmd); !errors.Is(res.err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, res.err, tc.want)
		}
		if m.img != before {
			t.Errorf("%s: a rejected allocation changed the image", tc.name)
		}
	}
	if start := m.allocate(1, 0); start != 0 {
		t.Fatalf("first block after the rejections starts at %d, want 0", start)
	}
	// The last whole block below MaxInt64 is still handed out.
	last := int64(math.MaxInt64/ProducerIDBlockSize-1) * ProducerIDBlockSize
	if start := m.allocate(1, last-5); start != last {
		t.Fatalf("block at the end: %d, want %d", start, last)
	}
	b, _ := m.img.Broker(1)
	if res := m.apply(allocatePIDsCmd{BrokerID: 1, BrokerEpoch: b.Epoch}); !errors.Is(res.err, ErrProducerIDsExhausted) {
		t.Fatalf("after the last block: %v", res.err)
	}
}

// A floor moves next up to it (a whole block), never down.
func TestProducerIDFloor(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(2000, 2001)
	if start := m.allocate(2000, 4_500_001); start != 4_501_000 {
		t.Fatalf("floor 4500001: start %d, want 4501000", start)
	}
	if start := m.allocate(2001, 17); start != 4_502_000 {
		t.Fatalf("floor below next: start %d, want 4502000", start)
	}
	if start := m.allocate(2001, 9_000_000); start != 9_000_000 {
		t.Fatalf("floor 9000000: start %d", start)
	}
}

// legacyBlocks are the global blocks the earlier scheme gave broker n from
// a producer-ids file whose end is localEnd (blocks of 1000, striped by
// 1024), as stridedReserver computed them.
func legacyBlocks(n int32, localEnd int64) []int64 {
	var out []int64
	for s := int64(0); s < localEnd; s += ProducerIDBlockSize {
		out = append(out, s*legacyStripes+int64(n)*ProducerIDBlockSize)
	}
	return out
}

// Migration: brokers that handed out ids from their own producer-ids
// files (striped by node id) move to quorum blocks in every order; the
// quorum never hands out an id one of them handed out before, whichever
// broker asks first and however different their files' ends are.
func TestProducerIDBlocksAvoidLegacyStripes(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		m := newMachine(t)
		ends := map[int32]int64{}
		legacy := map[int64]int32{} // block start -> broker
		for _, id := range []int32{0, 1, 2, 3, 1023} {
			m.register(id)
			ends[id] = int64(r.IntN(40)) * ProducerIDBlockSize
			for _, start := range legacyBlocks(id, ends[id]) {
				legacy[start] = id
			}
		}
		m.register(1024, 4000) // brokers of this version only
		ids := slices.Sorted(maps.Keys(ends))
		ids = append(ids, 1024, 4000)
		for step := range 400 {
			id := ids[r.IntN(len(ids))]
			floor, err := LegacyProducerIDFloor(ends[id])
			if err != nil {
				t.Fatal(err)
			}
			start := m.allocate(id, floor)
			if owner, taken := legacy[start]; taken {
				t.Fatalf("seed %d step %d: broker %d got block %d, which broker %d handed out from its file (ends %v)", seed, step, id, start, owner, ends)
			}
			if start < floor {
				t.Fatalf("seed %d step %d: broker %d got block %d below its floor %d", seed, step, id, start, floor)
			}
		}
	}
}

// The producer-id allocation survives a snapshot; a snapshot of the
// format of before (version 1) reads with next 0 and nobody reported; a
// later format is refused.
func TestProducerIDSnapshot(t *testing.T) {
	t.Parallel()
	f := newFSM(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var index uint64
	apply := func(cmd any) applyResult {
		t.Helper()
		data, err := encodeCommand(cmd)
		if err != nil {
			t.Fatal(err)
		}
		index++
		res := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data}).(applyResult)
		if res.err != nil {
			t.Fatalf("%+v: %v", cmd, res.err)
		}
		return res
	}
	epoch := apply(registerBrokerCmd{ID: 3, Host: "h", Port: 1}).epoch
	apply(registerBrokerCmd{ID: 4, Host: "h", Port: 1})
	apply(allocatePIDsCmd{BrokerID: 3, BrokerEpoch: epoch, Floor: 7_000_000})
	g := snapshotRoundTrip(t, f)
	if g.current().NextProducerID() != 7_001_000 || !g.current().producerIDs.reported[3] || len(g.current().producerIDs.reported) != 1 {
		t.Fatalf("restored producer ids: next %d, reported %v", g.current().NextProducerID(), g.current().producerIDs.reported)
	}
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, f.current()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"next_producer_id":7001000`) || !strings.Contains(buf.String(), `"producer_id_brokers":[3]`) {
		t.Fatalf("snapshot: %s", buf.String())
	}

	old := `{"v":1,"index":9,"cursor":2,"brokers":[{"ID":3,"Host":"h","Port":1,"Rack":"","Epoch":5,"Fenced":false}],"topics":[]}`
	img, err := readSnapshot(strings.NewReader(old))
	if err != nil {
		t.Fatalf("version 1 snapshot: %v", err)
	}
	if img.NextProducerID() != 0 || len(img.producerIDs.reported) != 0 || img.Index() != 9 {
		t.Fatalf("version 1 snapshot: next %d, reported %v, index %d", img.NextProducerID(), img.producerIDs.reported, img.Index())
	}
	if _, err := readSnapshot(strings.NewReader(strings.Replace(old, `"v":1`, `"v":4`, 1))); err == nil {
		t.Fatal("a version 4 snapshot was read")
	}
}

// Property: random commands mixed with allocations from random brokers
// (some with stale epochs) and snapshot round trips: blocks never overlap,
// and a restored machine evolves exactly like the original.
func TestProducerIDSnapshotRestoreProperty(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 13))
		a := newFSM(slog.New(slog.NewTextHandler(io.Discard, nil)))
		var b *fsm
		var index uint64
		blocks := &blockSet{t: t}
		for step := range 300 {
			var cmd any
			if r.IntN(2) == 0 {
				cmd = randomCommand(r, a.current())
			} else {
				id := int32(r.IntN(5))
				epoch := int64(r.IntN(int(index) + 1))
				if br, ok := a.current().Broker(id); ok && r.IntN(4) > 0 {
					epoch = br.Epoch
				}
				cmd = allocatePIDsCmd{BrokerID: id, BrokerEpoch: epoch, Floor: int64(r.IntN(3)) * int64(r.IntN(5_000_000))}
			}
			data, err := encodeCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			index++
			entry := &raft.Log{Index: index, Type: raft.LogCommand, Data: data}
			resA := a.Apply(entry).(applyResult)
			if c, ok := cmd.(allocatePIDsCmd); ok && resA.err == nil {
				blocks.add(fmt.Sprintf("seed %d step %d", seed, step), resA.pidStart)
				if resA.pidStart < c.Floor || a.current().NextProducerID() != blocks.end() {
					t.Fatalf("seed %d step %d: block %d, floor %d, next %d, end %d", seed, step, resA.pidStart, c.Floor, a.current().NextProducerID(), blocks.end())
				}
			}
			if b != nil {
				resB := b.Apply(entry).(applyResult)
				if (resA.err == nil) != (resB.err == nil) || resA.pidStart != resB.pidStart || !sameState(a.current(), b.current()) {
					t.Fatalf("seed %d step %d: restored machine diverged after %+v", seed, step, cmd)
				}
			}
			if step%60 == 30 {
				b = snapshotRoundTrip(t, a)
			}
		}
		if len(blocks.starts) == 0 {
			t.Fatalf("seed %d: no allocation succeeded", seed)
		}
	}
}

// Property over a running quorum of three: random broker registrations
// (joins, and restarts with a new epoch), allocations from random brokers
// through random nodes (some with a stale epoch, some with a floor),
// controller failovers, node restarts from their data directories and
// snapshots. No two blocks ever overlap, each is at or above its floor,
// and after every node restarts from its data directory the next block
// is above all of them.
func TestProducerIDBlocksAcrossFailoversProperty(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			runProducerIDClusterProperty(t, seed, 45)
		})
	}
}

func runProducerIDClusterProperty(t *testing.T, seed uint64, steps int) {
	ctx := testContext(t, 3*time.Minute)
	r := rand.New(rand.NewPCG(seed, 17))
	timing := testTiming
	timing.SessionTimeout = time.Minute // brokers here register but do not heartbeat
	c := newTestCluster(t, 3, timing)
	c.startAll()
	c.controller(ctx)
	epochs := map[int32]int64{} // broker -> current epoch
	var stale []int32           // brokers with a stale epoch recorded
	staleEpoch := map[int32]int64{}
	blocks := &blockSet{t: t}
	var stopped []int32 // nodes down
	running := func() []int32 { return slices.Sorted(maps.Keys(c.nodes)) }
	anyNode := func() *Node { ids := running(); return c.nodes[ids[r.IntN(len(ids))]] }
	pool := []int32{1, 2, 3, 7, 1500}
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\nsteps:\n%s", seed, fmt.Sprintf(format, args...), strings.Join(log, "\n"))
	}
	allocate := func(what string, n *Node, id int32, epoch, floor int64) {
		t.Helper()
		start, err := n.AllocateProducerIDs(ctx, id, epoch, floor)
		if err != nil {
			fail("%s: %v", what, err)
		}
		if start < blocks.end() {
			fail("%s: block %d below the end %d of the blocks before", what, start, blocks.end())
		}
		if start < floor {
			fail("%s: block %d below the floor %d", what, start, floor)
		}
		blocks.add(what, start)
	}
	for step := range steps {
		op := r.IntN(20)
		switch {
		case op < 4 || len(epochs) == 0: // a broker joins or restarts
			id := pool[r.IntN(len(pool))]
			n := anyNode()
			epoch, err := n.RegisterBroker(ctx, BrokerRegistration{ID: id, Host: "127.0.0.1", Port: 9000 + id})
			if err != nil {
				fail("register %d: %v", id, err)
			}
			if old, ok := epochs[id]; ok {
				stale = append(stale, id)
				staleEpoch[id] = old
			}
			epochs[id] = epoch
			log = append(log, fmt.Sprintf("%d: register broker %d on node %d: epoch %d", step, id, n.ID(), epoch))
		case op < 12: // an allocation
			ids := slices.Sorted(maps.Keys(epochs))
			id := ids[r.IntN(len(ids))]
			var floor int64
			if r.IntN(6) == 0 {
				floor = blocks.end() + int64(r.IntN(5_000_000))
			}
			n := anyNode()
			what := fmt.Sprintf("%d: allocate for broker %d epoch %d floor %d on node %d", step, id, epochs[id], floor, n.ID())
			log = append(log, what)
			allocate(what, n, id, epochs[id], floor)
		case op < 13 && len(stale) > 0: // an allocation with a stale epoch
			id := stale[r.IntN(len(stale))]
			n := anyNode()
			log = append(log, fmt.Sprintf("%d: allocate for broker %d with stale epoch %d on node %d", step, id, staleEpoch[id], n.ID()))
			if _, err := n.AllocateProducerIDs(ctx, id, staleEpoch[id], 0); !errors.Is(err, ErrStaleBrokerEpoch) {
				fail("stale epoch %d of broker %d: %v, want ErrStaleBrokerEpoch", staleEpoch[id], id, err)
			}
		case op < 15 && len(stopped) == 0: // controller failover
			leader := c.controller(ctx)
			log = append(log, fmt.Sprintf("%d: stop the controller, node %d", step, leader.ID()))
			c.stop(leader.ID())
			stopped = append(stopped, leader.ID())
		case op < 17 && len(stopped) > 0: // the stopped node returns over its data directory
			id := stopped[0]
			stopped = stopped[1:]
			log = append(log, fmt.Sprintf("%d: restart node %d", step, id))
			c.start(id, nil)
		case op < 18 && len(stopped) == 0: // a node restarts over its data directory
			n := anyNode()
			log = append(log, fmt.Sprintf("%d: restart node %d", step, n.ID()))
			c.stop(n.ID())
			c.start(n.ID(), nil)
		default: // a snapshot (the log before it compacted away later)
			n := anyNode()
			log = append(log, fmt.Sprintf("%d: snapshot on node %d", step, n.ID()))
			if err := n.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
				fail("snapshot on node %d: %v", n.ID(), err)
			}
		}
	}
	for _, id := range stopped {
		c.start(id, nil)
	}
	end := blocks.end()
	// A node that lost the allocation (a snapshot without it, say) never
	// gets there: a bounded wait, not the test's.
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c.waitAll(waitCtx, "next past every block", func(img *Image) bool { return img.NextProducerID() >= end })
	// Every node restarts from its data directory (a snapshot on some, the
	// log on the others): the allocation is where it was.
	for _, n := range c.nodes {
		if err := n.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			t.Fatal(err)
		}
		break
	}
	for _, id := range running() {
		c.stop(id)
	}
	c.startAll()
	c.controller(ctx)
	waitCtx, cancel = context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c.waitAll(waitCtx, "next past every block after the restart", func(img *Image) bool { return img.NextProducerID() >= end })
	for id, epoch := range epochs {
		allocate(fmt.Sprintf("after the restart, broker %d", id), anyNode(), id, epoch, 0)
	}
	if len(blocks.starts) < 5 {
		t.Fatalf("seed %d: only %d blocks handed out", seed, len(blocks.starts))
	}
}
