package partition

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
)

// pingTimes returns the round trips of n pings over c, fastest first.
func pingTimes(t *testing.T, c net.Conn, n int) []time.Duration {
	t.Helper()
	var times []time.Duration
	for range n {
		start := time.Now()
		if err := roundTrip(c); err != nil {
			t.Fatalf("ping: %v", err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	return times
}

// The emulation may deliver up to its learned sleep overshoot early; a
// round trip crosses two lines.
const earliness = 200 * time.Microsecond

// mustBeDelayed checks that every round trip over c takes at least
// 2×delay, and the fastest less than 2×delay + slack.
func mustBeDelayed(t *testing.T, what string, c net.Conn, delay, slack time.Duration) {
	t.Helper()
	times := pingTimes(t, c, 5)
	if times[0] < 2*delay-earliness || times[0] >= 2*delay+slack {
		t.Fatalf("%s: round trips %v, want each >= %v and the fastest < %v", what, times, 2*delay, 2*delay+slack)
	}
}

// mustBeFast checks that the fastest round trip over c is under limit.
func mustBeFast(t *testing.T, what string, c net.Conn, limit time.Duration) {
	t.Helper()
	if times := pingTimes(t, c, 5); times[0] >= limit {
		t.Fatalf("%s: round trips %v, want the fastest < %v", what, times, limit)
	}
}

// TestDegradeSlowsOnlyTheBrokersOwnConnections: Degrade(1) adds its delay
// both ways to the connections broker 1 opens to broker 2's forwarder,
// those open before the call included, and to nothing else: not clients'
// connections, not broker 2's to broker 1, not broker 1's to itself.
// Restore lifts it from connections that have a line too.
func TestDegradeSlowsOnlyTheBrokersOwnConnections(t *testing.T) {
	t.Parallel()
	const delay = 10 * time.Millisecond
	g, addrs := newGroup(t)
	existing := dialFrom(t, "127.0.0.11", addrs[2])
	mustBeFast(t, "broker 1 to broker 2 before Degrade", existing, delay)
	if err := g.Degrade(1, netem.Link{Delay: delay}); err != nil {
		t.Fatal(err)
	}
	mustBeDelayed(t, "broker 1's connection open before Degrade", existing, delay, 10*time.Millisecond)
	mustBeDelayed(t, "broker 1's new connection to broker 2", dialFrom(t, "127.0.0.11", addrs[2]), delay, 10*time.Millisecond)
	mustBeFast(t, "client to broker 2", dialFrom(t, "127.0.0.1", addrs[2]), delay)
	mustBeFast(t, "client to broker 1", dialFrom(t, "127.0.0.1", addrs[1]), delay)
	mustBeFast(t, "broker 2 to broker 1", dialFrom(t, "127.0.0.12", addrs[1]), delay)
	mustBeFast(t, "broker 1 to itself", dialFrom(t, "127.0.0.11", addrs[1]), delay)

	impaired := g.Impaired(1)
	// 10 pings each way on two connections; a ping may arrive in one
	// chunk or more.
	if impaired.Connections != 2 || impaired.Chunks < 20 || impaired.Bytes != 2*2*5*4 || impaired.Lost != 0 {
		t.Fatalf("Impaired(1) = %+v, want 2 connections and 80 bytes", impaired)
	}
	if other := g.Impaired(2); other != (Impairment{}) {
		t.Fatalf("Impaired(2) = %+v, want nothing", other)
	}

	if err := g.Restore(1); err != nil {
		t.Fatal(err)
	}
	mustBeFast(t, "broker 1's lined connection after Restore", existing, delay)
	mustBeFast(t, "broker 1's new connection after Restore", dialFrom(t, "127.0.0.11", addrs[2]), delay)
	if after := g.Impaired(1); after.Bytes != impaired.Bytes || after.Connections != impaired.Connections {
		t.Fatalf("Impaired(1) after Restore = %+v, want %+v: nothing impaired since", after, impaired)
	}
	if err := g.Degrade(7, netem.Link{Delay: delay}); err == nil {
		t.Fatal("Degrade of an unknown broker succeeded")
	}
	if err := g.Degrade(1, netem.Link{Loss: 2}); err == nil {
		t.Fatal("Degrade with an invalid link succeeded")
	}
}

// pump sends size random bytes over c from another goroutine while it
// reads the echo, and returns the two checksums and the time taken.
func pump(c net.Conn, size int, stream uint64) (sent, received [32]byte, took time.Duration, err error) {
	data := make([]byte, size)
	random := rand.New(rand.NewPCG(stream, stream))
	for i := range data {
		data[i] = byte(random.Uint32())
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	start := time.Now()
	writeErr := make(chan error, 1)
	go func() {
		// Odd write sizes, so chunks do not line up with the buffer.
		var err error
		for rest := data; len(rest) > 0 && err == nil; {
			n := min(len(rest), 1+random.IntN(50_000))
			_, err = c.Write(rest[:n])
			rest = rest[n:]
		}
		writeErr <- err
	}()
	echoed := make([]byte, size)
	if _, err := io.ReadFull(c, echoed); err != nil {
		return sent, received, 0, fmt.Errorf("read the echo: %w", err)
	}
	took = time.Since(start)
	if err := <-writeErr; err != nil {
		return sent, received, 0, fmt.Errorf("write: %w", err)
	}
	return sha256.Sum256(data), sha256.Sum256(echoed), took, nil
}

// TestDegradeKeepsDataIntactAndInOrder: megabytes through a degraded
// broker's connection, under jitter and loss, arrive complete and in
// order both ways; so do they while the link is degraded and restored in
// turn.
func TestDegradeKeepsDataIntactAndInOrder(t *testing.T) {
	t.Parallel()
	g, addrs := newGroup(t)
	link := netem.Link{Delay: time.Millisecond, Jitter: time.Millisecond, Loss: 0.002, Retransmit: 5 * time.Millisecond}
	if err := g.Degrade(1, link); err != nil {
		t.Fatal(err)
	}
	c := dialFrom(t, "127.0.0.11", addrs[2])
	const size = 4 << 20
	sent, received, took, err := pump(c, size, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent != received {
		t.Fatal("the echo of 4 MiB through a degraded connection differs from what was sent")
	}
	impaired := g.Impaired(1)
	if impaired.Bytes != 2*size || impaired.Lost == 0 {
		t.Fatalf("Impaired(1) = %+v, want %d bytes and some losses", impaired, 2*size)
	}
	t.Logf("4 MiB echoed in %v: %+v", took, impaired)

	// Degrade and Restore in turn while data flows: a connection that
	// has a line keeps sending through it, so nothing overtakes data the
	// line still holds.
	stop := make(chan struct{})
	toggled := make(chan error, 1)
	go func() {
		var err error
		for on := false; err == nil; on = !on {
			select {
			case <-stop:
				toggled <- nil
				return
			case <-time.After(2 * time.Millisecond):
			}
			if on {
				err = g.Degrade(1, netem.Link{Delay: 3 * time.Millisecond})
			} else {
				err = g.Restore(1)
			}
		}
		toggled <- err
	}()
	sent, received, took, err = pump(dialFrom(t, "127.0.0.11", addrs[2]), size, 2)
	close(stop)
	if err := <-toggled; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if sent != received {
		t.Fatal("the echo of 4 MiB through a connection degraded and restored in turn differs from what was sent")
	}
	t.Logf("4 MiB echoed in %v while degraded and restored every 2ms", took)
}

// TestDegradeRateCapIsShared: a rate cap holds for all the degraded
// broker's connections together, each direction.
func TestDegradeRateCapIsShared(t *testing.T) {
	t.Parallel()
	g, addrs := newGroup(t)
	const rate = 2_000_000 // bytes per second
	if err := g.Degrade(1, netem.Link{Rate: rate}); err != nil {
		t.Fatal(err)
	}
	const size = 500_000 // per connection; two connections: 0.5 s at the cap
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 2 {
		c := dialFrom(t, "127.0.0.11", addrs[2])
		wg.Go(func() {
			if sent, received, _, err := pump(c, size, uint64(i)); err != nil || sent != received {
				t.Errorf("connection %d: the echo differs (%v)", i, err)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	// Each direction carries 1 MB at 2 MB/s; the echo's direction follows
	// the requests' at most a chunk behind.
	if want := time.Duration(2 * size * float64(time.Second) / rate); took < want*95/100 || took > want*2 {
		t.Fatalf("2 × %d bytes each way at %d B/s took %v, want about %v", size, rate, took, want)
	}
	t.Logf("2 × %d bytes echoed at %s in %v", size, netem.FormatRate(rate), took)
}

// sinkServer accepts one connection at a time and sends the bytes each
// one read before it ended on the channel.
func sinkServer(t *testing.T) (string, <-chan int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	counts := make(chan int, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n, _ := io.Copy(io.Discard, c)
			c.Close()
			counts <- int(n)
		}
	}()
	return ln.Addr().String(), counts
}

// TestDegradeDrainsOnEOF: data a degraded broker sent just before closing
// its connection is delivered after the delay, not dropped with the
// connection.
func TestDegradeDrainsOnEOF(t *testing.T) {
	t.Parallel()
	g := New()
	t.Cleanup(func() { g.Close() })
	sink, counts := sinkServer(t)
	for id, source := range map[int32]string{1: "127.0.0.11", 2: "127.0.0.12"} {
		if err := g.AddBroker(id, source); err != nil {
			t.Fatal(err)
		}
	}
	addr, err := g.Forward(2, "127.0.0.1:0", sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Degrade(1, netem.Link{Delay: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	c := dialFrom(t, "127.0.0.11", addr)
	payload := bytes.Repeat([]byte("x"), 100_000)
	if _, err := c.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-counts:
		if n != len(payload) {
			t.Fatalf("the sink read %d bytes of %d", n, len(payload))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sink's connection did not end")
	}
}

// TestCloseEndsDegradedConnections: Close does not wait out a long delay;
// the lines' goroutines end with it.
func TestCloseEndsDegradedConnections(t *testing.T) {
	target := echoServer(t)
	before := runtime.NumGoroutine()
	g := New()
	for id, source := range map[int32]string{1: "127.0.0.11", 2: "127.0.0.12"} {
		if err := g.AddBroker(id, source); err != nil {
			t.Fatal(err)
		}
	}
	addr, err := g.Forward(2, "127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Degrade(1, netem.Link{Delay: time.Minute}); err != nil {
		t.Fatal(err)
	}
	c := dialFrom(t, "127.0.0.11", addr)
	if _, err := c.Write([]byte("held for a minute")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil { // the forwarder drains
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	g.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Close took %v", took)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Close, %d before", n, before)
	}
}
