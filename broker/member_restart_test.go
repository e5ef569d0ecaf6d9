package broker

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// TestRestartedMemberWaitsForCaughtUpMetadata: a member restarted over
// its data directory applies no metadata image older than its own
// registration. Its quorum node replays what it had, entry by entry,
// before it hears what was committed while it was down; acting on such an
// image would make it a leader or coordinator that no longer is one, and
// its coordinators would take a topic created since for deleted. Here a
// topic is created while member 3 is down: the first image member 3
// applies after its restart holds it.
func TestRestartedMemberWaitsForCaughtUpMetadata(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	voters := map[int32]quorum.VoterAddrs{}
	listen := map[int32]string{}
	for id := int32(1); id <= 3; id++ {
		addrs := testutil.FreeAddrs(t, 3)
		voters[id] = quorum.VoterAddrs{Raft: addrs[0], RPC: addrs[1]}
		listen[id] = addrs[2]
	}
	members := map[int32]*Broker{}
	start := func(id int32) {
		t.Helper()
		b, err := Start(context.Background(), Config{NodeID: id, Listen: listen[id], DataDir: filepath.Join(root, strconv.Itoa(int(id))),
			Logger: slog.New(slog.DiscardHandler), Quorum: &QuorumConfig{Voters: voters,
				HeartbeatInterval: 50 * time.Millisecond, SessionTimeout: 800 * time.Millisecond, ElectionTimeout: 400 * time.Millisecond}})
		if err != nil {
			t.Fatalf("start member %d: %v", id, err)
		}
		members[id] = b
	}
	t.Cleanup(func() {
		for _, b := range members {
			b.Close()
		}
	})
	for id := int32(1); id <= 3; id++ {
		start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	createTopic := func(name string) uint64 {
		t.Helper()
		for {
			for _, id := range []int32{1, 2} {
				if _, err := members[id].QuorumNode().CreateTopic(ctx, quorum.CreateTopicRequest{Name: name, Partitions: 1, ReplicationFactor: 2}); err == nil {
					return members[id].QuorumNode().Image().Index()
				}
			}
			select {
			case <-ctx.Done():
				t.Fatalf("create topic %s: %v", name, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	createTopic("early")
	if err := members[3].Close(); err != nil {
		t.Fatal(err)
	}
	delete(members, 3)
	lateIndex := createTopic("late")

	start(3)
	restarted := members[3].member
	if _, err := restarted.node.WaitFor(ctx, func(img *quorum.Image) bool { return img.Index() >= lateIndex }); err != nil {
		t.Fatal(err)
	}
	if err := restarted.waitApplied(ctx); err != nil {
		t.Fatal(err)
	}
	restarted.appliedMu.Lock()
	first, set := restarted.firstApplied, restarted.firstAppliedSet
	restarted.appliedMu.Unlock()
	epoch := uint64(restarted.node.RegisteredEpoch())
	if !set || epoch == 0 || first < epoch || first < lateIndex {
		t.Fatalf("restarted member first applied the image at index %d (applied: %v); its registration is at %d, the late topic at %d",
			first, set, epoch, lateIndex)
	}
	if members[3].topicRoles("late") == nil {
		t.Error("the restarted member does not know the topic created while it was down")
	}
}
