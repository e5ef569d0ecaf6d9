// Package testproxy is a small Kafka-aware TCP proxy for tests: it forwards
// frames between a client and one broker, knows each request's API key and
// correlation id, and can forward a request but swallow its response and cut
// the connection — the seed's "written but not acknowledged" failure (§2.2).
//
// It is test code: the load generator's fault proxy (loadgen/faults) is the
// full one. The broker under test must advertise the proxy's address so that
// clients reconnect through it after reading Metadata.
package testproxy

import (
	"bufio"
	"encoding/binary"
	"io"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"

	"github.com/exactly-eos/exactly/wire"
)

// Proxy forwards connections accepted on its listener to Target.
type Proxy struct {
	// Target is the broker's host:port.
	Target string
	// DropResponse decides, for a request with a response, whether to forward
	// the request but swallow its response and close the connection. It is
	// called from connection goroutines; it must be safe for concurrent use.
	DropResponse func(apiKey int16) bool

	listener net.Listener
	dropped  atomic.Int64
	wg       sync.WaitGroup

	mu    sync.Mutex // guards conns
	conns map[net.Conn]struct{}
}

// Listen starts a proxy on 127.0.0.1 with a random port forwarding to target.
func Listen(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Target: target, listener: l, conns: make(map[net.Conn]struct{})}
	return p, nil
}

// Addr is the proxy's listening address, which the broker should advertise.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// Dropped counts responses swallowed so far.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

// Serve accepts connections until Close. Call it in a goroutine.
func (p *Proxy) Serve() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(client)
		}()
	}
}

// Close stops accepting, cuts every open connection and waits for them.
func (p *Proxy) Close() error {
	err := p.listener.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		if p.conns == nil {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

// pending is one request whose response is still expected.
type pending struct {
	apiKey int16
	drop   bool
}

// handle pumps one client connection. Responses arrive in request order
// (Kafka's guarantee), so a FIFO of expected responses tells the response
// pump which request each response answers.
func (p *Proxy) handle(client net.Conn) {
	server, err := net.Dial("tcp", p.Target)
	if err != nil {
		client.Close()
		return
	}
	p.track(client, true)
	p.track(server, true)
	defer func() {
		client.Close()
		server.Close()
		p.track(client, false)
		p.track(server, false)
	}()
	expected := make(chan pending, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.pumpResponses(server, client, expected)
	}()
	p.pumpRequests(client, server, expected)
	server.Close()
	<-done
}

func (p *Proxy) pumpRequests(client, server net.Conn, expected chan<- pending) {
	defer close(expected)
	reader := wire.FrameReader{R: bufio.NewReader(client)}
	var buf []byte
	for {
		frame, err := reader.Next(buf[:0])
		if err != nil {
			return
		}
		buf = frame
		header, body, err := wire.ParseRequestHeader(frame)
		if err != nil {
			return
		}
		if hasResponse(header, body) {
			drop := p.DropResponse != nil && p.DropResponse(header.APIKey)
			expected <- pending{apiKey: header.APIKey, drop: drop}
		}
		if err := writeFrame(server, frame); err != nil {
			return
		}
	}
}

func (p *Proxy) pumpResponses(server, client net.Conn, expected <-chan pending) {
	reader := wire.FrameReader{R: bufio.NewReader(server)}
	var buf []byte
	for {
		frame, err := reader.Next(buf[:0])
		if err != nil {
			client.Close()
			return
		}
		buf = frame
		next, ok := <-expected
		if !ok {
			client.Close()
			return
		}
		if next.drop {
			// The broker has processed the request; the client never learns it.
			p.dropped.Add(1)
			client.Close()
			server.Close()
			return
		}
		if err := writeFrame(client, frame); err != nil {
			return
		}
	}
}

// hasResponse reports whether the broker answers the request: everything
// except Produce with acks=0.
func hasResponse(header wire.RequestHeader, body []byte) bool {
	if header.APIKey != wire.APIProduce {
		return true
	}
	produce, err := wire.ParseProduceRequest(body, header.APIVersion)
	if err != nil {
		return true
	}
	return produce.Acks != 0
}

func writeFrame(w io.Writer, frame []byte) error {
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(frame)))
	if _, err := w.Write(size[:]); err != nil {
		return err
	}
	_, err := w.Write(frame)
	return err
}

// Probability returns a DropResponse function that drops responses of the
// given API key with probability share, deterministically from seed.
func Probability(apiKey int16, share float64, seed int64) func(int16) bool {
	var mu sync.Mutex
	rng := rand.New(rand.NewSource(seed))
	return func(key int16) bool {
		if key != apiKey {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		return rng.Float64() < share
	}
}
