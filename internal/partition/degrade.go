package partition

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
)

// chunkSize is the read buffer of a copy loop of a broker-to-broker
// connection: one chunk is one Send on a line.
const chunkSize = 32 << 10

// drainTimeout bounds how long a copy loop whose reader ended (EOF) waits
// for its line to deliver what it holds before the connection closes.
const drainTimeout = 5 * time.Second

// Directions of a broker-to-broker connection, as seen from the broker
// that opened it: they index its pacers and the connection's lines.
const (
	outbound = 0 // what the connecting broker sends (its requests)
	inbound  = 1 // what it receives (the other broker's responses)
)

// Impairment counts what Degrade impaired on one broker's links to the
// other brokers since the broker was added (Group.Impaired).
type Impairment struct {
	// Connections is how many of its connections to other brokers had a
	// chunk impaired.
	Connections int64
	// Chunks and Bytes are what was sent under a non-zero link, both
	// directions together.
	Chunks, Bytes int64
	// Lost is how many chunks were held for a retransmission.
	Lost int64
	// MaxLateness is the worst delay of a delivery past its time (the
	// emulation's own imprecision).
	MaxLateness time.Duration
}

// Sub is the impairment since an earlier count (MaxLateness is kept: it
// cannot be taken apart).
func (i Impairment) Sub(earlier Impairment) Impairment {
	return Impairment{Connections: i.Connections - earlier.Connections, Chunks: i.Chunks - earlier.Chunks,
		Bytes: i.Bytes - earlier.Bytes, Lost: i.Lost - earlier.Lost, MaxLateness: i.MaxLateness}
}

// String is "12 connections, 3456 chunks, 7.1 MB, 0 lost".
func (i Impairment) String() string {
	return fmt.Sprintf("%d connections, %d chunks, %.1f MB, %d lost", i.Connections, i.Chunks, float64(i.Bytes)/1e6, i.Lost)
}

// lineTotals sums the counts of ended lines (Impairment's line-side
// fields).
type lineTotals struct {
	lost        int64
	maxLateness time.Duration
}

func (t *lineTotals) add(stats netem.Stats) {
	t.lost += stats.Lost
	t.maxLateness = max(t.maxLateness, stats.MaxLateness)
}

// Degrade impairs, from now on, every connection broker id opens to
// another broker's forwarders (the ones whose remote address is id's
// source), both ways, with link: connections already open carry the
// data they read from now on through a netem.Line, new ones from the
// start. Clients' connections and the connections other brokers open to
// id are untouched (and so are connections accepted before id was added:
// add every broker before forwarding). A zero link restores the links
// (Restore). Lines of id's connections share one pacer per direction, so
// a rate cap holds for all of them together.
func (g *Group) Degrade(id int32, link netem.Link) error {
	if err := link.Validate(); err != nil {
		return fmt.Errorf("partition: degrade broker %d: %w", id, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	state, ok := g.brokers[id]
	if !ok {
		return fmt.Errorf("partition: broker %d was not added", id)
	}
	if link.Zero() {
		state.link.Store(nil)
	} else {
		state.link.Store(&link)
	}
	return nil
}

// Restore lifts Degrade: broker id's links to the other brokers carry
// data unimpaired again (a connection that has a line keeps sending
// through it, undelayed, so its bytes stay in order).
func (g *Group) Restore(id int32) error { return g.Degrade(id, netem.Link{}) }

// Impaired returns what Degrade impaired on broker id's links since it
// was added (zero for an unknown broker).
func (g *Group) Impaired(id int32) Impairment {
	g.mu.Lock()
	defer g.mu.Unlock()
	state, ok := g.brokers[id]
	if !ok {
		return Impairment{}
	}
	totals := state.retired
	for c := range state.peers {
		for i := range c.lines {
			if line := c.lines[i].Load(); line != nil {
				totals.add(line.Stats())
			}
		}
	}
	return Impairment{Connections: state.impaired.connections.Load(), Chunks: state.impaired.chunks.Load(),
		Bytes: state.impaired.bytes.Load(), Lost: totals.lost, MaxLateness: totals.maxLateness}
}

// peerLocked is the broker whose source address is remote, when it is not
// owner (a broker's connection to another broker's forwarder), else nil
// (g.mu held).
func (g *Group) peerLocked(owner int32, remote net.IP) *brokerState {
	for id, from := range g.brokers {
		if id != owner && from.source.Equal(remote) {
			return from
		}
	}
	return nil
}

// retireLocked takes an ended connection out of its broker's peers and
// keeps its lines' counts (g.mu held; the lines' goroutines have ended).
func (g *Group) retireLocked(c *conn) {
	if c.from == nil {
		return
	}
	delete(c.from.peers, c)
	for i := range c.lines {
		if line := c.lines[i].Load(); line != nil {
			c.from.retired.add(line.Stats())
		}
	}
}

// copyChunks copies src to dst, one direction of a broker-to-broker
// connection, until src ends or either side fails. Each chunk read goes
// straight to dst while the broker's link is unimpaired; the first chunk
// read under a non-zero link starts the direction's line, and from then
// on every chunk goes through it, impaired or not, so that no chunk
// overtakes one the line still holds. On EOF the line is drained (at
// most drainTimeout; closing the connection ends it sooner) before the
// loop returns; it closes its line when it returns.
func (c *conn) copyChunks(dst, src net.Conn, direction int) {
	buffer := make([]byte, chunkSize)
	var line *netem.Line
	defer func() {
		if line != nil {
			line.Close()
		}
	}()
	for {
		n, err := src.Read(buffer)
		if n > 0 {
			var link netem.Link
			if current := c.from.link.Load(); current != nil {
				link = *current
			}
			if line == nil && !link.Zero() {
				line = c.startLine(dst, direction)
			}
			if !link.Zero() {
				c.from.impaired.chunks.Add(1)
				c.from.impaired.bytes.Add(int64(n))
			}
			if line != nil {
				if line.Send(time.Now(), link, buffer[:n]) != nil {
					return // closed: the connection is going
				}
			} else if _, err := dst.Write(buffer[:n]); err != nil {
				return
			}
		}
		if err != nil {
			if line != nil && errors.Is(err, io.EOF) {
				line.Drain(drainTimeout)
			}
			return
		}
	}
}

// startLine starts the line of one direction, on the broker's pacer of
// that direction; a failed write on it drops the connection.
func (c *conn) startLine(dst net.Conn, direction int) *netem.Line {
	if c.lined.CompareAndSwap(false, true) {
		c.from.impaired.connections.Add(1)
	}
	line := netem.NewLine(dst, &c.from.pacers[direction], c.ordinal<<1|uint64(direction), func(error) { c.close() })
	c.lines[direction].Store(line)
	if c.closed.Load() { // close ran before the store and did not see it
		line.Close()
	}
	return line
}
