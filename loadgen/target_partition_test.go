package loadgen

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
	"github.com/exactly-eos/exactly/loadgen/faults"
)

// echoListener echoes every connection until the test ends.
func echoListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// TestClusterProxiesSlowFollowerHook: the network hook setHooks gives a
// cluster's process slows that broker's connections to the other
// brokers' proxies (dialed from its source address, as the broker dials
// them), records the degrade and, at the restore, what it impaired.
func TestClusterProxiesSlowFollowerHook(t *testing.T) {
	t.Parallel()
	var listens, rafts []string
	for range ClusterBrokers {
		listens = append(listens, echoListener(t))
		rafts = append(rafts, "127.0.0.1:1") // never dialed here
	}
	proxies, err := startClusterProxies(listens, rafts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxies.group.Close() })
	log := faults.NewEventLog(nil)
	target := &clusterTarget{}
	for i := range ClusterBrokers {
		process, err := faults.NewProcess(faults.ProcessConfig{Name: "broker " + string(rune('1'+i)), Path: "/bin/true", Addr: listens[i], Log: log})
		if err != nil {
			t.Fatal(err)
		}
		target.processes = append(target.processes, process)
	}
	proxies.setHooks(target)

	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(clusterSource(0))}, Timeout: 2 * time.Second}
	peer, err := dialer.Dial("tcp", proxies.kafka[1])
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	ping := func() time.Duration {
		t.Helper()
		start := time.Now()
		_ = peer.SetDeadline(time.Now().Add(2 * time.Second))
		buffer := make([]byte, 4)
		if _, err := peer.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, buffer); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	const delay = 5 * time.Millisecond
	if err := target.processes[0].Degrade(netem.Link{Delay: delay}); err != nil {
		t.Fatal(err)
	}
	if rtt := ping(); rtt < 2*delay-time.Millisecond/2 {
		t.Fatalf("broker 1's round trip to broker 2's proxy under a %v delay: %v", delay, rtt)
	}
	if err := target.processes[0].Restore(); err != nil {
		t.Fatal(err)
	}
	events := log.Events()
	if len(events) != 2 || events[0].Kind != faults.KindSlow || events[1].Kind != faults.KindRestore ||
		!strings.Contains(events[0].Detail, "delay 5ms") || !strings.Contains(events[1].Detail, "impaired 1 connections, 2 chunks") {
		t.Fatalf("events %v", events)
	}
	// A zero network (a reference run) says nothing about impairment.
	if err := target.processes[1].Degrade(netem.Link{}); err != nil {
		t.Fatal(err)
	}
	if err := target.processes[1].Restore(); err != nil {
		t.Fatal(err)
	}
	if last := log.Events()[3]; last.Kind != faults.KindRestore || strings.Contains(last.Detail, "impaired") {
		t.Fatalf("restore after a zero network: %+v", last)
	}
}
