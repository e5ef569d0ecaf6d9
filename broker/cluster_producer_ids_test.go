package broker

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// producerIDMembers is a cluster of members with a real quorum, started
// and restarted over their data directories.
type producerIDMembers struct {
	t       *testing.T
	root    string
	voters  map[int32]quorum.VoterAddrs
	listen  map[int32]string
	members map[int32]*Broker
}

func newProducerIDMembers(t *testing.T, n int32) *producerIDMembers {
	c := &producerIDMembers{t: t, root: t.TempDir(), voters: map[int32]quorum.VoterAddrs{}, listen: map[int32]string{}, members: map[int32]*Broker{}}
	for id := int32(1); id <= n; id++ {
		addrs := testutil.FreeAddrs(t, 3)
		c.voters[id] = quorum.VoterAddrs{Raft: addrs[0], RPC: addrs[1]}
		c.listen[id] = addrs[2]
	}
	if n == 1 {
		c.voters = nil // a cluster of one
	}
	t.Cleanup(func() {
		for _, b := range c.members {
			b.Close()
		}
	})
	return c
}

func (c *producerIDMembers) dir(id int32) string {
	return filepath.Join(c.root, strconv.Itoa(int(id)))
}

func (c *producerIDMembers) start(id int32) *Broker {
	c.t.Helper()
	b, err := Start(context.Background(), Config{NodeID: id, Listen: c.listen[id], DataDir: c.dir(id),
		Logger: slog.New(slog.DiscardHandler), Quorum: &QuorumConfig{Voters: c.voters,
			HeartbeatInterval: 50 * time.Millisecond, SessionTimeout: 800 * time.Millisecond, ElectionTimeout: 400 * time.Millisecond}})
	if err != nil {
		c.t.Fatalf("start member %d: %v", id, err)
	}
	c.members[id] = b
	return b
}

func (c *producerIDMembers) stop(id int32) {
	c.t.Helper()
	if err := c.members[id].Close(); err != nil {
		c.t.Fatalf("close member %d: %v", id, err)
	}
	delete(c.members, id)
}

// waitRegistered waits until every running member's image has every
// running member registered and unfenced.
func (c *producerIDMembers) waitRegistered(ctx context.Context) {
	c.t.Helper()
	for id, b := range c.members {
		_, err := b.QuorumNode().WaitFor(ctx, func(img *quorum.Image) bool {
			for other := range c.members {
				if br, ok := img.Broker(other); !ok || br.Fenced {
					return false
				}
			}
			return true
		})
		if err != nil {
			c.t.Fatalf("member %d: waiting for the registrations: %v", id, err)
		}
	}
}

// initProducerIDs asks broker b for n producer ids (InitProducerId without
// a transactional id, over a raw connection) and records them in seen,
// failing on an id seen before.
func initProducerIDs(t *testing.T, b *Broker, n int, seen map[int64]int32) []int64 {
	t.Helper()
	var ids []int64
	var r *rawConnection
	for i := range n {
		if i%200 == 0 { // a raw connection has a deadline of 10 s
			r = dialRaw(t, b)
		}
		id := r.initProducerID(4)
		if other, dup := seen[id]; dup {
			t.Fatalf("broker %d handed out producer id %d, which broker %d handed out before", b.nodeID, id, other)
		}
		seen[id] = b.nodeID
		ids = append(ids, id)
	}
	return ids
}

// Producers on different brokers of a three-broker cluster get distinct
// ids, across block boundaries (one broker hands out more than a block,
// which makes it ask for its next block in the background) and across a
// broker's restart over its data directory.
func TestProducerIDsDistinctAcrossMembers(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 2*time.Minute)
	c := newProducerIDMembers(t, 3)
	for id := int32(1); id <= 3; id++ {
		c.start(id)
	}
	c.waitRegistered(ctx)
	seen := map[int64]int32{}
	for round := range 3 {
		for id := int32(1); id <= 3; id++ {
			n := 20
			if id == 2 && round == 1 {
				n = 1100
			}
			initProducerIDs(t, c.members[id], n, seen)
		}
	}
	// Broker 2 restarts: the rest of its block is skipped, never reused,
	// and its new blocks are none of the others'.
	c.stop(2)
	initProducerIDs(t, c.members[1], 20, seen)
	c.start(2)
	c.waitRegistered(ctx)
	for id := int32(1); id <= 3; id++ {
		initProducerIDs(t, c.members[id], 30, seen)
	}
	// Every id came from a block the quorum handed out: once member 1
	// has applied every allocation (its image may trail the brokers that
	// asked), the quorum's next id is above each.
	highest := int64(-1)
	for id := range seen {
		highest = max(highest, id)
	}
	img, err := c.members[1].QuorumNode().WaitFor(ctx, func(img *quorum.Image) bool { return img.NextProducerID() > highest })
	if err != nil {
		t.Fatalf("member 1's quorum image never passed producer id %d: %v", highest, err)
	}
	for id, broker := range seen {
		if id < 0 {
			t.Fatalf("broker %d handed out %d", broker, id)
		}
	}
	t.Logf("%d ids handed out, the quorum's next is %d", len(seen), img.NextProducerID())
}

// writeLegacyProducerIDsFile writes the producer-ids file a broker of the
// earlier, file-based scheme left in member dir: every local id below end
// reserved.
func writeLegacyProducerIDsFile(t *testing.T, dir string, end int64) {
	t.Helper()
	if end == 0 {
		return
	}
	if err := os.MkdirAll(filepath.Join(dir, brokerDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	reserver, err := producers.OpenFileBlockReserver(nil, filepath.Join(dir, brokerDirName, producerIDsFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reserver.ReserveBlock(context.Background(), end); err != nil {
		t.Fatal(err)
	}
}

// legacyMax is one past the highest id the earlier scheme could have
// handed out to broker n from a producer-ids file ending at end: its
// local blocks [s, s+1000) became [s*1024 + n*1000, ...+1000).
func legacyMax(n int32, end int64) int64 {
	if end == 0 {
		return 0
	}
	return (end-producerIDBlockSize)*1024 + int64(n)*producerIDBlockSize + producerIDBlockSize
}

// legacyOwner returns the broker whose producer-ids file (ends by broker)
// handed out id under the earlier scheme, or -1.
func legacyOwner(id int64, ends map[int32]int64) int32 {
	block := id / producerIDBlockSize
	n := int32(block % 1024)
	if end, ok := ends[n]; ok && id < legacyMax(n, end) {
		return n
	}
	return -1
}

// Migration: a member whose data directory has the producer-ids file of
// the earlier scheme never hands out an id that file let it hand out,
// alone (a cluster of one) or in a cluster whose brokers' files end at
// very different points, whichever broker asks first; and not after a
// restart either.
func TestProducerIDsMigrateFromFile(t *testing.T) {
	t.Parallel()
	t.Run("alone", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t, time.Minute)
		c := newProducerIDMembers(t, 1)
		const end = 37 * producerIDBlockSize
		writeLegacyProducerIDsFile(t, c.dir(1), end)
		floor := legacyMax(1, end)
		c.start(1)
		c.waitRegistered(ctx)
		seen := map[int64]int32{}
		check := func(ids []int64) {
			t.Helper()
			for _, id := range ids {
				if id < floor {
					t.Fatalf("producer id %d, below %d, which the producer-ids file could have handed out", id, floor)
				}
			}
		}
		check(initProducerIDs(t, c.members[1], 10, seen))
		c.stop(1)
		c.start(1)
		c.waitRegistered(ctx)
		check(initProducerIDs(t, c.members[1], 10, seen))
	})
	t.Run("three", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t, 2*time.Minute)
		c := newProducerIDMembers(t, 3)
		// Broker 1's file is short, broker 2's long: broker 1's floor
		// alone would hand out ids of broker 2's stripe.
		ends := map[int32]int64{1: 2 * producerIDBlockSize, 2: 40 * producerIDBlockSize, 3: 0}
		for id, end := range ends {
			writeLegacyProducerIDsFile(t, c.dir(id), end)
		}
		for id := int32(1); id <= 3; id++ {
			c.start(id)
		}
		c.waitRegistered(ctx)
		seen := map[int64]int32{}
		check := func(ids []int64) {
			t.Helper()
			for _, id := range ids {
				if owner := legacyOwner(id, ends); owner >= 0 {
					t.Fatalf("producer id %d was handed out by broker %d from its producer-ids file (file ends %v)", id, owner, ends)
				}
			}
		}
		// Broker 1 (short file) and broker 3 (none) take ids, through
		// more than a block each, before broker 2 asks.
		check(initProducerIDs(t, c.members[1], 1100, seen))
		check(initProducerIDs(t, c.members[3], 1100, seen))
		check(initProducerIDs(t, c.members[2], 10, seen))
		c.stop(2)
		c.start(2)
		c.waitRegistered(ctx)
		for id := int32(1); id <= 3; id++ {
			check(initProducerIDs(t, c.members[id], 10, seen))
		}
		for id, broker := range seen {
			if owner := legacyOwner(id, ends); owner >= 0 {
				t.Fatalf("broker %d handed out %d, which broker %d handed out from its file", broker, id, owner)
			}
		}
	})
}
