package faults

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

// testAPI is the API the fake upstream tests use: ListOffsets v1 is not
// flexible, so headers are v1 requests and v0 responses, and the proxy never
// looks inside its body.
const (
	testAPI     = wire.APIListOffsets
	testVersion = 1
)

// seenRequest is one request the fake upstream received.
type seenRequest struct {
	apiKey        int16
	correlationID int32
	at            time.Time
}

// fakeUpstream is a broker stand-in: it answers every request (except
// acks=0 Produce) with a frame holding the correlation id and the request
// body, optionally writing the response one byte at a time.
type fakeUpstream struct {
	listener  net.Listener
	splitResp bool

	mu       sync.Mutex // guards seen and closed
	seen     []seenRequest
	closed   int           // connections whose read loop ended
	changed  chan struct{} // closed and replaced on every change
	wg       sync.WaitGroup
	connsMu  sync.Mutex
	connList []net.Conn
}

func newFakeUpstream(t *testing.T) *fakeUpstream {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &fakeUpstream{listener: listener, changed: make(chan struct{})}
	u.wg.Add(1)
	go u.serve()
	t.Cleanup(u.close)
	return u
}

func (u *fakeUpstream) addr() string { return u.listener.Addr().String() }

func (u *fakeUpstream) close() {
	u.listener.Close()
	u.connsMu.Lock()
	for _, c := range u.connList {
		c.Close()
	}
	u.connsMu.Unlock()
	u.wg.Wait()
}

func (u *fakeUpstream) serve() {
	defer u.wg.Done()
	for {
		conn, err := u.listener.Accept()
		if err != nil {
			return
		}
		u.connsMu.Lock()
		u.connList = append(u.connList, conn)
		u.connsMu.Unlock()
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			u.handle(conn)
		}()
	}
}

func (u *fakeUpstream) notify(update func()) {
	u.mu.Lock()
	update()
	close(u.changed)
	u.changed = make(chan struct{})
	u.mu.Unlock()
}

func (u *fakeUpstream) handle(conn net.Conn) {
	defer conn.Close()
	defer u.notify(func() { u.closed++ })
	reader := wire.FrameReader{R: bufio.NewReader(conn)}
	for {
		frame, err := reader.Next(nil)
		if err != nil {
			return
		}
		header, body, err := wire.ParseRequestHeader(frame)
		if err != nil {
			return
		}
		u.notify(func() {
			u.seen = append(u.seen, seenRequest{apiKey: header.APIKey, correlationID: header.CorrelationID, at: time.Now()})
		})
		if !hasResponse(header, body) {
			continue
		}
		response := wire.AppendResponseHeader(nil, header.CorrelationID, wire.ResponseHeaderVersion(header.APIKey, header.APIVersion))
		response = append(response, body...)
		out := wire.AppendInt32(nil, int32(len(response)))
		out = append(out, response...)
		if u.splitResp {
			for i := range out {
				if _, err := conn.Write(out[i : i+1]); err != nil {
					return
				}
			}
			continue
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

// waitFor waits until condition holds over (seen, closed), or fails.
func (u *fakeUpstream) waitFor(t *testing.T, what string, condition func(seen []seenRequest, closed int) bool) []seenRequest {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		u.mu.Lock()
		seen := append([]seenRequest(nil), u.seen...)
		closed, changed := u.closed, u.changed
		u.mu.Unlock()
		if condition(seen, closed) {
			return seen
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("upstream: timed out waiting for %s (seen %d requests, %d connections ended)", what, len(seen), closed)
		}
	}
}

func correlationIDs(seen []seenRequest) []int32 {
	out := make([]int32, len(seen))
	for i, s := range seen {
		out[i] = s.correlationID
	}
	return out
}

// rawClient speaks Kafka framing by hand.
type rawClient struct {
	conn   net.Conn
	reader wire.FrameReader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawClient{conn: conn, reader: wire.FrameReader{R: bufio.NewReader(conn)}}
}

// requestFrame builds a size-prefixed request of the test API.
func requestFrame(apiKey, version int16, correlationID int32, body []byte) []byte {
	header := wire.RequestHeader{APIKey: apiKey, APIVersion: version, CorrelationID: correlationID,
		ClientID: []byte("test"), HeaderVersion: wire.RequestHeaderVersion(apiKey, version)}
	frame := wire.AppendRequestHeader(nil, header)
	frame = append(frame, body...)
	return append(wire.AppendInt32(nil, int32(len(frame))), frame...)
}

// produceBody is a Produce v3 body with no topics.
func produceBody(acks int16) []byte {
	body := wire.AppendInt16(nil, -1) // null transactional id
	body = wire.AppendInt16(body, acks)
	body = wire.AppendInt32(body, 1000)
	return wire.AppendInt32(body, 0)
}

func (c *rawClient) send(t *testing.T, correlationID int32) {
	t.Helper()
	if _, err := c.conn.Write(requestFrame(testAPI, testVersion, correlationID, []byte("payload"))); err != nil {
		t.Fatalf("send %d: %v", correlationID, err)
	}
}

// receive reads one response and returns its correlation id.
func (c *rawClient) receive() (int32, []byte, error) {
	frame, err := c.reader.Next(nil)
	if err != nil {
		return 0, nil, err
	}
	id, body, err := wire.ParseResponseHeader(frame, 0)
	return id, body, err
}

// expectClosed reads until the connection ends and returns the error.
func (c *rawClient) expectClosed(t *testing.T) error {
	t.Helper()
	_, _, err := c.receive()
	if err == nil {
		t.Fatal("got a response, want the connection cut")
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		t.Fatalf("connection still open: %v", err)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isReset(err) {
		t.Fatalf("unexpected error: %v", err)
	}
	return err
}

func newProxy(t *testing.T, upstream string, seed int64, rules ...Rule) *Proxy {
	t.Helper()
	p, err := New(Config{Upstreams: []string{upstream}, Rules: rules, Seed: seed, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func eventIDs(events []Event, kind Kind) []int32 {
	var out []int32
	for _, e := range events {
		if e.Kind == kind {
			out = append(out, e.CorrelationID)
		}
	}
	return out
}

func apis(keys ...int16) []APIKey {
	out := make([]APIKey, len(keys))
	for i, k := range keys {
		out[i] = APIKey(k)
	}
	return out
}

func probability(p float64) *float64 { return &p }
