package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/broker/clusternode"
	"github.com/exactly-eos/exactly/broker/quorum"
)

// TestParseControllerQuorum: Kafka's controller.quorum.voters shape, the
// RPC port derived as Raft port + 100, and the refusals.
func TestParseControllerQuorum(t *testing.T) {
	voters, err := parseControllerQuorum("1@127.0.0.1:9192, 2@10.0.0.2:9192,3@host3:7000", 2, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]quorum.VoterAddrs{
		1: {Raft: "127.0.0.1:9192", RPC: "127.0.0.1:9292"},
		2: {Raft: "10.0.0.2:9192", RPC: "10.0.0.2:9292"},
		3: {Raft: "host3:7000", RPC: "host3:7100"},
	}
	if len(voters) != len(want) {
		t.Fatalf("voters %v, want %v", voters, want)
	}
	for id, w := range want {
		if voters[id] != w {
			t.Errorf("voter %d: %+v, want %+v", id, voters[id], w)
		}
	}
	joined, err := parseControllerQuorum("1@a:1000,2@b:1000,3@c:1000", 4, "d:2000")
	if err != nil || joined[4] != (quorum.VoterAddrs{Raft: "d:2000", RPC: "d:2100"}) {
		t.Errorf("non-voter 4: %+v, %v", joined[4], err)
	}
	for _, bad := range []struct{ text, listen string }{
		{"1-a:1000", ""},                   // no @
		{"x@a:1000", ""},                   // id not a number
		{"1@a:1000,1@b:1000", ""},          // duplicate id
		{"1@a", ""},                        // no port
		{"1@a:65500", ""},                  // RPC port would not fit
		{"1@a:1000,2@b:1000,3@c:1000", ""}, // node 4 without --controller-listen
	} {
		if _, err := parseControllerQuorum(bad.text, 4, bad.listen); err == nil {
			t.Errorf("%q accepted", bad.text)
		}
	}
}

// TestMemberArgs: the ports `exactly cluster` gives its brokers.
func TestMemberArgs(t *testing.T) {
	args := memberArgs(clusterLayout{dataDir: "/d", host: "127.0.0.1", port: 9092, brokers: 4, settings: []string{"num.partitions=3"},
		metricsHost: "127.0.0.1", metricsPort: 9644}, 4)
	text := strings.Join(args, " ")
	for _, want := range []string{
		"--node-id 4", "--listen 127.0.0.1:9095", "--data-dir /d/broker-4",
		"--controller-quorum 1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194",
		"--controller-listen 127.0.0.1:9195",
		"--config default.replication.factor=3", "--config min.insync.replicas=2",
		"--metrics-listen 127.0.0.1:9647",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("member args %q lack %q", text, want)
		}
	}
	// The user's settings come last, so they win.
	if i := slices.Index(args, "num.partitions=3"); i != len(args)-1 {
		t.Errorf("user setting at %d of %d", i, len(args))
	}
	if one := strings.Join(memberArgs(clusterLayout{dataDir: "/d", host: "h", port: 9092, brokers: 1}, 1), " "); !strings.Contains(one, "default.replication.factor=1") || !strings.Contains(one, "min.insync.replicas=1") || strings.Contains(one, "controller-listen") || strings.Contains(one, "metrics-listen") {
		t.Errorf("one broker: %q", one)
	}
}

// TestMemberBinds: --controller-listen sets the quorum's bind addresses
// (RPC on port+100) while the voter entry stays as given, and
// --source-address must be an IP address.
func TestMemberBinds(t *testing.T) {
	voters, err := parseControllerQuorum("1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194", 1, "127.0.0.1:7000")
	if err != nil {
		t.Fatal(err)
	}
	cfg := clusternode.Config{NodeID: 1, Voters: voters}
	if err := memberBinds(&cfg, "127.0.0.1:7000", "127.0.0.11"); err != nil {
		t.Fatal(err)
	}
	if cfg.RaftListen != "127.0.0.1:7000" || cfg.RPCListen != "127.0.0.1:7100" || voters[1].Raft != "127.0.0.1:9192" {
		t.Errorf("binds %q %q, voter %+v", cfg.RaftListen, cfg.RPCListen, voters[1])
	}
	unset := clusternode.Config{NodeID: 1, Voters: voters}
	if err := memberBinds(&unset, "", ""); err != nil || unset.RaftListen != "" || unset.RPCListen != "" {
		t.Errorf("without flags: %q %q %v", unset.RaftListen, unset.RPCListen, err)
	}
	if err := memberBinds(&unset, "", "localhost"); err == nil {
		t.Error("--source-address localhost accepted")
	}
	if err := memberBinds(&unset, "127.0.0.1", ""); err == nil {
		t.Error("--controller-listen without a port accepted")
	}
}
