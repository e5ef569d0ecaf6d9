package broker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// TestParseConnectionOverrides: Kafka's host:count list, with its edge
// cases, and the malformed inputs refused with an error.
func TestParseConnectionOverrides(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []connectionOverride
		bad  bool
	}{
		{in: "", want: nil},
		{in: " , ,", want: nil},
		{in: "127.0.0.1:200", want: []connectionOverride{{"127.0.0.1", 200}}},
		{in: "127.0.0.1:200, broker-2.example:0 ,10.0.0.1:7", want: []connectionOverride{
			{"127.0.0.1", 200}, {"broker-2.example", 0}, {"10.0.0.1", 7}}},
		{in: "[::1]:5", want: []connectionOverride{{"::1", 5}}},
		{in: "::1:5", want: []connectionOverride{{"::1", 5}}},
		{in: "127.0.0.1", bad: true},
		{in: "127.0.0.1:", bad: true},
		{in: ":5", bad: true},
		{in: "127.0.0.1:-1", bad: true},
		{in: "127.0.0.1:x", bad: true},
		{in: "127.0.0.1:99999999999", bad: true},
		{in: "127.0.0.1:1,127.0.0.1:2", bad: true},
		{in: "a b:1", bad: true},
	}
	for _, tc := range cases {
		got, err := parseConnectionOverrides(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: parsed as %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if _, err := newBrokerConfig(map[string]string{"max.connections.per.ip.overrides": "127.0.0.1"}); err == nil {
		t.Error("a malformed override list was accepted as a broker setting")
	}
	for _, key := range []string{"queued.max.request.bytes", "max.inflight.request.bytes.per.connection"} {
		if _, err := newBrokerConfig(map[string]string{key: "0"}); err == nil {
			t.Errorf("%s=0 accepted (want -1 or positive)", key)
		}
	}
}

// TestLogLimiter: one event per logEvery gets through, and the next one
// that does reports how many did not.
func TestLogLimiter(t *testing.T) {
	t.Parallel()
	var l logLimiter
	start := time.Unix(1000, 0)
	if ok, n := l.allow(start); !ok || n != 0 {
		t.Fatalf("first event: %v %d", ok, n)
	}
	for i := range 5 {
		if ok, _ := l.allow(start.Add(time.Duration(i) * time.Millisecond)); ok {
			t.Fatalf("event %d within logEvery was let through", i)
		}
	}
	if ok, n := l.allow(start.Add(logEvery)); !ok || n != 5 {
		t.Fatalf("after logEvery: %v, %d not logged; want true, 5", ok, n)
	}
}

// dialFrom connects to the broker from the loopback address local (any
// 127.x.y.z works on Linux), closed when the test ends.
func dialFrom(t *testing.T, b *Broker, local string) *rawConnection {
	t.Helper()
	conn, err := dialLocal(local, b.Addr())
	if err != nil {
		t.Fatalf("dial from %s: %v", local, err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConnection{t: t, conn: conn}
}

func dialLocal(local, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

// probe sends ApiVersions on conn and reports nil if the broker answered,
// errRefused if it closed the connection instead.
func probe(conn net.Conn) error {
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	header := wire.RequestHeader{APIKey: req.Key(), APIVersion: 0, CorrelationID: 7, ClientID: []byte("probe"),
		HeaderVersion: wire.RequestHeaderVersion(req.Key(), 0)}
	frame, at := wire.AppendFrameSize(nil)
	frame = wire.AppendRequestHeader(frame, header)
	frame = req.AppendTo(frame)
	wire.PatchFrameSize(frame, at)
	if _, err := conn.Write(frame); err != nil {
		return fmt.Errorf("%w: write: %v", errRefused, err)
	}
	reader := wire.FrameReader{R: conn}
	if _, err := reader.Next(nil); err != nil {
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			return fmt.Errorf("no answer and not closed: %w", err)
		}
		if errors.Is(err, io.EOF) || isReset(err) {
			return fmt.Errorf("%w: %v", errRefused, err)
		}
		return err
	}
	return nil
}

var errRefused = errors.New("connection closed by the broker")

// expectServed checks the broker answers on r.
func (r *rawConnection) expectServed() {
	r.t.Helper()
	if err := probe(r.conn); err != nil {
		r.t.Fatalf("connection from %s: %v", r.conn.LocalAddr(), err)
	}
}

// expectRefused checks the broker closed r at once.
func (r *rawConnection) expectRefused() {
	r.t.Helper()
	if err := probe(r.conn); !errors.Is(err, errRefused) {
		r.t.Fatalf("connection from %s: %v, want it closed by the broker", r.conn.LocalAddr(), err)
	}
}

// TestMaxConnectionsPerIP: beyond max.connections.per.ip an address's
// new connections are closed, other addresses are still served, and a
// closed connection frees its place.
func TestMaxConnectionsPerIP(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"max.connections.per.ip": "3"})
	var held []*rawConnection
	for range 3 {
		r := dialFrom(t, b, "127.0.0.1")
		r.expectServed()
		held = append(held, r)
	}
	dialFrom(t, b, "127.0.0.1").expectRefused()
	dialFrom(t, b, "127.0.0.2").expectServed()

	held[0].conn.Close()
	// The broker forgets the closed connection on its reader goroutine:
	// retry until it has, within a bound.
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := dialLocal("127.0.0.1", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		err = probe(conn)
		conn.Close()
		if err == nil {
			break
		}
		if !errors.Is(err, errRefused) || time.Now().After(deadline) {
			t.Fatalf("after closing one of 3 connections, a new one: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMaxConnectionsPerIPOverrides: an override raises or lowers one
// address's limit (0 refuses it), the others keep the default.
func TestMaxConnectionsPerIPOverrides(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"max.connections.per.ip":           "2",
		"max.connections.per.ip.overrides": "127.0.0.2:4, [127.0.0.3]:0",
	})
	for range 4 {
		dialFrom(t, b, "127.0.0.2").expectServed()
	}
	dialFrom(t, b, "127.0.0.2").expectRefused()
	dialFrom(t, b, "127.0.0.3").expectRefused()
	for range 2 {
		dialFrom(t, b, "127.0.0.1").expectServed()
	}
	dialFrom(t, b, "127.0.0.1").expectRefused()
}

// TestMaxConnectionsTotal: max.connections counts every address.
func TestMaxConnectionsTotal(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{"max.connections": "3"})
	dialFrom(t, b, "127.0.0.1").expectServed()
	dialFrom(t, b, "127.0.0.2").expectServed()
	dialFrom(t, b, "127.0.0.3").expectServed()
	dialFrom(t, b, "127.0.0.4").expectRefused()
	dialFrom(t, b, "127.0.0.1").expectRefused()
}

// joinGroupV2 is a JoinGroup v2 for an empty group: the broker answers it
// only after group.initial.rebalance.delay.ms, holding its bytes that long.
func joinGroupV2(group string) kmsg.Request {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = group
	req.SessionTimeoutMillis = 10000
	req.RebalanceTimeoutMillis = 10000
	req.ProtocolType = "consumer"
	protocol := kmsg.NewJoinGroupRequestProtocol()
	protocol.Name = "range"
	protocol.Metadata = make([]byte, 64)
	req.Protocols = append(req.Protocols, protocol)
	return req
}

// requestSize is the frame body size of req at version, as sent by
// rawConnection.request.
func requestSize(req kmsg.Request, version int16) int64 {
	req.SetVersion(version)
	header := wire.RequestHeader{APIKey: req.Key(), APIVersion: version, CorrelationID: 7,
		ClientID: []byte("raw"), HeaderVersion: wire.RequestHeaderVersion(req.Key(), version)}
	return int64(len(req.AppendTo(wire.AppendRequestHeader(nil, header))))
}

// waitQueued waits (bounded) until the broker holds want request bytes.
func waitQueued(t *testing.T, b *Broker, want int64) {
	t.Helper()
	for range 500 {
		b.limits.bytesMu.Lock()
		queued := b.limits.queued
		b.limits.bytesMu.Unlock()
		if queued == want {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("the broker never held %d request bytes", want)
}

// rebalanceDelay is the initial rebalance delay of the backpressure
// tests: how long a parked JoinGroup holds its request's bytes.
const rebalanceDelay = time.Second

// TestQueuedMaxRequestBytesBackpressure: while one connection's parked
// JoinGroup holds all of queued.max.request.bytes, another connection's
// request is not read (it waits, is not refused) until the JoinGroup is
// answered and releases its bytes.
func TestQueuedMaxRequestBytesBackpressure(t *testing.T) {
	t.Parallel()
	join := requestSize(joinGroupV2("g"), 2)
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"queued.max.request.bytes":         fmt.Sprint(join + 8), // room for the JoinGroup, not for both
		"group.initial.rebalance.delay.ms": fmt.Sprint(rebalanceDelay.Milliseconds()),
	})
	readyCoordinator(t, b, coordinatorGroup, "g")
	first, second := dialFrom(t, b, "127.0.0.1"), dialFrom(t, b, "127.0.0.2")
	start := time.Now()
	first.request(joinGroupV2("g"), 2)
	waitQueued(t, b, join)
	second.request(kmsg.NewPtrMetadataRequest(), 12)
	second.response(kmsg.NewPtrMetadataResponse(), 12)
	waited := time.Since(start)
	joined := kmsg.NewPtrJoinGroupResponse()
	first.response(joined, 2)
	if joined.ErrorCode != 0 {
		t.Fatalf("JoinGroup error %d", joined.ErrorCode)
	}
	if waited < rebalanceDelay*3/4 {
		t.Fatalf("Metadata on another connection answered after %v, before the JoinGroup holding all the bytes (parked %v)", waited, rebalanceDelay)
	}
	t.Logf("Metadata answered after %v, behind a JoinGroup parked for %v", waited, rebalanceDelay)
}

// TestPerConnectionRequestBytesBackpressure: with
// max.inflight.request.bytes.per.connection fitting one JoinGroup, a
// connection's second JoinGroup is read only once the first is answered,
// so the two rebalance delays add up instead of overlapping; another
// connection is not held back.
func TestPerConnectionRequestBytesBackpressure(t *testing.T) {
	join := requestSize(joinGroupV2("g1"), 2)
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"max.inflight.request.bytes.per.connection": fmt.Sprint(join + 8),
		"group.initial.rebalance.delay.ms":          fmt.Sprint(rebalanceDelay.Milliseconds()),
	})
	readyCoordinator(t, b, coordinatorGroup, "g1")
	readyCoordinator(t, b, coordinatorGroup, "g2")
	r := dialFrom(t, b, "127.0.0.1")
	start := time.Now()
	r.request(joinGroupV2("g1"), 2)
	r.request(joinGroupV2("g2"), 2)
	other := dialFrom(t, b, "127.0.0.2")
	other.request(kmsg.NewPtrMetadataRequest(), 12)
	other.response(kmsg.NewPtrMetadataResponse(), 12)
	if elapsed := time.Since(start); elapsed > rebalanceDelay/2 {
		t.Errorf("another connection waited %v behind this one's limit", elapsed)
	}
	for range 2 {
		joined := kmsg.NewPtrJoinGroupResponse()
		r.response(joined, 2)
		if joined.ErrorCode != 0 {
			t.Fatalf("JoinGroup error %d", joined.ErrorCode)
		}
	}
	if elapsed := time.Since(start); elapsed < rebalanceDelay*3/2 {
		t.Fatalf("both JoinGroups answered after %v: the second was read while the first held the connection's bytes", elapsed)
	}
}

// TestRequestLargerThanLimitCloses: a request that could never fit the
// per-connection (or total) limit closes its connection; the broker
// serves the next one.
func TestRequestLargerThanLimitCloses(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"max.inflight.request.bytes.per.connection", "queued.max.request.bytes"} {
		t.Run(key, func(t *testing.T) {
			b := startTestBroker(t, t.TempDir(), map[string]string{key: "100"})
			r := dialFrom(t, b, "127.0.0.1")
			r.expectServed() // ApiVersions v0 is well under 100 bytes
			body := make([]byte, 200)
			r.write(append(frameOf(body), body...))
			r.expectClosed()
			dialFrom(t, b, "127.0.0.1").expectServed()
		})
	}
}

// TestRequestBytesLimitsUnderLoad: with both byte limits set (a few
// produce requests' worth), a burst of 2 MB of produce from four
// connections all gets through, nothing refused or lost, and once the
// clients are done the broker holds no request bytes: every
// reservation was returned (a leaked one would shrink the limit until
// readers stall).
func TestRequestBytesLimitsUnderLoad(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"queued.max.request.bytes":                  "262144",
		"max.inflight.request.bytes.per.connection": "131072",
	})
	const producers, records = 4, 500
	ctx := testContext(t, time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, producers*records)
	for i := range producers {
		client := newTestClient(t, b, kgo.DefaultProduceTopic("burst"), kgo.AllowAutoTopicCreation(),
			kgo.ProducerBatchMaxBytes(64<<10), kgo.RequiredAcks(kgo.AllISRAcks()))
		wg.Go(func() {
			value := make([]byte, 1000)
			for j := range records {
				client.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i, "-", j)), Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						errs <- err
					}
				})
			}
			if err := client.Flush(ctx); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("produce: %v", err)
	}
	consumeAll(t, b, "burst", 1, producers*records)
	waitQueued(t, b, 0)
}
