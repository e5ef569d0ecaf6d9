package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/exactly-eos/exactly/broker/api"
	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/internal/invariants"
	"github.com/exactly-eos/exactly/wire"
)

// maxInFlight bounds the responses a connection may owe: once this many are
// pending, the reader stops reading until the writer catches up.
const maxInFlight = 64

// connection serves one client. Its reader goroutine (serve) reads frames
// in order and runs handlers; its writer goroutine (writeLoop) sends the
// responses in the order the requests arrived, whatever order the handlers
// finish in.
type connection struct {
	broker  *Broker
	netConn net.Conn
	// rawConn is the socket for sendfile; nil when netConn is not a
	// plain TCP connection (under TLS sendfile would put the file's bytes
	// on the wire unencrypted: fetches take the copy path,
	// fetchResponse.copyTo).
	rawConn syscall.RawConn
	// socket is the TCP socket under netConn, TLS or not, for TCP_CORK;
	// nil when netConn is not TCP.
	socket syscall.RawConn
	logger *slog.Logger

	// ctx is cancelled when the connection dies: handlers waiting on its
	// behalf stop waiting. Broker shutdown does not cancel it, so acks=all
	// answers still wait for durability; long polls also watch the broker's
	// context and answer at once on shutdown.
	ctx    context.Context
	cancel context.CancelFunc

	// queue holds one pending response per request still owed, in request
	// order. The reader sends, the writer receives; the reader closes it.
	queue chan *response

	stopOnce sync.Once
	// stopReader is set by closeWith; only the reader goroutine touches it.
	stopReader bool

	// addr is the peer's IP address, counted by the per-IP connection
	// limit (connectionLimiter.admit); set before serve starts, read-only
	// after.
	addr netip.Addr
	// listener is the listener the connection came in on (nil only for
	// connections tests make by hand); protocol is its security protocol.
	// Both set before serve starts, read-only after.
	listener *listener
	// api is what package api's handlers see of this connection
	// (apiRequest); built by the reader goroutine on first use.
	api      api.Request
	protocol SecurityProtocol
	// identity is who the connection authenticated as (set by
	// setPrincipal).
	identity connIdentity
	// sasl is the connection's SASL state on a SASL listener (driven by
	// saslStep); only the reader goroutine touches it.
	sasl saslSession
	// queued is the request bytes this connection holds, read but not
	// yet released (guarded by connectionLimiter.bytesMu; only counted
	// when a request-byte limit is set).
	queued int64
}

// response is one slot in a connection's ordered response queue. A handler
// fills it exactly once, by calling one of the complete methods, from any
// goroutine; the writer waits for done before sending.
type response struct {
	done chan struct{}
	// frame is the complete response frame (size, header, body), or nil.
	frame *bytebufferpool.ByteBuffer
	// fetch is a zero-copy Fetch response, or nil.
	fetch *fetchResponse
	// closeConnection asks the writer to close the connection once the
	// earlier responses are out (the protocol has no error for the case).
	closeConnection bool
	// timing is the request's time split; zero when metrics are off.
	timing requestTiming
	// reserved is the request bytes held for this request under the
	// request-byte limits (connectionLimiter.acquire), returned once by
	// whichever comes first: the request's release or the writer finishing
	// the slot.
	reserved atomic.Int64
}

// requestTiming records when a request passed each stage, for the request
// metrics (observe splits it into the stages of [metrics.API]). api is nil
// when metrics are off; then nothing else is set. read and start are
// written by the reader before the handler runs; encode and durability by
// whichever goroutine completes the slot, before it closes done, which the
// writer waits for before reading them.
//
// The instants are monotonic nanoseconds (monotonicNow), not time.Time,
// to keep the slot small: it is allocated for every request, metrics on
// or off.
type requestTiming struct {
	api                 *metrics.API
	read, start, encode int64
	durability          time.Duration
}

// processStart is the origin of monotonicNow.
var processStart = time.Now()

// monotonicNow is the monotonic clock in nanoseconds since processStart.
func monotonicNow() int64 { return int64(time.Since(processStart)) }

// markEncode records the start of the response's encoding (the end of
// the handler's local time), once.
func (r *response) markEncode() {
	if r.timing.api != nil && r.timing.encode == 0 {
		r.timing.encode = monotonicNow()
	}
}

// observe records a sent response's time split (metrics on).
func (t *requestTiming) observe() {
	written := monotonicNow()
	if t.encode == 0 {
		t.encode = written
	}
	seconds := func(nanoseconds int64) float64 { return float64(nanoseconds) / 1e9 }
	t.api.Queue.Observe(seconds(t.start - t.read))
	t.api.Local.Observe(seconds(t.encode - t.start - int64(t.durability)))
	t.api.Durability.Observe(t.durability.Seconds())
	t.api.Send.Observe(seconds(written - t.encode))
	t.api.Total.Observe(seconds(written - t.read))
}

// request is one decoded request frame handed to a handler.
type request struct {
	header wire.RequestHeader
	// body aliases buffer until release is called.
	body   []byte
	buffer *bytebufferpool.ByteBuffer
	slot   *response
	// owner is the connection whose request-byte reservation
	// (slot.reserved) release returns; nil when no limit is set.
	owner *connection
}

// poisonReleasedFrames, set only by tests, makes release overwrite the
// frame before it goes back to the pool (as invariants builds always do),
// so a response still aliasing the request's bytes shows up as garbage
// instead of passing by luck.
var poisonReleasedFrames atomic.Bool

// poisonByte is what a released frame is overwritten with.
const poisonByte = 0xa5

// release returns the frame buffer to the pool; body is invalid afterwards.
func (r *request) release() {
	if r.buffer != nil {
		if invariants.Enabled || poisonReleasedFrames.Load() {
			for i := range r.buffer.B {
				r.buffer.B[i] = poisonByte
			}
		}
		bytebufferpool.Put(r.buffer)
		r.buffer, r.body = nil, nil
	}
	if r.owner != nil {
		r.owner.releaseReserved(r.slot)
	}
}

// releaseReserved returns the request bytes slot still holds, once.
func (c *connection) releaseReserved(slot *response) {
	if n := slot.reserved.Swap(0); n > 0 {
		c.broker.limits.release(c, n)
	}
}

// handlerFunc serves one request. It runs in the connection's reader
// goroutine and must complete req.slot, either before returning or from a
// goroutine it starts; it must release req once it no longer reads the body.
type handlerFunc func(c *connection, req *request)

// apiHandler is a registered API: its version range and its handler.
type apiHandler struct {
	minVersion, maxVersion int16
	handle                 handlerFunc
}

// handlers is indexed by API key; filled by register from init functions.
var handlers = map[int16]apiHandler{}

// register adds an API's handler and its version range; each handler file
// calls it from init, and ApiVersions reports the registered ranges.
func register(key, minVersion, maxVersion int16, handle handlerFunc) {
	if _, dup := handlers[key]; dup {
		panic("broker: API registered twice: " + wire.APIName(key))
	}
	handlers[key] = apiHandler{minVersion: minVersion, maxVersion: maxVersion, handle: handle}
	versions.Add(key, minVersion, maxVersion)
}

// socketSendBufferBytes is the send buffer asked for each client socket
// (Kafka's socket.send.buffer.bytes): a large one lets one sendfile(2) call
// move a whole fetch response's file region instead of waking up per
// default-sized buffer.
const socketSendBufferBytes = 4 << 20

func newConnection(b *Broker, netConn net.Conn) *connection {
	c := &connection{
		broker:  b,
		netConn: netConn,
		logger:  b.logger.With("remote", netConn.RemoteAddr().String()),
		queue:   make(chan *response, maxInFlight),
	}
	tcp, plain := netConn.(*net.TCPConn)
	if tlsConn, ok := netConn.(*tls.Conn); ok {
		tcp, _ = tlsConn.NetConn().(*net.TCPConn)
	}
	if tcp != nil {
		tcp.SetWriteBuffer(socketSendBufferBytes)
		if raw, err := tcp.SyscallConn(); err == nil {
			c.socket = raw
			if plain {
				c.rawConn = raw
			}
		}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// stopReading makes the reader stop after the request it is serving (the
// broker is closing); queued responses still go out.
func (c *connection) stopReading() {
	c.stopOnce.Do(func() {
		conn := c.netConn
		if tlsConn, ok := conn.(*tls.Conn); ok {
			// Half-closing the socket under TLS ends the reader's read
			// (or handshake) while the writer still sends its answers.
			conn = tlsConn.NetConn()
		}
		if tcp, ok := conn.(*net.TCPConn); ok {
			tcp.CloseRead()
			return
		}
		c.netConn.Close()
	})
}

// serve is the reader goroutine.
func (c *connection) serve() {
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	defer func() {
		if c.broker.ctx.Err() == nil {
			// The client went away (or sent something we refuse): nobody
			// will read the answers, so pending long polls and durability
			// waits end now. On broker shutdown they finish normally.
			c.cancel()
		}
		close(c.queue)
		<-writerDone
		c.cancel()
		c.netConn.Close()
		c.broker.forgetConnection(c)
	}()
	if tlsConn, ok := c.netConn.(*tls.Conn); ok && !c.handshake(tlsConn) {
		return
	}
	reader := wire.FrameReader{R: bufio.NewReaderSize(c.netConn, 64<<10), MaxSize: c.broker.maxFrameSize}
	limited := c.broker.limits.byteLimits()
	for c.ctx.Err() == nil {
		reader.MaxSize = c.saslFrameLimit()
		size, err := reader.ReadSize()
		if err != nil {
			c.logReadError(err)
			return
		}
		var reserved int64
		if limited && size > 0 {
			// Backpressure: wait for room under the request-byte limits
			// before reading the body, so the bytes stay in the socket.
			if err := c.broker.limits.acquire(c, int64(size)); err != nil {
				if errors.Is(err, errRequestTooLarge) {
					c.broker.limits.logOversize(c.logger, err)
				}
				return
			}
			reserved = int64(size)
		}
		buffer := bytebufferpool.Get()
		frame, err := reader.ReadBody(buffer.B[:0], size)
		if err != nil {
			bytebufferpool.Put(buffer)
			if reserved > 0 {
				c.broker.limits.release(c, reserved)
			}
			c.logReadError(err)
			return
		}
		buffer.B = frame
		var readAt int64
		if c.broker.metrics != nil {
			readAt = monotonicNow()
		}
		if !c.dispatch(buffer, readAt, reserved) {
			return
		}
	}
}

func (c *connection) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.logger.Debug("connection closed by client")
	case errors.Is(err, wire.ErrFrameTooLarge) && c.protocol.SASL() && c.sasl.phase != saslAuthenticated:
		c.logger.Warn("closing connection: frame larger than sasl.server.max.receive.size before SASL authentication", "error", err)
	case errors.Is(err, wire.ErrFrameTooLarge), errors.Is(err, wire.ErrFrameNegative):
		c.logger.Warn("closing connection: bad frame size", "error", err)
	default:
		c.logger.Info("closing connection: read failed", "error", err)
	}
}

// dispatch parses one frame's header and runs its handler; reserved is
// the request bytes held for it under the request-byte limits. It
// reports whether the reader should go on.
func (c *connection) dispatch(buffer *bytebufferpool.ByteBuffer, readAt, reserved int64) bool {
	if c.sasl.rawTokens {
		return c.serveRawSASLToken(buffer, reserved) // after SaslHandshake v0: a bare token
	}
	header, body, err := wire.ParseRequestHeader(buffer.B)
	if err != nil {
		bytebufferpool.Put(buffer)
		if reserved > 0 {
			c.broker.limits.release(c, reserved)
		}
		c.logger.Warn("closing connection: malformed request header", "error", err)
		return false
	}
	req := &request{header: header, body: body, buffer: buffer, slot: &response{done: make(chan struct{})}}
	if reserved > 0 {
		req.slot.reserved.Store(reserved)
		req.owner = c
	}
	if c.protocol.SASL() && !c.saslAllows(header.APIKey) {
		req.release()
		return false
	}
	handler, known := handlers[header.APIKey]
	if header.APIKey == wire.APIVersions {
		// ApiVersions answers even versions it does not know (with v0 and
		// UNSUPPORTED_VERSION), so clients can discover ours.
		known = true
	} else if !known || header.APIVersion < handler.minVersion || header.APIVersion > handler.maxVersion {
		req.release()
		c.logger.Warn("closing connection: unsupported request (Kafka has no error response for it)",
			"api", wire.APIName(header.APIKey), "version", header.APIVersion, "supported", known)
		return false
	}
	if c.broker.metrics != nil {
		api := c.broker.apiMetrics(header.APIKey)
		api.Requests.Inc()
		req.slot.timing = requestTiming{api: api, read: readAt}
	}
	select {
	case c.queue <- req.slot:
	case <-c.ctx.Done():
		req.release()
		return false
	}
	if req.slot.timing.api != nil {
		req.slot.timing.start = monotonicNow()
	}
	return c.runHandler(handler.handle, req)
}

// runHandler runs a handler, turning a panic into a closed connection: a
// last line of defence, logged with its stack.
func (c *connection) runHandler(handle handlerFunc, req *request) (ok bool) {
	defer func() {
		if recovered := recover(); recovered != nil {
			if invariants.IsViolation(recovered) {
				panic(recovered) // a broken invariant is a bug: fail loudly
			}
			c.logger.Error("handler panicked; closing connection", "api", wire.APIName(req.header.APIKey),
				"version", req.header.APIVersion, "panic", recovered, "stack", string(debug.Stack()))
			req.release()
			req.slot.completeClose()
			c.stopReader = true
			ok = false
		}
	}()
	handle(c, req)
	return !c.stopReader
}

// goAsync runs fn on its own goroutine with the same panic protection.
func (c *connection) goAsync(req *request, fn func()) {
	go func() {
		defer func() {
			if recovered := recover(); recovered != nil {
				if invariants.IsViolation(recovered) {
					panic(recovered) // a broken invariant is a bug: fail loudly
				}
				c.logger.Error("handler panicked; closing connection", "api", wire.APIName(req.header.APIKey),
					"panic", recovered, "stack", string(debug.Stack()))
				req.slot.completeClose()
				c.cancel()
			}
		}()
		fn()
	}()
}

// completeFrame fills the slot with a finished response frame.
func (r *response) completeFrame(frame *bytebufferpool.ByteBuffer) {
	r.frame = frame
	close(r.done)
}

// completeFetch fills the slot with a zero-copy fetch response.
func (r *response) completeFetch(fetch *fetchResponse) {
	r.fetch = fetch
	close(r.done)
}

// completeNone fills the slot with nothing to send (acks=0 produce).
func (r *response) completeNone() {
	r.markEncode()
	close(r.done)
}

// completeClose asks for the connection to be closed at this point.
func (r *response) completeClose() {
	select {
	case <-r.done:
		return // already completed; the panic came after
	default:
	}
	r.closeConnection = true
	close(r.done)
}

// release frees what a completed response holds.
func (r *response) release() {
	if r.frame != nil {
		bytebufferpool.Put(r.frame)
		r.frame = nil
	}
	if r.fetch != nil {
		r.fetch.release()
		r.fetch = nil
	}
}

// writeLoop is the writer goroutine: it sends responses in request order.
// After a write error it keeps draining the queue (waiting for each slot
// so handlers' resources are released) without sending.
func (c *connection) writeLoop() {
	failed := false
	for slot := range c.queue {
		<-slot.done
		if !failed && slot.closeConnection {
			failed = true
			c.cancel()
			c.netConn.Close()
		}
		if !failed {
			if err := c.write(slot); err != nil {
				failed = true
				c.logger.Info("closing connection: write failed", "error", err)
				c.cancel()
				c.netConn.Close()
			}
		}
		if slot.timing.api != nil {
			slot.timing.observe()
		}
		slot.release()
		c.releaseReserved(slot) // a handler that kept its request's bytes is done now
	}
}

func (c *connection) write(slot *response) error {
	switch {
	case slot.frame != nil:
		_, err := c.netConn.Write(slot.frame.B)
		return err
	case slot.fetch != nil:
		return slot.fetch.writeTo(c)
	}
	return nil // acks=0: nothing to send
}

// respond encodes a kmsg response (or any body appender) into a frame and
// completes the slot.
func (c *connection) respond(req *request, appendBody func([]byte) []byte) {
	req.slot.markEncode()
	frame := bytebufferpool.Get()
	b, sizeAt := wire.AppendFrameSize(frame.B[:0])
	b = wire.AppendResponseHeader(b, req.header.CorrelationID,
		wire.ResponseHeaderVersion(req.header.APIKey, req.header.APIVersion))
	b = appendBody(b)
	wire.PatchFrameSize(b, sizeAt)
	frame.B = b
	req.slot.completeFrame(frame)
}

// closeWith logs why the connection is closed and completes the slot so.
func (c *connection) closeWith(req *request, err error) {
	c.logger.Warn("closing connection: bad request", "api", wire.APIName(req.header.APIKey),
		"version", req.header.APIVersion, "error", err)
	req.release()
	req.slot.completeClose()
	c.stopReader = true
}

// kmsgHandler adapts a handler that needs neither a request context nor
// its own goroutine; it is kmsgAdapter with serve run in the reader
// goroutine.
func kmsgHandler[R kmsg.Request](serve func(c *connection, req R) kmsg.Response) handlerFunc {
	return kmsgAdapter(inReader, func(_ context.Context, c *connection, req R) kmsg.Response {
		return serve(c, req)
	})
}

// kmsgServe serves one decoded request. ctx carries the client's id and
// host (group.WithClientInfo) and ends when the connection dies or the
// broker closes.
type kmsgServe[R kmsg.Request] func(ctx context.Context, c *connection, req R) kmsg.Response

// handling says where a handler served by kmsgAdapter runs.
type handling bool

const (
	// inReader runs the handler in the connection's reader goroutine.
	inReader handling = false
	// parks runs the handler on its own goroutine: it blocks until
	// something else happens (a rebalance step, a transaction's markers).
	parks handling = true
)

// kmsgAdapter is the one adapter between the connection and a handler
// written over kmsg's request and response types; every kmsg handler goes
// through it (package api's handlers, each registered from [api.Handlers],
// and kmsgHandler's). The order is fixed: decode the body (a body that
// does not decode closes the connection), serve, encode the response at the request's version, and
// only then release the frame. The order matters because kmsg's ReadFrom
// copies strings but leaves []byte fields (protocol metadata, assignments,
// records) aliasing the frame, and a response may carry them back.
func kmsgAdapter[R kmsg.Request](where handling, serve kmsgServe[R]) handlerFunc {
	return func(c *connection, r *request) {
		req, ok := decodeKmsgRequest[R](c, r)
		if !ok {
			return
		}
		info := group.ClientInfo{ClientID: string(r.header.ClientID), Host: clientHost(c.netConn.RemoteAddr())}
		run := func() {
			ctx, cancel := context.WithCancel(group.WithClientInfo(c.ctx, info))
			defer cancel()
			stop := context.AfterFunc(c.broker.ctx, cancel)
			defer stop()
			resp := serve(ctx, c, req)
			resp.SetVersion(r.header.APIVersion)
			if api := r.slot.timing.api; api != nil {
				countResponseErrors(api, resp)
			}
			c.respond(r, resp.AppendTo)
			r.release() // only now: see the comment above
		}
		if where == parks {
			c.goAsync(r, run)
			return
		}
		run()
	}
}

// decodeKmsgRequest decodes r's body as an R; on failure it closes the
// connection (completing the slot) and reports false.
func decodeKmsgRequest[R kmsg.Request](c *connection, r *request) (R, bool) {
	var zero R
	typed, ok := kmsg.RequestForKey(r.header.APIKey).(R)
	if !ok {
		c.closeWith(r, fmt.Errorf("no kmsg request type for API key %d", r.header.APIKey))
		return zero, false
	}
	typed.SetVersion(r.header.APIVersion)
	if err := typed.ReadFrom(r.body); err != nil {
		c.closeWith(r, fmt.Errorf("decode %s v%d: %w", wire.APIName(r.header.APIKey), r.header.APIVersion, err))
		return zero, false
	}
	return typed, true
}

// clientHost formats a peer address as Kafka reports client hosts
// ("/127.0.0.1").
func clientHost(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return "/" + tcp.IP.String()
	}
	return "/" + addr.String()
}
