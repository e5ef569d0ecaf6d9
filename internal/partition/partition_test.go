package partition

import (
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"
)

// echoServer accepts on a free loopback port and echoes every connection
// until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = io.Copy(c, c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// dialFrom connects to addr from the IP address source.
func dialFrom(t *testing.T, source, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, source, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes a message and reads its echo (2 s deadline).
func roundTrip(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "ping" {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// newGroup is brokers 1 and 2 (sources 127.0.0.11 and .12), each with one
// forwarder in front of its own echo server.
func newGroup(t *testing.T) (*Group, map[int32]string) {
	t.Helper()
	g := New()
	t.Cleanup(func() { g.Close() })
	addrs := map[int32]string{}
	for id := int32(1); id <= 2; id++ {
		if err := g.AddBroker(id, "127.0.0.1"+string(rune('0'+id))); err != nil {
			t.Fatal(err)
		}
		addr, err := g.Forward(id, "127.0.0.1:0", echoServer(t))
		if err != nil {
			t.Fatal(err)
		}
		addrs[id] = addr
	}
	return g, addrs
}

func mustPass(t *testing.T, what string, c net.Conn) {
	t.Helper()
	if err := roundTrip(c); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func mustFail(t *testing.T, what string, c net.Conn) {
	t.Helper()
	if err := roundTrip(c); err == nil {
		t.Fatalf("%s: the connection still forwards", what)
	}
}

// mustRefuse checks that a new connection from source to addr is refused:
// reset while connecting or at its first exchange.
func mustRefuse(t *testing.T, what, source, addr string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer c.Close()
	mustFail(t, what, c)
}

func TestCutDropsExistingAndRefusesNew(t *testing.T) {
	g, addrs := newGroup(t)
	client := dialFrom(t, "127.0.0.1", addrs[1])
	mustPass(t, "before the cut", client)
	other := dialFrom(t, "127.0.0.1", addrs[2])
	if err := g.Cut(1); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "client connection to the cut broker", client)
	mustRefuse(t, "new client connection to the cut broker", "127.0.0.1", addrs[1])
	mustRefuse(t, "the cut broker's connection to broker 2", "127.0.0.11", addrs[2])
	mustPass(t, "client connection to broker 2", other)
	if err := g.Heal(1); err != nil {
		t.Fatal(err)
	}
	mustPass(t, "new client connection after heal", dialFrom(t, "127.0.0.1", addrs[1]))
	mustPass(t, "broker 1 to broker 2 after heal", dialFrom(t, "127.0.0.11", addrs[2]))
}

func TestSourceFiltering(t *testing.T) {
	g, addrs := newGroup(t)
	fromTwo := dialFrom(t, "127.0.0.12", addrs[1])
	fromOne := dialFrom(t, "127.0.0.11", addrs[2])
	client := dialFrom(t, "127.0.0.1", addrs[1])
	mustPass(t, "broker 2 to broker 1", fromTwo)
	mustPass(t, "broker 1 to broker 2", fromOne)
	mustPass(t, "client to broker 1", client)

	// Broker 1 cut from its peers only: clients still reach it.
	if err := g.CutPeers(1); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "broker 2 to peer-cut broker 1", fromTwo)
	mustFail(t, "peer-cut broker 1 to broker 2", fromOne)
	mustRefuse(t, "new connection from broker 2 to broker 1", "127.0.0.12", addrs[1])
	mustPass(t, "client to peer-cut broker 1", client)
	mustPass(t, "new client connection to peer-cut broker 1", dialFrom(t, "127.0.0.1", addrs[1]))
	if g.Admits(1, "127.0.0.12") || !g.Admits(1, "127.0.0.1") || g.Admits(2, "127.0.0.11") {
		t.Fatal("Admits disagrees with the peer cut")
	}
	// Dropped: broker 2's and broker 1's peer connections; refused: the
	// new one from broker 2.
	if n := g.Blocked(1); n != 3 || g.Blocked(2) != 0 {
		t.Fatalf("blocked because of broker 1: %d, of broker 2: %d; want 3 and 0", n, g.Blocked(2))
	}

	// Broker 2 fully cut instead: broker 1's proxy refuses broker 2's
	// source, but a client (and broker 1 itself) still reach broker 1.
	if err := g.Heal(1); err != nil {
		t.Fatal(err)
	}
	if err := g.Cut(2); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, "cut broker 2 to broker 1", "127.0.0.12", addrs[1])
	mustPass(t, "broker 1 to itself", dialFrom(t, "127.0.0.11", addrs[1]))
	mustPass(t, "client to broker 1 while broker 2 is cut", client)
	if err := g.Heal(2); err != nil {
		t.Fatal(err)
	}
	mustPass(t, "broker 2 to broker 1 after heal", dialFrom(t, "127.0.0.12", addrs[1]))
}

func TestCloseStopsEverything(t *testing.T) {
	target := echoServer(t)
	before := runtime.NumGoroutine()
	g := New()
	if err := g.AddBroker(1, "127.0.0.11"); err != nil {
		t.Fatal(err)
	}
	addr, err := g.Forward(1, "127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	c := dialFrom(t, "127.0.0.1", addr)
	mustPass(t, "through the proxy", c)
	g.Close()
	g.Close() // idempotent
	mustFail(t, "after Close", c)
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("the forwarder still listens after Close")
	}
	if _, err := g.Forward(1, "127.0.0.1:0", target); err == nil {
		t.Fatal("Forward after Close succeeded")
	}
	// Close waited for the group's goroutines; the echo server's copy of
	// the dropped connection ends on its own, so allow it a moment.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Close, %d before", n, before)
	}
}

func TestUnknownBrokerAndBadSource(t *testing.T) {
	g := New()
	defer g.Close()
	if err := g.AddBroker(1, "not-an-ip"); err == nil {
		t.Fatal("AddBroker accepted a host name as source")
	}
	if err := g.Cut(7); err == nil {
		t.Fatal("Cut of an unknown broker succeeded")
	}
	if _, err := g.Forward(7, "127.0.0.1:0", "127.0.0.1:1"); err == nil {
		t.Fatal("Forward for an unknown broker succeeded")
	}
}
