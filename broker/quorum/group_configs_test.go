package quorum

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A group's configs are set, replaced, set again without a change, and
// removed by an empty set; the group need not exist, and the empty group
// id is refused.
func TestSetGroupConfigs(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	if res := m.apply(setGroupConfigsCmd{Group: "", Configs: map[string]string{"a": "b"}}); !errors.Is(res.err, ErrInvalidRequest) {
		t.Fatalf("configs of the empty group id: %v", res.err)
	}
	set := map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"}
	m.must(setGroupConfigsCmd{Group: "g", Configs: set})
	if got := m.img.GroupConfigs("g"); !maps.Equal(got, set) {
		t.Fatalf("configs after set: %v", got)
	}
	if got := m.img.GroupConfigs("other"); got != nil {
		t.Fatalf("configs of a group never configured: %v", got)
	}
	// What the image returns is a copy.
	m.img.GroupConfigs("g")["share.auto.offset.reset"] = "latest"
	if got := m.img.GroupConfigs("g")["share.auto.offset.reset"]; got != "earliest" {
		t.Fatalf("a caller's change reached the image: %q", got)
	}

	same := m.img.Index()
	m.must(setGroupConfigsCmd{Group: "g", Configs: maps.Clone(set)})
	if m.img.Index() != same {
		t.Fatalf("the same configs again changed the image (index %d -> %d)", same, m.img.Index())
	}
	m.must(setGroupConfigsCmd{Group: "g", Configs: map[string]string{"share.delivery.count.limit": "3"}})
	if got := m.img.GroupConfigs("g"); len(got) != 1 || got["share.delivery.count.limit"] != "3" {
		t.Fatalf("configs after replace: %v", got)
	}
	m.must(setGroupConfigsCmd{Group: "g"})
	if got := m.img.GroupConfigs("g"); got != nil {
		t.Fatalf("configs after removal: %v", got)
	}
	if _, ok := m.img.AllGroupConfigs()["g"]; ok {
		t.Fatal("a group without configs kept an entry")
	}
}

// Group configs go through the log (encode, decode, Apply) and survive a
// snapshot; a snapshot of the format of before (version 2) restores with
// no group configs.
func TestGroupConfigsSnapshot(t *testing.T) {
	t.Parallel()
	f := newFSM(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var index uint64
	apply := func(cmd any) {
		t.Helper()
		data, err := encodeCommand(cmd)
		if err != nil {
			t.Fatal(err)
		}
		index++
		if res := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data}).(applyResult); res.err != nil {
			t.Fatalf("%+v: %v", cmd, res.err)
		}
	}
	apply(registerBrokerCmd{ID: 1, Host: "h", Port: 1})
	apply(setGroupConfigsCmd{Group: "a", Configs: map[string]string{"share.auto.offset.reset": "by_duration:PT1H"}})
	apply(setGroupConfigsCmd{Group: "b", Configs: map[string]string{"consumer.session.timeout.ms": "50000", "share.isolation.level": "read_committed"}})
	apply(setGroupConfigsCmd{Group: "c", Configs: map[string]string{"share.delivery.count.limit": "4"}})
	apply(setGroupConfigsCmd{Group: "c"})

	g := snapshotRoundTrip(t, f) // sameState compares the group configs too
	want := map[string]map[string]string{
		"a": {"share.auto.offset.reset": "by_duration:PT1H"},
		"b": {"consumer.session.timeout.ms": "50000", "share.isolation.level": "read_committed"},
	}
	if got := g.current().AllGroupConfigs(); !maps.EqualFunc(got, want, func(x, y map[string]string) bool { return maps.Equal(x, y) }) {
		t.Fatalf("restored group configs: %v, want %v", got, want)
	}
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, f.current()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"v":3`) || !strings.Contains(buf.String(), `"group_configs":{"a":`) {
		t.Fatalf("snapshot: %s", buf.String())
	}

	old := `{"v":2,"index":9,"cursor":2,"brokers":[{"ID":3,"Host":"h","Port":1,"Rack":"","Epoch":5,"Fenced":false}],"topics":[],"next_producer_id":1000}`
	img, err := readSnapshot(strings.NewReader(old))
	if err != nil {
		t.Fatalf("version 2 snapshot: %v", err)
	}
	if len(img.AllGroupConfigs()) != 0 || img.Index() != 9 || img.NextProducerID() != 1000 {
		t.Fatalf("version 2 snapshot: group configs %v, index %d, next producer id %d", img.AllGroupConfigs(), img.Index(), img.NextProducerID())
	}
	bad := `{"v":3,"index":9,"cursor":0,"brokers":[],"topics":[],"next_producer_id":0,"group_configs":{"":{"a":"b"}}}`
	if _, err := readSnapshot(strings.NewReader(bad)); err == nil {
		t.Fatal("a snapshot with configs of the empty group id was read")
	}
}

// Through a node: a cluster of three sets a group's configs on a
// follower (forwarded to the controller) and every node's image holds
// them.
func TestGroupConfigsReplicated(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, testTiming)
	c.startAll()
	ctx := testContext(t, 30*time.Second)
	follower := c.follower(ctx)
	want := map[string]string{"share.record.lock.duration.ms": "15000"}
	if err := follower.SetGroupConfigs(ctx, "g", want); err != nil {
		t.Fatalf("set group configs on a follower: %v", err)
	}
	if got := follower.Image().GroupConfigs("g"); !maps.Equal(got, want) {
		t.Fatalf("the follower does not read its own write: %v", got)
	}
	c.waitAll(ctx, "group configs everywhere", func(img *Image) bool { return maps.Equal(img.GroupConfigs("g"), want) })
	if err := follower.SetGroupConfigs(ctx, "", want); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("the empty group id: %v, want ErrInvalidRequest", err)
	}
}
