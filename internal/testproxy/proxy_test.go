package testproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// echoBroker answers every request whose header it can parse with a bare
// response carrying the correlation id, except Produce with acks=0, and
// counts the requests it received.
func echoBroker(t *testing.T) (addr string, received *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	received = new(atomic.Int64)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := wire.FrameReader{R: bufio.NewReader(c)}
				for {
					frame, err := r.Next(nil)
					if err != nil {
						return
					}
					h, body, err := wire.ParseRequestHeader(frame)
					if err != nil {
						return
					}
					received.Add(1)
					if !hasResponse(h, body) {
						continue
					}
					if writeFrame(c, wire.AppendResponseHeader(nil, h.CorrelationID, 0)) != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String(), received
}

func request(t *testing.T, key int16, correlationID int32, acks int16) []byte {
	t.Helper()
	var body []byte
	version := int16(7)
	switch key {
	case wire.APIProduce:
		req := kmsg.NewPtrProduceRequest()
		req.Version = version
		req.Acks = acks
		body = req.AppendTo(nil)
	default:
		req := kmsg.NewPtrMetadataRequest()
		req.Version = version
		body = req.AppendTo(nil)
	}
	frame := wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: key, APIVersion: version, CorrelationID: correlationID, ClientID: []byte("t"), HeaderVersion: 1})
	return append(frame, body...)
}

func readCorrelation(t *testing.T, r *wire.FrameReader) (int32, error) {
	t.Helper()
	frame, err := r.Next(nil)
	if err != nil {
		return 0, err
	}
	id, _, err := wire.ParseResponseHeader(frame, 0)
	return id, err
}

func startProxy(t *testing.T, target string, drop func(int16) bool) *Proxy {
	t.Helper()
	p, err := Listen(target)
	if err != nil {
		t.Fatal(err)
	}
	p.DropResponse = drop
	go p.Serve()
	t.Cleanup(func() { p.Close() })
	return p
}

// Pipelined requests through the proxy come back in order, and acks=0
// produce requests (which have no response) do not shift the pairing.
func TestPipelinedResponsesKeepOrder(t *testing.T) {
	target, received := echoBroker(t)
	p := startProxy(t, target, nil)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var want []int32
	for i := int32(1); i <= 5; i++ {
		acks := int16(1)
		if i == 3 {
			acks = 0
		} else {
			want = append(want, i)
		}
		if err := writeFrame(c, request(t, wire.APIProduce, i, acks)); err != nil {
			t.Fatal(err)
		}
	}
	r := wire.FrameReader{R: bufio.NewReader(c)}
	for _, w := range want {
		got, err := readCorrelation(t, &r)
		if err != nil {
			t.Fatalf("waiting for response %d: %v", w, err)
		}
		if got != w {
			t.Fatalf("response correlation id %d, want %d", got, w)
		}
	}
	if n := received.Load(); n != 5 {
		t.Fatalf("broker received %d requests, want 5", n)
	}
}

// The seed's lost-ack case: the broker processes the produce request, the
// client never sees the response and its connection is cut.
func TestDroppedProduceResponseCutsConnection(t *testing.T) {
	target, received := echoBroker(t)
	p := startProxy(t, target, func(key int16) bool { return key == wire.APIProduce })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := wire.FrameReader{R: bufio.NewReader(c)}
	if err := writeFrame(c, request(t, wire.APIMetadata, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if id, err := readCorrelation(t, &r); err != nil || id != 1 {
		t.Fatalf("metadata response: id %d, err %v", id, err)
	}
	if err := writeFrame(c, request(t, wire.APIProduce, 2, -1)); err != nil {
		t.Fatal(err)
	}
	_, err = readCorrelation(t, &r)
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		var netErr net.Error
		if !errors.As(err, &netErr) || netErr.Timeout() {
			t.Fatalf("want the connection cut after the dropped response, got %v", err)
		}
	}
	if n := received.Load(); n != 2 {
		t.Fatalf("broker received %d requests, want 2 (the produce must reach it)", n)
	}
	if p.Dropped() != 1 {
		t.Fatalf("dropped %d responses, want 1", p.Dropped())
	}
}

func TestProbabilityIsDeterministic(t *testing.T) {
	a, b := Probability(wire.APIProduce, 0.3, 42), Probability(wire.APIProduce, 0.3, 42)
	fired := 0
	for i := 0; i < 1000; i++ {
		x, y := a(wire.APIProduce), b(wire.APIProduce)
		if x != y {
			t.Fatalf("same seed diverged at call %d", i)
		}
		if x {
			fired++
		}
		if a(wire.APIFetch) {
			t.Fatal("fired for another API key")
		}
	}
	if fired < 200 || fired > 400 {
		t.Fatalf("fired %d of 1000 at share 0.3", fired)
	}
}
