package quorum

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// A quorum of one voter with no addresses runs in process: it elects
// itself without any listener, serves requests, and keeps its state over
// a restart.
func TestInProcessQuorumOfOne(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	dir := t.TempDir()
	cfg := Config{NodeID: 7, Voters: map[int32]VoterAddrs{7: {}}, DataDir: dir, SessionTimeout: time.Minute}
	open := func() *Node {
		t.Helper()
		n, err := Open(cfg)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		if n.rpc != nil {
			t.Fatal("an in-process quorum serves an RPC listener")
		}
		return n
	}
	n := open()
	if _, err := n.RegisterBroker(ctx, BrokerRegistration{ID: 7, Host: "127.0.0.1", Port: 9092}); err != nil {
		n.Close()
		t.Fatalf("register: %v", err)
	}
	created, err := n.CreateTopic(ctx, CreateTopicRequest{Name: "a", Partitions: 2, ReplicationFactor: 1})
	if err != nil {
		n.Close()
		t.Fatalf("create topic: %v", err)
	}
	if !n.IsController() || n.ControllerID() != 7 {
		t.Errorf("controller: active %v, id %d; want this node, 7", n.IsController(), n.ControllerID())
	}
	if got, ok := n.Image().Topic("a"); !ok || len(got.Partitions) != 2 || got.Partitions[0].Leader != 7 {
		t.Errorf("topic a in the image: %+v; want 2 partitions led by 7", got)
	}
	if _, err := n.CreateTopic(ctx, CreateTopicRequest{Name: "b", Partitions: 1, ReplicationFactor: 2}); err == nil {
		t.Error("created a topic of replication factor 2 on a cluster of one")
	}
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := os.Stat(dir + "/raft.db"); err != nil {
		t.Fatalf("raft store: %v", err)
	}

	n = open()
	defer n.Close()
	img, err := n.WaitFor(ctx, func(img *Image) bool { _, ok := img.Topic("a"); return ok })
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if got, _ := img.Topic("a"); got.ID != created.ID {
		t.Errorf("topic a's id after restart: %x; want %x", got.ID, created.ID)
	}
	if _, err := n.CreateTopic(ctx, CreateTopicRequest{Name: "c", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Errorf("create after restart: %v", err)
	}
}

// The controller of a cluster of one never fences its broker, however long
// the broker has been silent: they share the process.
func TestInProcessQuorumDoesNotFence(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	n, err := Open(Config{NodeID: 1, Voters: map[int32]VoterAddrs{1: {}}, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if _, err := n.RegisterBroker(ctx, BrokerRegistration{ID: 1, Host: "127.0.0.1", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	n.ctrl.mu.Lock()
	n.ctrl.lastSeen[1] = time.Now().Add(-time.Hour)
	n.ctrl.mu.Unlock()
	n.ctrl.fenceExpired(ctx)
	if b, ok := n.Image().Broker(1); !ok || b.Fenced {
		t.Errorf("broker 1 after an hour without heartbeats: %+v (registered %v), want unfenced", b, ok)
	}
}

// A cluster of one starts without a warning: its first election is how it
// becomes leader, so raft's election warning is logged at debug level.
func TestInProcessQuorumStartsQuietly(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 20*time.Second)
	var out lockedBuffer
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n, err := Open(Config{NodeID: 1, Voters: map[int32]VoterAddrs{1: {}}, DataDir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	// A request succeeds once the node has elected itself.
	if _, err := n.RegisterBroker(ctx, BrokerRegistration{ID: 1, Host: "127.0.0.1", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	logs := out.String()
	if !strings.Contains(logs, electionStart) {
		t.Fatalf("raft's election line is missing from the logs:\n%s", logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Errorf("a cluster of one warned at start: %s", line)
		}
	}
}
