package quorum

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
)

// machine drives the pure transition function like raft would, one log
// index per command.
type machine struct {
	t     testing.TB
	img   *Image
	index uint64
}

func newMachine(t testing.TB) *machine { return &machine{t: t, img: emptyImage()} }

func (m *machine) apply(cmd any) applyResult {
	m.index++
	next, res := applyCommand(m.img, m.index, cmd)
	if next != nil {
		m.img = next
	}
	return res
}

func (m *machine) must(cmd any) applyResult {
	m.t.Helper()
	res := m.apply(cmd)
	if res.err != nil {
		m.t.Fatalf("%T: %v", cmd, res.err)
	}
	if err := checkInvariants(m.img); err != nil {
		m.t.Fatalf("after %T: %v", cmd, err)
	}
	return res
}

func (m *machine) register(ids ...int32) {
	for _, id := range ids {
		m.must(registerBrokerCmd{ID: id, Host: "h", Port: 9000 + id})
	}
}

func (m *machine) fence(id int32) {
	m.t.Helper()
	b, _ := m.img.Broker(id)
	m.must(fenceBrokerCmd{ID: id, Epoch: b.Epoch})
}

func (m *machine) unfence(id int32) {
	m.t.Helper()
	b, _ := m.img.Broker(id)
	m.must(unfenceBrokerCmd{ID: id, Epoch: b.Epoch})
}

func (m *machine) partition(topic string, p int32) Partition {
	m.t.Helper()
	part, ok := m.img.Partition(topic, p)
	if !ok {
		m.t.Fatalf("no partition %s-%d", topic, p)
	}
	return part
}

func TestAssignmentRotatesLeaders(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3)
	res := m.must(createTopicCmd{Name: "a", ID: [16]byte{1}, Partitions: 3, ReplicationFactor: 2})
	var leaders []int32
	for _, p := range res.topic.Partitions {
		leaders = append(leaders, p.Leader)
		if !slices.Equal(p.ISR, p.Replicas) || p.Leader != p.Replicas[0] || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
			t.Errorf("new partition %+v", p)
		}
	}
	slices.Sort(leaders)
	if !slices.Equal(leaders, []int32{1, 2, 3}) {
		t.Errorf("leaders %v, want one partition led by each broker", leaders)
	}
	// The next topic starts one broker further.
	b := m.must(createTopicCmd{Name: "b", ID: [16]byte{2}, Partitions: 1, ReplicationFactor: 3}).topic
	if got := b.Partitions[0].Replicas; !slices.Equal(got, []int32{2, 3, 1}) {
		t.Errorf("second topic's replicas %v, want [2 3 1]", got)
	}
}

func TestCreateTopicRejections(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3)
	m.fence(3)
	for _, tc := range []struct {
		cmd  createTopicCmd
		want error
	}{
		{createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 3}, ErrInvalidReplicationFactor},
		{createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 0}, ErrInvalidReplicationFactor},
		{createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 0, ReplicationFactor: 1}, ErrInvalidPartitions},
		{createTopicCmd{Name: "bad name", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{createTopicCmd{Name: "t", Partitions: 1, ReplicationFactor: 1}, ErrInvalidRequest},
	} {
		before := m.img
		if res := m.apply(tc.cmd); !errors.Is(res.err, tc.want) {
			t.Errorf("%+v: err %v, want %v", tc.cmd, res.err, tc.want)
		}
		if m.img != before {
			t.Errorf("%+v: a rejected command changed the image", tc.cmd)
		}
	}
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 2})
	if res := m.apply(createTopicCmd{Name: "t", ID: [16]byte{2}, Partitions: 1, ReplicationFactor: 1}); !errors.Is(res.err, ErrTopicAlreadyExists) {
		t.Errorf("duplicate create: %v", res.err)
	}
}

// Fencing a leader elects the first replica in assignment order that is in
// the ISR and unfenced; epochs +1; the fenced broker leaves the ISR.
func TestFenceElectsFromISR(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 3}) // replicas [1 2 3]
	p := m.partition("t", 0)
	// Take 2 out of the ISR: the next leader must be 3, not 2.
	m.must(alterPartitionCmd{Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1, 3}})
	before := m.partition("t", 0)
	m.fence(1)
	after := m.partition("t", 0)
	if after.Leader != 3 || !slices.Equal(after.ISR, []int32{3}) {
		t.Fatalf("after fencing leader 1: leader %d ISR %v, want 3 [3]", after.Leader, after.ISR)
	}
	if after.LeaderEpoch != before.LeaderEpoch+1 || after.PartitionEpoch != before.PartitionEpoch+1 {
		t.Errorf("epochs %d/%d -> %d/%d, want +1 each", before.LeaderEpoch, before.PartitionEpoch, after.LeaderEpoch, after.PartitionEpoch)
	}
	// Fencing the last ISR member: no leader, ISR keeps it; 1 and 2 are
	// live but were not in the ISR, so they never lead (unclean election off).
	m.unfence(1)
	m.fence(3)
	p = m.partition("t", 0)
	if p.Leader != -1 || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("every ISR member fenced: leader %d ISR %v, want -1 [3]", p.Leader, p.ISR)
	}
	m.unfence(1)
	m.register(2)
	if p := m.partition("t", 0); p.Leader != -1 {
		t.Fatalf("non-ISR replica became leader: %+v", p)
	}
	// The last ISR member returns: it leads again.
	m.unfence(3)
	p = m.partition("t", 0)
	if p.Leader != 3 || p.LeaderEpoch != after.LeaderEpoch+2 {
		t.Fatalf("ISR member back: leader %d epoch %d, want 3 and %d", p.Leader, p.LeaderEpoch, after.LeaderEpoch+2)
	}
}

func TestFenceWithStaleBrokerEpochIsIgnored(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1)
	old, _ := m.img.Broker(1)
	m.register(1) // restarted broker, new epoch
	if res := m.apply(fenceBrokerCmd{ID: 1, Epoch: old.Epoch}); !errors.Is(res.err, ErrStaleBrokerEpoch) {
		t.Fatalf("stale fence: %v", res.err)
	}
	if b, _ := m.img.Broker(1); b.Fenced {
		t.Fatal("a stale fence fenced the re-registered broker")
	}
}

func TestAlterPartitionChecks(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 3})
	p := m.partition("t", 0)
	for _, tc := range []struct {
		name string
		cmd  alterPartitionCmd
		want error
	}{
		{"stale leader epoch", alterPartitionCmd{Topic: "t", LeaderEpoch: p.LeaderEpoch - 1, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1}}, ErrFencedLeaderEpoch},
		{"stale partition epoch", alterPartitionCmd{Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch + 1, ISR: []int32{1}}, ErrInvalidUpdateVersion},
		{"ISR without leader", alterPartitionCmd{Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{2, 3}}, ErrIneligibleReplica},
		{"ISR with non-replica", alterPartitionCmd{Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1, 7}}, ErrIneligibleReplica},
		{"ISR with duplicate", alterPartitionCmd{Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1, 1}}, ErrIneligibleReplica},
		{"unknown partition", alterPartitionCmd{Topic: "t", Partition: 1, ISR: []int32{1}}, ErrUnknownTopicOrPartition},
	} {
		if res := m.apply(tc.cmd); !errors.Is(res.err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, res.err, tc.want)
		}
	}
	res := m.must(alterPartitionCmd{Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{3, 1}})
	if got := res.partition; !slices.Equal(got.ISR, []int32{1, 3}) || got.PartitionEpoch != p.PartitionEpoch+1 || got.LeaderEpoch != p.LeaderEpoch {
		t.Fatalf("shrunk partition %+v", got)
	}
	m.fence(2)
	if res := m.apply(alterPartitionCmd{Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch + 1, ISR: []int32{1, 2, 3}}); !errors.Is(res.err, ErrIneligibleReplica) {
		t.Fatalf("expand with fenced replica: %v", res.err)
	}
}

func TestCreatePartitionsAndDelete(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 1, ReplicationFactor: 2})
	if res := m.apply(createPartitionsCmd{Name: "t", Count: 1}); !errors.Is(res.err, ErrInvalidPartitions) {
		t.Fatalf("no increase: %v", res.err)
	}
	topic := m.must(createPartitionsCmd{Name: "t", Count: 4}).topic
	for i, p := range topic.Partitions {
		if p.Partition != int32(i) || len(p.Replicas) != 2 || p.TopicID != topic.ID {
			t.Errorf("partition %d: %+v", i, p)
		}
	}
	m.must(deleteTopicCmd{Name: "t"})
	if _, ok := m.img.Topic("t"); ok {
		t.Fatal("deleted topic still there")
	}
	if res := m.apply(deleteTopicCmd{Name: "t"}); !errors.Is(res.err, ErrUnknownTopicOrPartition) {
		t.Fatalf("delete again: %v", res.err)
	}
}

// randomCommand returns a command that is often valid for img.
func randomCommand(r *rand.Rand, img *Image) any {
	broker := int32(r.IntN(5))
	epoch := int64(0)
	if b, ok := img.Broker(broker); ok {
		epoch = b.Epoch
	}
	topics := img.Topics()
	name := []string{"a", "b", "c"}[r.IntN(3)]
	switch r.IntN(8) {
	case 0, 1:
		return registerBrokerCmd{ID: broker, Host: "h", Port: 9000 + broker}
	case 2:
		return fenceBrokerCmd{ID: broker, Epoch: epoch}
	case 3:
		return unfenceBrokerCmd{ID: broker, Epoch: epoch}
	case 4:
		return createTopicCmd{Name: name, ID: [16]byte{byte(r.IntN(256)) | 1}, Partitions: int32(1 + r.IntN(4)), ReplicationFactor: int32(1 + r.IntN(3)), Configs: map[string]string{"k": name}}
	case 5:
		switch r.IntN(4) {
		case 0:
			return deleteTopicCmd{Name: name}
		case 1:
			return setTopicConfigsCmd{Name: name, Configs: map[string]string{"retention.ms": strconv.Itoa(r.IntN(3))}}
		case 2:
			if r.IntN(3) == 0 {
				return setGroupConfigsCmd{Group: name} // removes them
			}
			return setGroupConfigsCmd{Group: name, Configs: map[string]string{"share.delivery.count.limit": strconv.Itoa(2 + r.IntN(3))}}
		}
		return createPartitionsCmd{Name: name, Count: int32(1 + r.IntN(6))}
	}
	if len(topics) == 0 {
		return deleteTopicCmd{Name: name}
	}
	t := topics[r.IntN(len(topics))]
	p := t.Partitions[r.IntN(len(t.Partitions))]
	switch r.IntN(4) {
	case 0:
		if r.IntN(4) == 0 {
			return alterReassignmentCmd{Topic: t.Name, Partition: p.Partition, Cancel: true}
		}
		target := r.Perm(5)[:1+r.IntN(3)]
		ids := make([]int32, len(target))
		for i, id := range target {
			ids[i] = int32(id)
		}
		return alterReassignmentCmd{Topic: t.Name, Partition: p.Partition, Target: ids}
	case 1:
		return electLeaderCmd{Topic: t.Name, Partition: p.Partition, Unclean: r.IntN(3) == 0}
	}
	isr := []int32{p.Leader}
	for _, rep := range p.Replicas {
		if rep != p.Leader && r.IntN(2) == 0 {
			isr = append(isr, rep)
		}
	}
	return alterPartitionCmd{Topic: t.Name, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch - int32(r.IntN(4)/3), PartitionEpoch: p.PartitionEpoch, ISR: isr}
}

// Property: over random command sequences the invariants hold after every
// command, and a snapshot taken at any point restores to the same state,
// which then evolves exactly like the original.
func TestSnapshotRestoreProperty(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		a := newFSM(slog.New(slog.NewTextHandler(io.Discard, nil)))
		var b *fsm
		var index uint64
		for step := range 200 {
			cmd := randomCommand(r, a.current())
			data, err := encodeCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			index++
			entry := &raft.Log{Index: index, Type: raft.LogCommand, Data: data}
			resA := a.Apply(entry).(applyResult)
			if err := checkInvariants(a.current()); err != nil {
				t.Fatalf("seed %d step %d after %+v: %v", seed, step, cmd, err)
			}
			if b != nil {
				resB := b.Apply(entry).(applyResult)
				if (resA.err == nil) != (resB.err == nil) || !sameState(a.current(), b.current()) {
					t.Fatalf("seed %d step %d: restored machine diverged after %+v", seed, step, cmd)
				}
			}
			if step%50 == 25 {
				b = snapshotRoundTrip(t, a)
			}
		}
	}
}

func snapshotRoundTrip(t *testing.T, f *fsm) *fsm {
	t.Helper()
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, f.current()); err != nil {
		t.Fatal(err)
	}
	g := newFSM(f.logger)
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if !sameState(f.current(), g.current()) {
		t.Fatal("restored state differs from the snapshot's")
	}
	return g
}

func TestApplyMalformedCommand(t *testing.T) {
	t.Parallel()
	f := newFSM(slog.New(slog.NewTextHandler(io.Discard, nil)))
	before := f.current()
	for _, data := range [][]byte{
		nil,
		[]byte("garbage"),
		[]byte(`{"v":2,"type":"delete_topic","body":{"name":"t"}}`),
		[]byte(`{"v":1,"type":"nope","body":{}}`),
		[]byte(`{"v":1,"type":"delete_topic"}`),
		[]byte(`{"v":1,"type":"delete_topic","body":{"name":3}}`),
		[]byte(`{"v":1,"type":"delete_topic","body":{"name":"t","extra":1}}`),
		[]byte(`{"v":1,"type":"alter_partition","body":{"isr":"x"}}`),
	} {
		res, ok := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data}).(applyResult)
		if !ok || !errors.Is(res.err, ErrMalformedCommand) {
			t.Errorf("%q: result %+v, want ErrMalformedCommand", data, res)
		}
	}
	if f.current() != before {
		t.Fatal("a malformed command changed the image")
	}
}

// FuzzDecodeCommand: the decoder and the transition function never panic
// (applyCommand is called directly, without Apply's recover).
func FuzzDecodeCommand(f *testing.F) {
	m := newMachine(f)
	m.register(1, 2, 3)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 2, ReplicationFactor: 2})
	for _, cmd := range []any{
		registerBrokerCmd{ID: 1, Host: "h", Port: 1},
		fenceBrokerCmd{ID: 2, Epoch: 2},
		unfenceBrokerCmd{ID: 2, Epoch: 2},
		allocatePIDsCmd{BrokerID: 2, BrokerEpoch: 2, Floor: 5000},
		createTopicCmd{Name: "u", ID: [16]byte{9}, Partitions: 3, ReplicationFactor: 3, Configs: map[string]string{"a": "b"}},
		deleteTopicCmd{Name: "t"},
		createPartitionsCmd{Name: "t", Count: 5},
		alterPartitionCmd{Topic: "t", Partition: 1, ISR: []int32{2}},
		setGroupConfigsCmd{Group: "g", Configs: map[string]string{"share.auto.offset.reset": "earliest"}},
	} {
		data, err := encodeCommand(cmd)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	base := m.img
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := decodeCommand(data)
		if err != nil {
			if !errors.Is(err, ErrMalformedCommand) {
				t.Fatalf("error %v does not wrap ErrMalformedCommand", err)
			}
			return
		}
		next, _ := applyCommand(base, 100, cmd)
		if next != nil {
			if err := checkInvariants(next); err != nil {
				t.Fatalf("%+v: %v", cmd, err)
			}
		}
	})
}

func TestSetTopicConfigs(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	m.register(1, 2, 3)
	m.must(createTopicCmd{Name: "t", ID: [16]byte{1}, Partitions: 2, ReplicationFactor: 3, Configs: map[string]string{"retention.ms": "1"}})
	if res := m.apply(setTopicConfigsCmd{Name: "missing", Configs: map[string]string{"a": "b"}}); !errors.Is(res.err, ErrUnknownTopicOrPartition) {
		t.Fatalf("configs of a missing topic: %v", res.err)
	}
	before := m.img.Index()
	topic := m.must(setTopicConfigsCmd{Name: "t", Configs: map[string]string{"retention.ms": "2", "segment.bytes": "1048576"}}).topic
	if topic.Configs["retention.ms"] != "2" || topic.Configs["segment.bytes"] != "1048576" || len(topic.Configs) != 2 {
		t.Fatalf("configs after set: %v", topic.Configs)
	}
	if got, _ := m.img.Topic("t"); !maps.Equal(got.Configs, topic.Configs) || len(got.Partitions) != 2 || m.img.Index() == before {
		t.Fatalf("image after set: %+v (index %d, before %d)", got, m.img.Index(), before)
	}
	same := m.img.Index()
	m.must(setTopicConfigsCmd{Name: "t", Configs: map[string]string{"retention.ms": "2", "segment.bytes": "1048576"}})
	if m.img.Index() != same {
		t.Fatalf("the same configs again changed the image (index %d -> %d)", same, m.img.Index())
	}
	m.must(setTopicConfigsCmd{Name: "t"})
	if got, _ := m.img.Topic("t"); len(got.Configs) != 0 {
		t.Fatalf("configs after clearing: %v", got.Configs)
	}
}
