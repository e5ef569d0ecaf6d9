package faults

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
	"github.com/exactly-eos/exactly/wire"
)

// dialTimeout bounds the proxy's dial of an upstream broker.
const dialTimeout = 10 * time.Second

// connection is one proxied client connection. Two goroutines own it: the
// request pump (run's goroutine) reads the client and writes the upstream;
// the response pump reads the upstream and writes the client. They share
// only the pending queue, the stop channel and closeOnce. With degrade
// rules each direction's writes go through a netem line, whose own
// goroutine writes at the delivery time.
type connection struct {
	listener *brokerListener
	ordinal  uint64 // accept order on the listener
	client   net.Conn
	server   net.Conn
	// toBroker and toClient are the degraded directions (nil without
	// degrade rules: frames are written directly).
	toBroker, toClient *netem.Line

	stop      chan struct{} // closed when the connection is cut
	closeOnce sync.Once
}

// pendingResponse is a request whose response is still expected, with the
// response-phase faults decided when the request passed. Responses arrive
// in request order on a connection, so a FIFO pairs them.
type pendingResponse struct {
	apiKey        int16
	version       int16
	correlationID int32
	delay         time.Duration
	delayRules    []string
	cut           Action // "", ActionDropResponse or ActionReset
	cutRule       string
}

// verdict is what the rules decided for one request.
type verdict struct {
	requestDelay  time.Duration
	delayRules    []string
	cut           Action // "", ActionDropRequest or ActionReset
	cutRule       string
	blackhole     time.Duration
	blackholeRule string
	response      pendingResponse
}

// maxPending bounds requests awaiting responses on one connection; a client
// pipelining deeper is back-pressured (Kafka clients keep 5 in flight).
const maxPending = 1024

func (c *connection) run() {
	l := c.listener
	p := l.proxy
	c.stop = make(chan struct{})
	// A blackholed broker accepts (the kernel did) but does nothing.
	if !l.waitOpen(nil) {
		return
	}
	server, err := net.DialTimeout("tcp", l.upstream, dialTimeout)
	if err != nil {
		p.logf("fault proxy: dial %s: %v", l.upstream, err)
		return
	}
	if !p.track(server, true) {
		server.Close()
		return
	}
	defer p.track(server, false)
	c.server = server
	if len(p.degrades) > 0 {
		// Seeds per listener, connection and direction: the samples do not
		// depend on how connections interleave.
		base := uint64(p.seed)*0x9e3779b97f4a7c15 ^ l.index<<40 ^ c.ordinal<<1
		failed := func(error) { c.cut(false) }
		c.toBroker = netem.NewLine(server, &l.pacers[0], base, failed)
		c.toClient = netem.NewLine(c.client, &l.pacers[1], base|1, failed)
	}
	pending := make(chan pendingResponse, maxPending)
	responsesDone := make(chan struct{})
	go func() {
		defer close(responsesDone)
		c.pumpResponses(pending)
	}()
	c.pumpRequests(pending)
	c.cut(false)
	<-responsesDone
}

// cut closes both sides once; with reset the client sees an RST.
func (c *connection) cut(reset bool) {
	c.closeOnce.Do(func() {
		close(c.stop)
		for _, line := range []*netem.Line{c.toBroker, c.toClient} {
			if line != nil {
				line.Close() // what was still on the wire is lost with the connection
			}
		}
		if tcp, ok := c.client.(*net.TCPConn); ok && reset {
			tcp.SetLinger(0)
		}
		c.client.Close()
		if c.server != nil {
			c.server.Close()
		}
	})
}

// record logs a fault fired on this connection.
func (c *connection) record(kind Kind, apiKey int16, correlationID int32, detail string) {
	c.listener.proxy.log.Record(Event{
		Broker:        c.listener.upstream,
		Kind:          kind,
		APIKey:        apiKey,
		CorrelationID: correlationID,
		Detail:        fmt.Sprintf("%s (connection %d)", detail, c.ordinal),
	})
}

func (c *connection) pumpRequests(pending chan<- pendingResponse) {
	defer close(pending)
	l := c.listener
	p := l.proxy
	reader := wire.FrameReader{R: bufio.NewReaderSize(c.client, 64<<10), MaxSize: p.maxSize}
	var buf []byte
	for ordinal := uint64(0); ; ordinal++ {
		frame, err := reader.Next(buf[:0])
		if err != nil {
			return
		}
		buf = frame
		header, body, err := wire.ParseRequestHeader(frame)
		if err != nil {
			p.logf("fault proxy: %s: %v", l.upstream, err)
			return
		}
		if !l.waitOpen(c.stop) {
			return
		}
		expectsResponse := hasResponse(header, body)
		v := c.judge(header.APIKey, ordinal, expectsResponse)
		if v.blackhole > 0 {
			l.blackhole(v.blackhole, Event{Kind: KindBlackhole, APIKey: header.APIKey, CorrelationID: header.CorrelationID,
				Detail: fmt.Sprintf("rule %s: for %v (connection %d)", v.blackholeRule, v.blackhole, c.ordinal)})
			if !l.waitOpen(c.stop) {
				return
			}
		}
		if v.requestDelay > 0 {
			c.record(KindDelay, header.APIKey, header.CorrelationID,
				fmt.Sprintf("request by %v, rule %s", v.requestDelay, strings.Join(v.delayRules, ", ")))
			if !p.pause(v.requestDelay, c.stop) {
				return
			}
		}
		switch v.cut {
		case ActionDropRequest:
			c.record(KindDropRequest, header.APIKey, header.CorrelationID, "rule "+v.cutRule)
			c.cut(false)
			return
		case ActionReset:
			c.record(KindReset, header.APIKey, header.CorrelationID, "before request, rule "+v.cutRule)
			c.cut(true)
			return
		}
		if expectsResponse {
			v.response.apiKey = header.APIKey
			v.response.version = header.APIVersion
			v.response.correlationID = header.CorrelationID
			// Queue before forwarding, so the response pump always finds it.
			select {
			case pending <- v.response:
			case <-c.stop:
				return
			}
		}
		if err := c.forward(true, frame); err != nil {
			return
		}
	}
}

// forward writes a frame to the broker (toBroker) or the client: directly,
// or through the direction's netem line under the link of the degrade
// rules that apply now.
func (c *connection) forward(toBroker bool, frame []byte) error {
	line, conn := c.toClient, c.client
	if toBroker {
		line, conn = c.toBroker, c.server
	}
	if line == nil {
		return writeFrame(conn, frame)
	}
	now := time.Now()
	link := c.listener.link(now, toBroker)
	lostBefore := line.Stats().Lost
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(frame)))
	if err := line.SendParts(now, link, size[:], frame); err != nil {
		return err
	}
	if line.Stats().Lost > lostBefore {
		direction := "to the client"
		if toBroker {
			direction = "to the broker"
		}
		retransmit := link.Retransmit
		if retransmit == 0 {
			retransmit = netem.DefaultRetransmit
		}
		c.record(KindRetransmit, NoAPIKey, 0, fmt.Sprintf("a %d-byte frame %s held %v for a lost segment", len(frame)+4, direction, retransmit))
	}
	return nil
}

// judge consults the rules, in order, for the ordinal-th request on this
// connection. A rule that cuts the connection before forwarding ends the
// consultation; delays add up; the first response cut wins.
func (c *connection) judge(apiKey int16, ordinal uint64, expectsResponse bool) verdict {
	l := c.listener
	p := l.proxy
	var v verdict
	elapsed := time.Since(p.Start())
	at := requestCoordinates{listener: l.index, connection: c.ordinal, request: ordinal}
	for _, s := range p.rules {
		r := &s.rule
		if r.clockDriven() || r.Action == ActionDegrade || (r.actsOnResponse() && !expectsResponse) {
			continue
		}
		if !s.matches(apiKey, l, elapsed) || !s.fires(p.seed, at) {
			continue
		}
		switch {
		case r.Action == ActionDropRequest || (r.Action == ActionReset && r.Phase != PhaseResponse):
			v.cut, v.cutRule = r.Action, r.String()
			return v
		case r.Action == ActionDropResponse || r.Action == ActionReset:
			if v.response.cut == "" {
				v.response.cut, v.response.cutRule = r.Action, r.String()
			}
		case r.Action == ActionDelay && r.Phase == PhaseResponse:
			v.response.delay += time.Duration(r.Duration)
			v.response.delayRules = append(v.response.delayRules, r.String())
		case r.Action == ActionDelay:
			v.requestDelay += time.Duration(r.Duration)
			v.delayRules = append(v.delayRules, r.String())
		case r.Action == ActionBlackhole:
			if d := time.Duration(r.Duration); d > v.blackhole {
				v.blackhole, v.blackholeRule = d, r.String()
			}
		}
	}
	return v
}

func (c *connection) pumpResponses(pending <-chan pendingResponse) {
	l := c.listener
	p := l.proxy
	reader := wire.FrameReader{R: bufio.NewReaderSize(c.server, 64<<10), MaxSize: p.maxSize}
	var buf []byte
	for {
		frame, err := reader.Next(buf[:0])
		if err != nil {
			c.cut(false)
			return
		}
		buf = frame
		expected, ok := <-pending
		if !ok {
			c.cut(false)
			return
		}
		headerVersion := wire.ResponseHeaderVersion(expected.apiKey, expected.version)
		correlationID, _, err := wire.ParseResponseHeader(frame, headerVersion)
		if err != nil || correlationID != expected.correlationID {
			p.logf("fault proxy: %s: response %d does not answer %s v%d correlation %d (err %v)",
				l.upstream, correlationID, wire.APIName(expected.apiKey), expected.version, expected.correlationID, err)
			c.cut(false)
			return
		}
		if !l.waitOpen(c.stop) || !c.respond(expected, frame) {
			c.cut(false)
			return
		}
	}
}

// respond applies the response-phase faults and forwards (possibly
// rewritten) the response; false means the connection is done.
func (c *connection) respond(expected pendingResponse, frame []byte) bool {
	p := c.listener.proxy
	if expected.delay > 0 {
		c.record(KindDelay, expected.apiKey, expected.correlationID,
			fmt.Sprintf("response by %v, rule %s", expected.delay, strings.Join(expected.delayRules, ", ")))
		if !p.pause(expected.delay, c.stop) {
			return false
		}
	}
	switch expected.cut {
	case ActionDropResponse:
		// The broker has processed the request; the client never learns it.
		c.record(KindDropResponse, expected.apiKey, expected.correlationID, "rule "+expected.cutRule)
		c.cut(false)
		return false
	case ActionReset:
		c.record(KindReset, expected.apiKey, expected.correlationID, "instead of response, rule "+expected.cutRule)
		c.cut(true)
		return false
	}
	if rewritesAddresses(expected.apiKey) {
		rewritten, err := p.rewrite(expected.apiKey, expected.version, frame)
		if err != nil {
			p.logf("fault proxy: %s: %v", c.listener.upstream, err)
			return false
		}
		frame = rewritten
	}
	return c.forward(false, frame) == nil
}

// writeFrame writes the size prefix and the frame in one writev.
func writeFrame(conn net.Conn, frame []byte) error {
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(frame)))
	buffers := net.Buffers{size[:], frame}
	_, err := buffers.WriteTo(conn)
	return err
}
