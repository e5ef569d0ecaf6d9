// Package partition is a network-partition fault for brokers on one
// machine, without root: a group of TCP forwarding proxies, one in front
// of every listener (Kafka, Raft, quorum RPC) of every broker. Brokers
// advertise the proxies' addresses (as their Kafka listeners and quorum
// voter addresses) and dial every inter-broker connection from their own
// loopback source address (broker i: 127.0.0.(10+i)), so a proxy knows
// which broker a connection comes from by its remote IP; clients dial from
// another address (127.0.0.1).
//
// Cut(b) isolates broker b: b's proxies drop every connection and refuse
// new ones, and the other brokers' proxies drop and refuse connections
// from b's source address. CutPeers(b) isolates b from the other brokers
// only: clients still reach b. Heal(b) lets connections through again
// (connections dropped stay dropped; the peers reconnect).
//
// Degrade(b, link) slows b's links to the other brokers instead: every
// connection b opens to another broker's proxies (its replica fetches,
// quorum RPCs, forwarded requests) carries its bytes, both ways, through
// a netem.Line under link (delay, jitter, bandwidth cap, loss; package
// internal/netem). Clients' connections and the connections other brokers
// open to b are not impaired. A zero link (Restore) lifts it.
//
// The proxies forward bytes and nothing else: they need no knowledge of
// the protocols, because every address a broker hands out is already a
// proxy's.
package partition

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
)

// MaxConnsPerForwarder bounds the open connections of one forwarder; more
// are refused.
const MaxConnsPerForwarder = 1024

// dialTimeout bounds a forwarder's connection to its target.
const dialTimeout = 5 * time.Second

// mode is one broker's partition state.
type mode int

const (
	open     mode = iota // reachable
	cutPeers             // cut off from the other brokers, not from clients
	cutAll               // cut off from everyone
)

// Group is the proxies of a set of brokers. Its methods are safe for
// concurrent use.
//
// Goroutines: one accept loop per forwarder, and per forwarded connection
// one serve goroutine with two copy loops (one per direction); a copy
// loop of a degraded broker's connection starts a netem.Line, whose own
// goroutine writes what the loop sends it. serve waits for its copy loops
// and their lines; Close ends them all and waits.
type Group struct {
	mu      sync.Mutex
	brokers map[int32]*brokerState
	closed  bool
	wg      sync.WaitGroup
	// conns numbers accepted connections, for their lines' samples.
	conns atomic.Uint64
}

// brokerState is one broker's source address, mode and forwarders, and
// the impairment of its links to the other brokers.
type brokerState struct {
	source     net.IP
	mode       mode
	forwarders []*forwarder
	// blocked counts the connections dropped or refused because this
	// broker was cut off.
	blocked uint64

	// link is the impairment of Degrade, nil when none. The copy loops
	// read it for every chunk without g.mu.
	link atomic.Pointer[netem.Link]
	// pacers are the transmitters of this broker's links, one per
	// direction (see outbound and inbound): every line of its connections
	// shares them, so a rate cap is the broker's bandwidth to its peers.
	pacers [2]netem.Pacer
	// impaired counts what was sent under a non-zero link (atomics,
	// added to by the copy loops).
	impaired struct{ connections, chunks, bytes atomic.Int64 }
	// peers are the live connections this broker opened to other
	// brokers' forwarders (guarded by g.mu); retired sums the line counts
	// of the ended ones (guarded by g.mu).
	peers   map[*conn]struct{}
	retired lineTotals
}

// forwarder listens in front of one listener of its broker.
type forwarder struct {
	owner    int32
	target   string
	listener net.Listener
	conns    map[*conn]struct{} // guarded by Group.mu
}

// conn is one forwarded connection: the accepted side and the dialed one.
type conn struct {
	remote     net.IP
	downstream net.Conn
	upstream   net.Conn // nil until dialed
	closeOnce  sync.Once
	// from is the broker that opened the connection when it is another
	// broker's connection to this forwarder's broker (Degrade impairs
	// it), else nil; fixed at accept.
	from *brokerState
	// ordinal numbers the connection in its group (its lines' samples).
	ordinal uint64
	// lines are the netem lines of the two directions (outbound,
	// inbound), nil until a chunk first needs impairing; each is stored
	// by its copy loop only.
	lines [2]atomic.Pointer[netem.Line]
	// lined is set when the connection's first line starts (counted once
	// in impaired.connections).
	lined atomic.Bool
	// closed is set by close before it closes the lines it finds; a line
	// stored after that closes itself (startLine), so none outlives close.
	closed atomic.Bool
}

// close resets both sides and closes the lines (a drain in progress ends,
// a line's goroutine ends after the write it is in). It is idempotent.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		reset(c.downstream)
		if c.upstream != nil {
			reset(c.upstream)
		}
		for i := range c.lines {
			if line := c.lines[i].Load(); line != nil {
				line.Close()
			}
		}
	})
}

// reset closes a connection with a TCP reset rather than a FIN, so the
// peer learns at once that it was dropped.
func reset(c net.Conn) {
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
}

// New returns an empty group.
func New() *Group { return &Group{brokers: map[int32]*brokerState{}} }

// AddBroker declares broker id, whose inter-broker connections come from
// the IP address source.
func (g *Group) AddBroker(id int32, source string) error {
	ip := net.ParseIP(source)
	if ip == nil {
		return fmt.Errorf("partition: broker %d: source %q is not an IP address", id, source)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.brokers[id]; dup {
		return fmt.Errorf("partition: broker %d added twice", id)
	}
	g.brokers[id] = &brokerState{source: ip, peers: map[*conn]struct{}{}}
	return nil
}

// Forward starts a forwarder of broker id that listens on listen
// ("127.0.0.1:0" picks a free port) and forwards every admitted
// connection to target. It returns the address it listens on.
func (g *Group) Forward(id int32, listen, target string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	state, ok := g.brokers[id]
	if !ok {
		return "", fmt.Errorf("partition: broker %d was not added", id)
	}
	if g.closed {
		return "", errors.New("partition: group closed")
	}
	listener, err := net.Listen("tcp", listen)
	if err != nil {
		return "", fmt.Errorf("partition: broker %d: listen %s: %w", id, listen, err)
	}
	f := &forwarder{owner: id, target: target, listener: listener, conns: map[*conn]struct{}{}}
	state.forwarders = append(state.forwarders, f)
	g.wg.Add(1)
	go g.acceptLoop(f)
	return listener.Addr().String(), nil
}

// Cut isolates broker id from everyone (see the package doc).
func (g *Group) Cut(id int32) error { return g.setMode(id, cutAll) }

// CutPeers isolates broker id from the other brokers; clients still reach
// it.
func (g *Group) CutPeers(id int32) error { return g.setMode(id, cutPeers) }

// Heal lets broker id's connections through again.
func (g *Group) Heal(id int32) error { return g.setMode(id, open) }

// setMode changes a broker's mode and drops every connection that the new
// state no longer admits.
func (g *Group) setMode(id int32, m mode) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	state, ok := g.brokers[id]
	if !ok {
		return fmt.Errorf("partition: broker %d was not added", id)
	}
	state.mode = m
	for _, b := range g.brokers {
		for _, f := range b.forwarders {
			for c := range f.conns {
				if culprit := g.blockerLocked(f.owner, c.remote); culprit != nil {
					culprit.blocked++
					delete(f.conns, c)
					c.close()
				}
			}
		}
	}
	return nil
}

// blockerLocked returns the cut-off broker that keeps a connection from
// remote off broker owner's listeners now, or nil if it may pass (g.mu
// held).
func (g *Group) blockerLocked(owner int32, remote net.IP) *brokerState {
	target := g.brokers[owner]
	if target.mode == cutAll {
		return target
	}
	for id, from := range g.brokers {
		if id == owner || !from.source.Equal(remote) {
			continue
		}
		// A connection from another broker: refused when either side is
		// cut from its peers.
		switch {
		case from.mode != open:
			return from
		case target.mode != open:
			return target
		}
	}
	return nil
}

// Blocked returns how many connections were dropped or refused because
// broker id was cut off, since it was added (0 for an unknown broker).
func (g *Group) Blocked(id int32) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if state, ok := g.brokers[id]; ok {
		return state.blocked
	}
	return 0
}

// Admits reports whether a connection from the IP address remote may reach
// broker id's listeners now (false for an unknown broker).
func (g *Group) Admits(id int32, remote string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.brokers[id]; !ok {
		return false
	}
	return g.blockerLocked(id, net.ParseIP(remote)) == nil
}

func (g *Group) acceptLoop(f *forwarder) {
	defer g.wg.Done()
	for {
		down, err := f.listener.Accept()
		if err != nil {
			return // closed
		}
		c := &conn{downstream: down, ordinal: g.conns.Add(1)}
		if addr, ok := down.RemoteAddr().(*net.TCPAddr); ok {
			c.remote = addr.IP
		}
		g.mu.Lock()
		c.from = g.peerLocked(f.owner, c.remote)
		culprit := g.blockerLocked(f.owner, c.remote)
		if culprit != nil {
			culprit.blocked++
		}
		if g.closed || culprit != nil || len(f.conns) >= MaxConnsPerForwarder {
			g.mu.Unlock()
			reset(down)
			continue
		}
		f.conns[c] = struct{}{}
		if c.from != nil {
			c.from.peers[c] = struct{}{}
		}
		g.wg.Add(1)
		g.mu.Unlock()
		go g.serve(f, c)
	}
}

// serve dials the target and copies both ways until either side ends or
// the connection is dropped.
func (g *Group) serve(f *forwarder, c *conn) {
	defer g.wg.Done()
	defer func() {
		c.close()
		g.mu.Lock()
		delete(f.conns, c)
		g.retireLocked(c)
		g.mu.Unlock()
	}()
	up, err := net.DialTimeout("tcp", f.target, dialTimeout)
	if err != nil {
		return
	}
	g.mu.Lock()
	if _, live := f.conns[c]; !live { // dropped while dialing
		g.mu.Unlock()
		reset(up)
		return
	}
	c.upstream = up
	g.mu.Unlock()
	done := make(chan struct{}, 2)
	if c.from == nil {
		// Never impaired (a client's, or the broker's own): io.Copy
		// splices from socket to socket without a user-space copy.
		go func() { _, _ = io.Copy(up, c.downstream); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c.downstream, up); done <- struct{}{} }()
	} else {
		go func() { c.copyChunks(up, c.downstream, outbound); done <- struct{}{} }()
		go func() { c.copyChunks(c.downstream, up, inbound); done <- struct{}{} }()
	}
	<-done
	c.close() // ends the other copy
	<-done
	// The lines' goroutines end after the write they are in, which the
	// reset sockets fail: wait, so Close leaves nothing running.
	for i := range c.lines {
		if line := c.lines[i].Load(); line != nil {
			<-line.Done()
		}
	}
}

// Close stops every forwarder, drops every connection and waits for all
// goroutines. It is idempotent.
func (g *Group) Close() error {
	g.mu.Lock()
	g.closed = true
	for _, b := range g.brokers {
		for _, f := range b.forwarders {
			f.listener.Close()
			for c := range f.conns {
				delete(f.conns, c)
				c.close()
			}
		}
	}
	g.mu.Unlock()
	g.wg.Wait()
	return nil
}
